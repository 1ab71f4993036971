"""An agent's NETCONF sessions to the agents it may talk to (and A2A links, `an_agent.agents.a2a_peer`).

`Peers` opens, on first use, two sessions per peer with `AgentClient`: one for requests (serialised by a
lock, reused for the whole run) and one holding the RFC 5277 subscription to the peer's
``condition-notifications``, read by a small dispatcher thread (`an_agent.agents.peer_sessions`: connection,
retry, resubscription with replay). Nothing is polled: the end of a task
comes as a notification, then its result is read once (taskResultQuery).

Every exchange is reported to a ``record`` callback as an `Exchange` (the lab's timeline and its
operation counts come from here), and the end-of-task hand-off is registered with the `Scheduler` so
simulated time cannot move while a result is on its way (see `an_agent.lab.kernel`).

A peer on a link the topology marks ``transport: a2a`` is an `A2APeer`: the same operations, tasks over
the peer's A2A face, negotiations over these NETCONF sessions.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from an_agent import metrics, tracing
from an_agent.agents.a2a_peer import A2APeer
from an_agent.agents.environment import Scheduler
from an_agent.agents.exchange import (
    Exchange,
    InputAnswer,
    Recorder,
    TaskHandle,
    join_threads,
    link_closed,
    next_order,
    param_payload,
)
from an_agent.agents.peer_sessions import PeerSessions
from an_agent.errors import AnAgentError, ConfigError
from an_agent.model import (
    DataParam,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    TaskStatus,
    parse_prompt,
)
from an_agent.nc.agent_client import AgentClient, NegotiatedTemplate
from an_agent.nc.retry import Backoff
from an_agent.schemas.registry import parse_version

__all__ = [
    "A2APeer", "AddressBook", "Exchange", "Peer", "Peers", "Recorder", "TaskHandle", "UrlBook", "next_order",
    "param_payload", "prompt_payload",
]  # fmt: skip

log = logging.getLogger(__name__)

AddressBook = Callable[[str], "tuple[str, int] | None"]
UrlBook = Callable[[str], "str | None"]

REQUEST_RETRY = Backoff(first=1.0, factor=2.0, cap=60.0, limit=1800.0)
"""A request to a peer that cannot be reached: waits on the agent's clock (simulated in a lab), 30 min at most."""
RECONNECT_RETRY = Backoff(first=0.25, factor=2.0, cap=10.0, limit=1800.0)
"""The notification session after it broke: real seconds (the dispatcher is no lab activity), 30 min at
most, as long as a request waits: the ends of tasks in progress at the peer come only through it (5 min
was shorter than a partition of a loaded lab)."""


