"""A peer reached over its A2A face: a topology link marked ``transport: a2a`` (`an_agent.agents.peers`).

Tasks go as A2A messages (`an_agent.a2a.client.A2AAgentClient`): the card is resolved on first use
(recorded as the CapabilityRequest), the structured payload is negotiated from the card's ``schemas``
and validated before it is sent as a data part with the task's prompt as text, the message names the
sending agent (its ``task-sendFrom``) and proposes the task id the behaviour chose (as over NETCONF:
the A2A task id is the NETCONF task-id), and the task is streamed: each status change is recorded as
the notification it is, and its end completes the hand-off registered with the `Scheduler`, as a
NETCONF notification does.

Negotiation (FEASIBILITY, FULFILLMENT) has no A2A counterpart: it stays on the NETCONF sessions of the
same peer (`Peer`), which see the same tasks.

Closing is for good, as for the NETCONF sessions (`an_agent.agents.peer_sessions`): afterwards no request
is sent (`SessionsClosed`) and no stream is followed again; a stream's thread waiting to resume wakes at
once, and `A2APeer.close` returns once every thread of the link has ended.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import random
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from an_agent.agents.environment import Scheduler
from an_agent.agents.exchange import (
    Exchange,
    InputAnswer,
    TaskHandle,
    input_text,
    join_threads,
    link_closed,
    next_order,
    param_payload,
    status_summary,
)
from an_agent.errors import AnAgentError, ConfigError, TransportError
from an_agent.model import (
    ConditionNotification,
    DataParam,
    NegotiationRequest,
    NegotiationResult,
    Task,
    TaskStatus,
    parse_prompt,
)
from an_agent.nc.retry import Backoff, with_retry

if TYPE_CHECKING:
    from an_agent.a2a.client import A2AAgentClient
    from an_agent.nc.schema_client import NegotiatedTemplate

log = logging.getLogger(__name__)


class Links(Protocol):
    """What an `A2APeer` uses of its agent's `an_agent.agents.peers.Peers`."""

    me: str
    scheduler: Scheduler
    credentials: tuple[str, str]
    timeout: float
    a2a_trust: Path | None
    reconnect: Backoff

    @property
    def outside(self) -> Mapping[str, Any]:
        """Peers the lab does not run (`an_agent.agents.peers.Peers.outside`)."""
        ...

    def a2a_url_of(self, name: str) -> str | None: ...

    def login_for(self, name: str) -> tuple[str, str]: ...

    def trust_for(self, name: str) -> Path | None: ...

    def record(self, exchange: Exchange) -> None: ...

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
    ) -> None: ...


class Negotiator(Protocol):
    """The NETCONF link to the same peer (`an_agent.agents.peers.Peer`): negotiations, then closing."""

    def negotiate(self, request: NegotiationRequest) -> NegotiationResult: ...

    def schema(self, scenario: str, supported_versions: Sequence[str]) -> NegotiatedTemplate: ...

    def followed_elsewhere(self, task_id: str) -> None: ...

    def close(self) -> None: ...

    def close_nowait(self) -> list[threading.Thread]: ...


