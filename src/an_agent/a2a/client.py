"""`A2AAgentClient`: our client of an A2A v1 agent (the counterpart of `an_agent.nc.agent_client`).

Built on the a2a-sdk client (taken from `an_agent.a2a.sdk`), synchronous for the CLI and the lab: the
SDK's asyncio client runs on an event loop in a thread of its own, and every call waits for it.

- `connect` resolves the agent card (``/.well-known/agent-card.json``, public) and keeps the raw card,
  whose root ``schemas`` (the input/output-schemas extension) the SDK's protobuf card has no field for;
- `negotiate` chooses the schema for a scenario from the card: the agent's versions of it
  (``<scenario>_v<N>``) against the versions this client supports, the highest common one, or a
  `SchemaError` listing both sides; the choice is cached until the card is fetched again;
- `validate` checks a payload against the negotiated JSON Schema 2020-12 before anything is sent
  (`SchemaError`, one problem per offending key);
- `send` sends a structured message (data part ``application/json;schema=<schema_id>``), a text
  message, or both, and streams the task (`stream`) or waits for it (`send_and_wait`); `resubscribe`
  follows a task again (the agent replays its status changes from its log), `get_task`,
  `list_tasks`, `cancel` do what they say; `provide_input` sends a follow-up message to a task (the
  input a task in ``input-required`` asks for; an agent of ours takes it as the NETCONF edit answering
  the task, other agents may refuse follow-ups), and a task's ``input_required`` says what it waits for;
- a finished task's ``schema_update_suggestion`` (`schema_update_suggestions`) means the agent's
  templates changed: the card is fetched again before the next negotiation.

HTTPS: an ``https://`` URL is verified (certificate chain and host name), against ``trust`` (a PEM file:
the agent's own certificate, e.g. its generated ``a2a-cert.pem``, or a CA) when given, else the system's
CAs; there is no switch to skip verification. Proxies: those of the environment, as httpx reads them
(``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``; `an_agent.a2a.discovery.proxy_mounts`),
the same routes as `an_agent.a2a.discovery.fetch_card`; this host's own names (127.0.0.0/8, ::1, localhost:
`an_agent.a2a.discovery.is_this_host`) are always direct.
Credentials: a user and password (HTTP Basic), or
``token`` (a bearer token of the agent's users file).

The choice of schema and the client-side check are `an_agent.a2a.negotiation`; the event loop the
SDK's client runs on, and the translation of its errors, `an_agent.a2a.loop_thread`; the message
envelope and its data parts, `an_agent.a2a.outgoing`.

Tasks and status changes come back as our model (`Task`, `ConditionNotification`), the draft status
read through `an_agent.a2a.states`. Errors are ours (`an_agent.a2a.sdk.from_a2a_error`): `RpcError`
(the agent's refusal, with the RFC 6241 fields an agent of ours sends), `ConnectError`, `AuthError`,
`RequestTimeout`, and `SchemaError` for a payload refused client side.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import AsyncIterator, Awaitable, Collection, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import httpx

from an_agent import tracing
from an_agent._sockets import KEEPALIVE_OPTIONS
from an_agent.a2a.convert import status_from_json, task_from_json
from an_agent.a2a.discovery import CARD_PATH, proxy_mounts, verification
from an_agent.a2a.loop_thread import LoopThread
from an_agent.a2a.negotiation import (
    NegotiatedSchema,
    choose_schema,
    scenario_version,
    validate_payload,
    wanted_versions,
)
from an_agent.a2a.outgoing import data_part, message_request
from an_agent.a2a.sdk import (
    CancelTaskRequest,
    ClientConfig,
    ClientFactory,
    GetTaskRequest,
    ListTasksRequest,
    SdkClient,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    parse_card,
    protobuf_to_json,
)
from an_agent.a2a.states import SENDER_KEY, TASK_ID_KEY
from an_agent.errors import (
    AnAgentError,
    ConnectError,
    RpcError,
    SchemaError,
)
from an_agent.model import ConditionNotification, Task
from an_agent.schemas.suggestion import schema_update_suggestions
from an_agent.schemas.validate import media_type
from an_agent.tracing import TRACEPARENT_KEY

__all__ = ["A2AAgentClient", "NegotiatedSchema", "TaskEvent", "scenario_version"]

T = TypeVar("T")
TaskEvent = Task | ConditionNotification
"""What a stream yields: the task as it is when the stream starts, then each status change."""


class A2AAgentClient:
    """One A2A agent, by its base URL (module docstring). Use as a context manager, or call `close`."""

    def __init__(
        self,
        url: str,
        username: str | None = None,
        password: str | None = None,
        *,
        timeout: float = 30.0,
        binding: str = "JSONRPC",
        trust: Path | None = None,
        token: str | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._auth = (username, password or "") if username else None
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._verify = verification(trust)
        self._binding = binding
        self._loop = LoopThread(self.url, timeout)
        self._http: httpx.AsyncClient | None = None
        self._sdk: SdkClient | None = None
        self.card: dict[str, Any] = {}
        self._negotiated: dict[tuple[str, tuple[int, ...]], NegotiatedSchema] = {}
        self._stale = False  # a result suggested a schema update: fetch the card before negotiating
        self._lock = threading.Lock()

    @classmethod
    def connect(
        cls,
        url: str,
        username: str | None = None,
        password: str | None = None,
        *,
        timeout: float = 30.0,
        binding: str = "JSONRPC",
        trust: Path | None = None,
        token: str | None = None,
    ) -> A2AAgentClient:
        """A client with the agent's card resolved (`ConnectError` when there is no A2A agent at ``url``)."""
        client = cls(url, username, password, timeout=timeout, binding=binding, trust=trust, token=token)
        try:
            client.refresh_card()
        except BaseException:
            client.close()
            raise
        return client

    # -- plumbing: the SDK's asyncio client on our loop ---------------------------------------------
    def _run(self, work: Awaitable[T], bounded: bool = True) -> T:
        """Run ``work`` on the client's loop and wait for it (`LoopThread.run`)."""
        return self._loop.run(work, bounded)

    def _events(self, stream: AsyncIterator[StreamResponse]) -> Iterator[TaskEvent]:
        """A sync iterator over an SDK stream: our model for each task snapshot and status change."""
        try:
            while True:
                try:
                    response = self._run(_next(stream), bounded=False)  # a task may be quiet for long
                except StopAsyncIteration:
                    return
                kind = response.WhichOneof("payload")
                if kind == "task":
                    yield task_from_json(protobuf_to_json(response.task))
                elif kind == "status_update":
                    event = status_from_json(protobuf_to_json(response.status_update))
                    if event is not None:
                        yield event
                # artifact updates: the result is read with the finished task (get_task)
        finally:
            with contextlib.suppress(AnAgentError):
                self._run(_close(stream))

    async def _open(self) -> None:
        if self._http is None:
            verify = self._verify

            def transport(proxy: str | None = None) -> httpx.AsyncHTTPTransport:
                return httpx.AsyncHTTPTransport(verify=verify, socket_options=KEEPALIVE_OPTIONS, proxy=proxy)

            # No read timeout: a stream waits for a task's next change as long as it takes (keepalive
            # probes end it when the peer vanished: _sockets); every other call is bounded by `_run`.
            # A transport of our own turns off httpx's proxies from the environment: `proxy_mounts` puts
            # them back, each route with the same keepalive and verification.
            direct = transport()
            self._http = httpx.AsyncClient(
                auth=self._auth,
                headers=self._headers,
                timeout=httpx.Timeout(self.timeout, read=None),
                transport=direct,
                mounts=proxy_mounts(direct, transport),
            )

    def refresh_card(self) -> dict[str, Any]:
        """Fetch the card again (and rebuild the SDK client from it); forget negotiated schemas."""

        async def fetch() -> dict[str, Any]:
            await self._open()
            assert self._http is not None
            reply = await self._http.get(self.url + CARD_PATH)
            reply.raise_for_status()
            document = reply.json()
            if not isinstance(document, dict):
                raise ConnectError(f"{self.url}{CARD_PATH} is not an agent card (not a JSON object)")
            config = ClientConfig(httpx_client=self._http, streaming=True, supported_protocol_bindings=[self._binding])
            self._sdk = ClientFactory(config).create(parse_card(document))
            return document

        card = self._run(fetch())
        with self._lock:
            self.card = card
            self._negotiated.clear()
            self._stale = False
        return card

    @property
    def _client(self) -> SdkClient:
        if self._sdk is None:
            self.refresh_card()
        assert self._sdk is not None
        return self._sdk

    def close(self) -> None:
        """Close the HTTP connections and stop the client's event loop."""

        async def shut() -> None:
            if self._http is not None:
                await self._http.aclose()

        self._loop.close(shut)

    def __enter__(self) -> A2AAgentClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- schemas ------------------------------------------------------------------------------------
    @property
    def schemas(self) -> dict[str, dict[str, Any]]:
        """The card's root ``schemas`` (name -> JSON Schema)."""
        found = self.card.get("schemas")
        return dict(found) if isinstance(found, dict) else {}

    def negotiate(self, scenario: str, supported_versions: Collection[str] = ()) -> NegotiatedSchema:
        """The schema to use for ``scenario`` (a scenario name or a schema_id), from the card.

        ``supported_versions`` (2, v2, or schema_ids; empty: any) are matched against the agent's
        versions of the scenario; the highest common one wins. `SchemaError` when the agent has no such
        scenario or no common version, naming what it has.
        """
        if self._stale:
            self.refresh_card()
        name, wanted = wanted_versions(scenario, supported_versions)
        with self._lock:
            cached = self._negotiated.get((name, wanted))
        if cached is not None:
            return cached
        answer = choose_schema(self.schemas, self.card.get("name", self.url), scenario, name, wanted)
        with self._lock:
            self._negotiated[(name, wanted)] = answer
        return answer

    def validate(self, negotiated: NegotiatedSchema, payload: Mapping[str, Any]) -> dict[str, Any]:
        """``payload`` checked against the negotiated JSON Schema; `SchemaError` names each failing key."""
        return validate_payload(negotiated, payload)

    # -- messages and tasks -------------------------------------------------------------------------
    def _request(
        self,
        *,
        scenario: str | None,
        payload: Mapping[str, Any] | None,
        text: str | None,
        supported_versions: Collection[str],
        task_id: str | None,
        wait: bool,
        keys: Mapping[str, Any] | None = None,
        sender: str | None = None,
        new_task_id: str | None = None,
    ) -> SendMessageRequest:
        parts: list[dict[str, Any]] = []
        if text:
            parts.append({"text": text})
        if scenario is not None:
            negotiated = self.negotiate(scenario, supported_versions)
            data = self.validate(negotiated, payload or {})
            parts.append(data_part(data, media_type(negotiated.schema_id)))
        if keys is not None:
            # Some keys of a payload (an answer to input-required): a data part with no schema, checked there.
            parts.append(data_part(dict(keys)))
        if not parts:
            raise SchemaError("a message needs text or a structured payload", ["parts: empty"])
        traceparent = tracing.outgoing()  # the caller's trace (an_agent.tracing), when it works in one
        metadata = {SENDER_KEY: sender, TASK_ID_KEY: new_task_id, TRACEPARENT_KEY: traceparent}
        return message_request(parts, wait=wait, task_id=task_id, metadata=metadata)

    def stream(
        self,
        *,
        scenario: str | None = None,
        payload: Mapping[str, Any] | None = None,
        text: str | None = None,
        supported_versions: Collection[str] = (),
        task_id: str | None = None,
        sender: str | None = None,
        new_task_id: str | None = None,
        keys: Mapping[str, Any] | None = None,
    ) -> Iterator[TaskEvent]:
        """Send a message and stream its task: the task first, then every status change until it ends.

        With ``scenario`` the payload is negotiated and validated here first (nothing is sent when it
        fails); ``text`` alone is a text message (the agent maps it to a payload, or takes it as prompt).
        ``task_id`` addresses an existing task (a follow-up message); ``sender`` names the agent the
        message is sent for (its ``task-sendFrom``; the agent checks that the user may speak for it);
        ``new_task_id`` proposes the new task's id (the agent refuses one in use), else the agent picks;
        ``keys`` (a follow-up) are payload keys a task asks for, sent as a data part without schema.
        """
        request = self._request(
            scenario=scenario,
            payload=payload,
            text=text,
            supported_versions=supported_versions,
            task_id=task_id,
            wait=False,
            sender=sender,
            new_task_id=new_task_id,
            keys=keys,
        )
        return self._events(self._client.send_message(request))

    def send_and_wait(
        self,
        *,
        scenario: str | None = None,
        payload: Mapping[str, Any] | None = None,
        text: str | None = None,
        supported_versions: Collection[str] = (),
        task_id: str | None = None,
    ) -> Task:
        """Send a message and return its task once it ended or waits for input (`stream`'s arguments)."""
        last: Task | None = None
        for event in self.stream(
            scenario=scenario, payload=payload, text=text, supported_versions=supported_versions, task_id=task_id
        ):
            if isinstance(event, Task):
                last = event
        if last is None:
            raise ConnectError("the A2A agent answered the message without a task")
        return self.get_task(last.task_id)

    def provide_input(
        self,
        task_id: str,
        *,
        scenario: str | None = None,
        payload: Mapping[str, Any] | None = None,
        text: str | None = None,
        supported_versions: Collection[str] = (),
        keys: Mapping[str, Any] | None = None,
    ) -> Iterator[TaskEvent]:
        """Answer a task's ``input-required`` with a follow-up message, and stream the task on.

        ``keys``: values of the payload keys the task asks for (a task created from text whose mapping
        missed required keys), sent as a data part without schema; the agent merges them with what it
        has and checks them (an invalid value is refused naming the key). ``scenario`` + ``payload``
        send a whole payload, validated here first.
        """
        return self.stream(
            scenario=scenario,
            payload=payload,
            text=text,
            supported_versions=supported_versions,
            task_id=task_id,
            keys=keys,
        )

    def resubscribe(self, task_id: str) -> Iterator[TaskEvent]:
        """Follow a task again: the task now, then its status changes until it ends (none missed).

        A task that already ended is the task as it ended: an A2A agent refuses to subscribe to it (spec
        3.1.6, UnsupportedOperationError), so it is read with `get_task` instead.
        """
        followed = False
        try:
            for event in self._events(self._client.subscribe(SubscribeToTaskRequest(id=task_id))):
                followed = True
                yield event
        except RpcError:
            if followed:
                raise
            task = self.get_task(task_id)  # data-missing for an unknown task, as the subscription said
            if task.status is None or not task.status.terminal:
                raise
            yield task

    def send_data(self, mime_type: str, data: Mapping[str, Any]) -> Task:
        """Send one data part as it is, its metadata ``mimeType`` set to ``mime_type``, and return the task
        the agent answers with (as it is then; the task is not followed).

        Nothing is checked here (unlike `stream`): for tools that probe how an agent treats a payload,
        valid or not. The agent's refusal is raised (`RpcError`); an answer without a task is a
        `ConnectError`.
        """
        request = message_request([data_part(dict(data), mime_type)], wait=False)
        for event in self._events(self._client.send_message(request)):
            if isinstance(event, Task):
                return event
        raise ConnectError("the A2A agent answered the message without a task")

    def get_task(self, task_id: str) -> Task:
        """The task with its result (`RpcError` data-missing for an unknown id)."""
        task = self._run(self._client.get_task(GetTaskRequest(id=task_id)))
        found = task_from_json(protobuf_to_json(task))
        if schema_update_suggestions(found):
            self._forget()  # the agent's templates changed: negotiate from a fresh card next time
        return found

    def list_tasks(self) -> list[Task]:
        """Every task the agent lets this user see."""
        listed = self._run(self._client.list_tasks(ListTasksRequest(include_artifacts=True)))
        return [task_from_json(protobuf_to_json(t)) for t in listed.tasks]

    def cancel(self, task_id: str) -> Task:
        """Cancel a task; returns it (`RpcError` operation-failed when it already ended)."""
        task = self._run(self._client.cancel_task(CancelTaskRequest(id=task_id)))
        return task_from_json(protobuf_to_json(task))

    def _forget(self) -> None:
        with self._lock:
            self._negotiated.clear()
            self._stale = True


async def _next(stream: AsyncIterator[StreamResponse]) -> StreamResponse:
    return await anext(stream)


async def _close(stream: AsyncIterator[StreamResponse]) -> None:
    closer = getattr(stream, "aclose", None)
    if closer is not None:
        await closer()