class Peer(PeerSessions):
    """The sessions of ``me`` to one peer agent and the operations over them (module docstring)."""

    face = "netconf"
    """The face tasks go to the peer over (the trace events' ``face``)."""

    # ---- operations ---------------------------------------------------------------------------------
    def schema(self, scenario: str, supported_versions: Sequence[str]) -> NegotiatedTemplate:
        """``get-schema-template`` for ``scenario``, stating the versions ``me`` supports (draft-zhou 5).

        The template is asked for ``me`` as client (its patches apply) and cached by the session until a
        result's ``schema_update_suggestion`` drops it (`AgentClient.get_task`); each fetch over the wire
        is recorded (``get-schema-template``, ``SchemaNegotiate``), so the timeline shows what was agreed.
        Raises `SchemaError` when there is no common version, `RpcError` for the peer's refusal.
        """
        peers = self._peers
        wanted = ", ".join(f"v{parse_version(v)}" for v in supported_versions) or "any version"

        def fetch(client: AgentClient) -> tuple[bool, NegotiatedTemplate]:
            fresh = not client.schemas.is_cached(scenario, supported_versions, peers.me)
            return fresh, client.schemas.template(scenario, supported_versions, client_id=peers.me)

        order = next_order()
        try:
            fresh, answer = self._request("get-schema-template", fetch)
        except AnAgentError as exc:
            peers.record_exchange(
                self.name, "get-schema-template", "SchemaNegotiate", None, f"{scenario} ({wanted})",
                ok=False, error=str(exc), order=order,
            )  # fmt: skip
            raise
        if fresh:
            experimental = [k.key_name for k in answer.template.keys if k.experimental]
            peers.record_exchange(
                self.name,
                "get-schema-template",
                "SchemaNegotiate",
                None,
                f"{scenario} (supports {wanted}) -> {answer.schema_id}"
                + (f" with experimental key(s) {', '.join(experimental)}" if experimental else ""),
                order=order,
            )
        return answer

    def negotiate(self, request: NegotiationRequest) -> NegotiationResult:
        """``task-negotiate`` (FEASIBILITY or FULFILLMENT)."""
        commu = "FeasibilityNegotiate" if request.type == NegotiationType.FEASIBILITY else "FulfillmentNegotiate"
        payload = prompt_payload(request.content)
        order = next_order()
        try:  # a negotiation changes nothing at the peer: safe to send again
            result = self._request("task-negotiate", lambda client: client.negotiate(request))
        except AnAgentError as exc:
            self._peers.record_exchange(
                self.name,
                "task-negotiate",
                commu,
                request.task_id,
                "",
                payload=payload,
                ok=False,
                error=str(exc),
                order=order,
            )
            raise
        verdict = result.feasible if request.type == NegotiationType.FEASIBILITY else result.fulfilled
        word = (
            ("feasible" if verdict else "not feasible")
            if request.type == NegotiationType.FEASIBILITY
            else ("fulfilled" if verdict else "not fulfilled")
        )
        summary = word + (f": {result.reason}" if result.reason else "")
        if result.counter_proposal:
            summary += " (counter-proposal)"
        self._peers.record_exchange(
            self.name, "task-negotiate", commu, request.task_id, summary, status=word, payload=payload, order=order
        )
        return result

    def assign(self, task: Task, params: Iterable[DataParam] = (), on_input: InputAnswer | None = None) -> TaskHandle:
        """taskAssign; the returned handle waits for the task's end (by notification) and reads its result.

        ``on_input`` answers the task's ``input-required`` (an edit of the task, ``taskInputProvide``);
        without it such a request stays unanswered. After a transport failure the assignment is sent again
        (backoff, `_request`), as `AgentClient.ensure_task` once a request has left: the peer never gets
        the task twice.
        """
        params = list(params)
        if on_input is not None:
            with self._lock:
                self._answers[task.task_id] = on_input
        scheduler = self._peers.scheduler
        key = (self.name, task.task_id)
        ended = scheduler.expect(key)
        payload = next((p for p in (param_payload(p) for p in params) if p is not None), None)
        summary = (parse_prompt(task.content or "").task_description or "").split("\n")[0]
        order = next_order()
        sent = False

        def send(client: AgentClient) -> None:
            nonlocal sent
            if sent:  # an earlier attempt left and its outcome is unknown: create only if it is not there
                client.ensure_task(task, params)
                return
            sent = True
            client.assign_task(task, params)

        try:
            self._request("taskAssign", send)
        except AnAgentError as exc:
            scheduler.forget(key)
            self._peers.record_exchange(
                self.name,
                "edit-config",
                "taskAssign",
                task.task_id,
                summary,
                payload=payload,
                ok=False,
                error=str(exc),
                order=order,
            )
            raise
        self._peers.record_exchange(
            self.name, "edit-config", "taskAssign", task.task_id, summary, payload=payload, order=order
        )
        if self.name in self._peers.outside:  # no executor of the lab's will arrive: stand in for it
            scheduler.arrive(key)
        return TaskHandle(self, task.task_id, ended)

    def get_task(self, task_id: str) -> Task:
        """taskResultQuery."""
        order = next_order()
        task = self._request("taskResultQuery", lambda client: client.get_task(task_id))
        reason = task.result.reason if task.result and task.result.reason else ""
        self._peers.record_exchange(
            self.name,
            "get",
            "taskResultQuery",
            task_id,
            f"{task.status}" + (f": {reason}" if reason else ""),
            status=str(task.status),
            order=order,
        )
        return task


@dataclass(frozen=True)
class OutsideLogin:
    """How an agent logs in to a peer the lab does not run: its credentials, the certificate its A2A face has."""

    user: str
    password: str
    trust: Path | None = None