class A2APeer:
    """``me``'s link to one peer over A2A (module docstring); the same operations as `Peer`."""

    face = "a2a"
    """The face tasks go to the peer over (the trace events' ``face``)."""

    def __init__(self, peers: Links, name: str, netconf: Negotiator) -> None:
        self._peers = peers
        self.name = name
        self._netconf = netconf
        self._lock = threading.Lock()
        self._client: A2AAgentClient | None = None
        self._closed = False
        self._woken = threading.Event()  # set by `close`: ends a stream's wait to resume
        self._streams: set[threading.Thread] = set()  # each following a task's stream (`_follow`)

    def _connect(self) -> A2AAgentClient:
        from an_agent.a2a.client import A2AAgentClient  # the SDK only where a topology uses A2A

        with self._lock:
            if self._closed:
                raise link_closed(self._peers.me, self.name, f"the A2A link to {self.name} is")
            if self._client is not None:
                return self._client
            peers = self._peers
            url = peers.a2a_url_of(self.name)
            if url is None:
                raise ConfigError(f"{peers.me} has no A2A address for agent {self.name!r} (no a2a_port?)")
            user, password = peers.login_for(self.name)
            client = A2AAgentClient.connect(
                url, user, password, timeout=peers.timeout, trust=peers.trust_for(self.name)
            )
            card = client.card
            peers.record_exchange(
                self.name,
                "GET agent-card",
                "CapabilityRequest",
                None,
                f"A2A card of {card.get('name')}: {len(card.get('skills', []))} skill(s), "
                f"{len(client.schemas)} schema(s)",
            )
            self._client = client
            return client

    def negotiate(self, request: NegotiationRequest) -> NegotiationResult:
        """``task-negotiate`` over NETCONF (A2A has no negotiation), with the peer's id of the task."""
        return self._netconf.negotiate(request)

    def schema(self, scenario: str, supported_versions: Sequence[str]) -> NegotiatedTemplate:
        """``get-schema-template`` over NETCONF, as the other negotiations (the card's schemas have no patches)."""
        return self._netconf.schema(scenario, supported_versions)

    def assign(self, task: Task, params: Iterable[DataParam] = (), on_input: InputAnswer | None = None) -> TaskHandle:
        """taskAssign as an A2A message; the handle waits for the task's end (streamed) and reads it.

        ``on_input`` answers the task's ``input-required`` by a message on the task (A2A's follow-up);
        without it, input-required ends the wait (the behaviour reads the task as it is).
        """
        client = self._connect()
        peers = self._peers
        key = (self.name, task.task_id)
        ended = peers.scheduler.expect(key)
        self._netconf.followed_elsewhere(task.task_id)  # not twice in the timeline
        envelope = next((p for p in (param_payload(p) for p in params) if p is not None), None)
        summary = (parse_prompt(task.content or "").task_description or "").split("\n")[0]
        order = next_order()
        try:
            stream = client.stream(
                scenario=envelope.get("schema_id") if envelope else None,
                payload=envelope.get("payload") if envelope else None,
                text=task.content,
                sender=peers.me,
                new_task_id=task.task_id,
            )
            first = next(stream)
        except AnAgentError as exc:
            peers.scheduler.forget(key)
            peers.record_exchange(
                self.name, "SendStreamingMessage", "taskAssign", task.task_id, summary,
                payload=envelope, ok=False, error=str(exc), order=order,
            )  # fmt: skip
            raise
        peers.record_exchange(
            self.name, "SendStreamingMessage", "taskAssign", first.task_id, summary, payload=envelope, order=order
        )
        if self.name in peers.outside:  # no executor of the lab's will arrive: stand in for it (`Peers.outside`)
            peers.scheduler.arrive(key)
        follow = threading.Thread(
            target=self._following,
            args=(stream, key, first.task_id, on_input),
            name=f"a2a:{peers.me}<-{self.name}",
            daemon=True,
        )
        with self._lock:  # a thread `close` does not see is never started
            closed = self._closed
            if not closed:
                self._streams.add(follow)
                follow.start()
        if closed:  # closed since the message left: nobody follows the task here
            peers.scheduler.complete(
                key, ConditionNotification(first.task_id, TaskStatus.FAILED, reason="A2A link closed")
            )
        return TaskHandle(self, task.task_id, ended)

    def _following(
        self,
        stream: Iterator[Task | ConditionNotification],
        key: tuple[str, str],
        task_id: str,
        on_input: InputAnswer | None,
    ) -> None:
        """The thread of one task's stream: `_follow`, then it leaves the link's threads."""
        try:
            self._follow(stream, key, task_id, on_input)
        finally:
            with self._lock:
                self._streams.discard(threading.current_thread())

    def _follow(
        self,
        stream: Iterator[Task | ConditionNotification],
        key: tuple[str, str],
        task_id: str,
        on_input: InputAnswer | None = None,
    ) -> None:
        """Record the streamed status changes; the end completes the hand-off.

        An ``input-required`` that ``on_input`` answers is answered by a message on the task, whose
        stream is followed on (the hand-off waits for the task's real end). A stream that breaks before
        the end (the peer's process was killed and restarts) is resumed (`_resume`), so the hand-off
        waits for the task's real end too; only when that fails for good (or the lab is stopping) is it
        completed as failed, and the waiting behaviour reads the task as it is.
        """
        peers = self._peers
        current: Iterator[Task | ConditionNotification] | None = stream
        resumed = False
        while current is not None:
            following, current = current, None
            try:
                for event in following:
                    if isinstance(event, Task):  # the task as it is, first on a resumed stream
                        if resumed and event.status is not None and _ends_wait(event.status):
                            reason = event.result.reason if event.result else None
                            peers.record_exchange(
                                self.name, "Task", "taskResultNotify", task_id, f"{event.status}",
                                status=str(event.status),
                            )  # fmt: skip  # it ended while the stream was down: the resumed stream says so
                            peers.scheduler.complete(key, ConditionNotification(task_id, event.status, reason=reason))
                            return
                        continue
                    peers.record(
                        Exchange(
                            time=event.event_time if event.event_time is not None else peers.scheduler.now(),
                            sender=self.name,
                            receiver=peers.me,
                            operation="TaskStatusUpdateEvent",
                            commu_type="taskResultNotify",
                            task_id=task_id,
                            summary=status_summary(event, previous=False),
                            status=str(event.status),
                            order=next_order(),
                        )
                    )
                    if event.status == TaskStatus.INPUT_REQUIRED and on_input is not None:
                        current = self._answer_input(task_id, event, on_input)
                        if current is not None:
                            break  # followed on in the answer's stream
                    if _ends_wait(event.status):
                        peers.scheduler.complete(key, event)
                        return
            except AnAgentError as exc:
                log.debug("A2A stream %s<-%s ended: %s", peers.me, self.name, exc)
            if current is None:  # the stream broke or ended before the task did
                current, resumed = self._resume(task_id), True
        peers.scheduler.complete(key, ConditionNotification(task_id, TaskStatus.FAILED, reason="A2A stream ended"))

    def _answer_input(
        self, task_id: str, event: ConditionNotification, on_input: InputAnswer
    ) -> Iterator[Task | ConditionNotification] | None:
        """A message on the task with the assigner's answer; its stream, or None when there is no answer."""
        values = on_input(event)
        if values is None:
            return None
        order = next_order()
        summary = "input: " + ", ".join(f"{k} {v}" for k, v in values.items())
        try:
            answer = self._connect().provide_input(task_id, text=input_text(values))
        except AnAgentError as exc:
            self._peers.record_exchange(
                self.name, "SendMessage", "taskInputProvide", task_id, summary, ok=False, error=str(exc), order=order
            )
            return None
        self._peers.record_exchange(self.name, "SendMessage", "taskInputProvide", task_id, summary, order=order)
        return answer

    def _resume(self, task_id: str) -> Iterator[Task | ConditionNotification] | None:
        """Follow ``task_id`` again after its stream broke (A2A SubscribeToTask: the task now, then its
        changes), retried with backoff in real time while the peer is unreachable (it is restarting: the
        stream's thread is no lab activity; `close` ends the wait). None when this link is closed or the
        peer stays away."""
        peers = self._peers

        def attempt() -> Iterator[Task | ConditionNotification] | None:
            with self._lock:
                client = None if self._closed else self._client
            if client is None:
                return None
            stream = client.resubscribe(task_id)
            first = next(stream, None)  # the request goes out here: a refused connection raises
            if first is None:
                raise TransportError(f"the A2A stream of {task_id} at {self.name} ended at once")
            log.info("%s resumed the A2A stream of %s at %s", peers.me, task_id, self.name)
            peers.record_exchange(
                self.name, "SubscribeToTask", "taskResultSubscribe", task_id, f"{first.status}: followed again"
            )  # fmt: skip
            return itertools.chain([first], stream)

        try:
            return with_retry(
                attempt, policy=peers.reconnect, sleep=self._wait, rng=random.Random(f"{peers.me}->{self.name}"),
                what=f"{peers.me} -> {self.name}: SubscribeToTask {task_id}", level=logging.INFO,
            )  # fmt: skip
        except AnAgentError as exc:
            log.warning("%s could not follow %s at %s again: %s", peers.me, task_id, self.name, exc)
            return None

    def get_task(self, task_id: str) -> Task:
        """taskResultQuery as A2A GetTask."""
        client = self._connect()
        order = next_order()
        task = client.get_task(task_id)
        reason = task.result.reason if task.result and task.result.reason else ""
        self._peers.record_exchange(
            self.name, "GetTask", "taskResultQuery", task_id,
            f"{task.status}" + (f": {reason}" if reason else ""), status=str(task.status), order=order,
        )  # fmt: skip
        return task

    def _wait(self, seconds: float) -> None:
        self._woken.wait(seconds)

    def close(self) -> None:
        """Close the A2A client and the NETCONF sessions for good (module docstring); returns once every
        thread of the link has ended (the streams' and the NETCONF dispatcher)."""
        join_threads(self.close_nowait())

    def close_nowait(self) -> list[threading.Thread]:
        """`close` without the wait: returns the link's threads, which end within a second (join them)."""
        with self._lock:
            client, self._client = self._client, None
            self._closed = True
            streams = list(self._streams)
        self._woken.set()
        if client is not None:
            with contextlib.suppress(AnAgentError):
                client.close()
        return streams + self._netconf.close_nowait()


def _ends_wait(status: TaskStatus) -> bool:
    """Whether the assigner's wait for a task ends at ``status``: its end, or a question back."""
    return status.terminal or status == TaskStatus.INPUT_REQUIRED