class Peers:
    """The peers of agent ``me``: sessions opened on first use, only to agents ``allowed``."""

    def login_for(self, name: str) -> tuple[str, str]:
        """The ``(user, password)`` to log in to ``name`` with: an outside peer's own, else this agent's."""
        outside = self.outside.get(name)
        return (outside.user, outside.password) if outside is not None else self.credentials

    def trust_for(self, name: str) -> Path | None:
        """The certificates ``name``'s HTTPS is verified against: an outside peer's, else the lab's."""
        outside = self.outside.get(name)
        return outside.trust if outside is not None and outside.trust is not None else self.a2a_trust

    def __init__(
        self,
        me: str,
        scheduler: Scheduler,
        address_of: AddressBook,
        allowed: Iterable[str],
        record: Recorder,
        credentials: tuple[str, str] = ("admin", "admin"),
        timeout: float = 30.0,
        over_a2a: Iterable[str] = (),
        a2a_url_of: UrlBook = lambda name: None,
        a2a_trust: Path | None = None,
        retry: Backoff = REQUEST_RETRY,
        reconnect: Backoff = RECONNECT_RETRY,
        outside: Mapping[str, OutsideLogin] | None = None,
    ) -> None:
        self.me = me
        self.outside = dict(outside or {})
        """Peers the lab does not run (a topology's ``external`` agents), with the login and trust to use on
        them. A task assigned to one is done outside the lab's time: the hand-off stands in for its
        executor's arrival (`Peer.assign`), so the lab's time waits for its end and the end completes it."""
        self.a2a_trust = a2a_trust
        """The certificates an ``https://`` A2A peer is verified against (None: the system's CAs)."""
        self.retry = retry
        """Requests to a peer that cannot be reached (waits on ``scheduler``); ``reconnect``: the notifications."""
        self.reconnect = reconnect
        self.over_a2a = frozenset(over_a2a)
        self.a2a_url_of = a2a_url_of
        self.scheduler = scheduler
        self.address_of = address_of
        self.allowed = frozenset(allowed)
        self.record = counted(record)
        self.credentials = credentials
        self.timeout = timeout
        self._lock = threading.Lock()
        self._peers: dict[str, Peer | A2APeer] = {}
        self._closed = False

    def peer(self, name: str) -> Peer | A2APeer:
        """The link to ``name``; `ConfigError` when the topology does not let ``me`` talk to it,
        `SessionsClosed` after `close` (a closed link is not replaced by a new one)."""
        if name not in self.allowed:
            raise ConfigError(f"the topology does not let {self.me} talk to {name}")
        with self._lock:
            if self._closed:
                raise link_closed(self.me, name, "the sessions to its peers are")
            if name not in self._peers:
                netconf = Peer(self, name)
                self._peers[name] = A2APeer(self, name, netconf) if name in self.over_a2a else netconf
            return self._peers[name]

    def record_exchange(
        self,
        receiver: str,
        operation: str,
        commu_type: str,
        task_id: str | None,
        summary: str,
        *,
        status: str | None = None,
        payload: dict[str, Any] | None = None,
        ok: bool = True,
        error: str | None = None,
        order: int | None = None,
    ) -> None:
        self.record(
            Exchange(
                self.scheduler.now(),
                self.me,
                receiver,
                operation,
                commu_type,
                task_id,
                summary,
                status,
                payload,
                ok,
                error,
                next_order() if order is None else order,
            )
        )

    def close(self, join: bool = True) -> list[threading.Thread]:
        """Close every session for good (no link opens afterwards: `peer` refuses); with ``join`` return once
        every thread of every link has ended (all closed first, then waited for), else return them to join.
        """
        with self._lock:
            self._closed = True
            peers = list(self._peers.values())
            self._peers.clear()
        threads = [thread for peer in peers for thread in peer.close_nowait()]
        if join:
            join_threads(threads)
            return []
        return threads


_ENDS = frozenset(s.value for s in TaskStatus if s.terminal)


def counted(record: Recorder) -> Recorder:
    """``record``, on the way stamping each exchange with its trace (the sender's, or for a status
    notification the trace its task was assigned in) and counting the requester side of the task metrics
    (`an_agent.metrics`): a task assigned opens, each status notification received counts, an end closes."""
    traces: dict[str, str] = {}  # tasks assigned and not ended -> their trace id

    def recorded(exchange: Exchange) -> None:
        span = tracing.current()
        trace = exchange.trace_id or (span.trace_id if span else traces.get(exchange.task_id or ""))
        if trace and exchange.trace_id is None:
            exchange = replace(exchange, trace_id=trace)
        if exchange.ok and exchange.commu_type == "taskAssign":
            metrics.task_open("requester", 1)
            if trace and exchange.task_id:
                traces[exchange.task_id] = trace
        elif exchange.is_notification and exchange.status:
            metrics.task_status("requester", exchange.status)
            if exchange.status in _ENDS:
                metrics.task_open("requester", -1)
                traces.pop(exchange.task_id or "", None)
        record(exchange)

    return recorded


def prompt_payload(content: list[str]) -> dict[str, Any] | None:
    """The JSON object in the first ``## environmental information`` section that holds one, else None."""
    for text in content:
        env = parse_prompt(text).environment
        if env:
            try:
                value = json.loads(env)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None
