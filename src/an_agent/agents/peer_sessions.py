"""The NETCONF sessions of an agent to one peer: opened on first use, retried, resubscribed with replay.

`PeerSessions` is the transport half of `an_agent.agents.peers.Peer` (which adds the operations): a
request session (serialised by a lock, reused for the whole run) and one holding the RFC 5277
subscription to the peer's ``condition-notifications``, read by a small dispatcher thread that records
every event, answers ``input-required`` for the tasks it was given an answer for, and hands the end of a
task to the `Scheduler`. A transport failure drops both sessions; requests are tried again with backoff
on the agent's clock (`an_agent.nc.retry`), the notification session in real time, replaying from the
last event seen so nothing is missed and nothing is handled twice.

One thread per peer, from the first subscription to `PeerSessions.close`, reads the subscription and,
when it is lost, subscribes again: a reconnection never runs beside another one or beside a dispatcher,
and `close` returns once that thread has ended. A request that reconnects first (its own sessions) hands
the new subscription to that thread, which reads it from then on.

Closing is for good: from then on no session is opened and no thread started, whoever asks (a request, a
retry waiting on the clock, the notification thread, an ``input-required`` answer); a request fails at once
with `SessionsClosed`. The check is made under the lock that opening sessions holds, so a close never
falls between the check and the opening.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Callable, Iterable
from typing import Protocol, TypeAlias, TypeVar

from an_agent.agents.a2a_peer import Links
from an_agent.agents.exchange import (
    Exchange,
    InputAnswer,
    input_param,
    join_threads,
    link_closed,
    next_order,
    status_summary,
)
from an_agent.errors import AnAgentError, ConfigError, SessionsClosed, TransportError
from an_agent.model import ConditionNotification, TaskStatus
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.retry import Backoff, with_retry

log = logging.getLogger(__name__)

T = TypeVar("T")
Subscription: TypeAlias = tuple[AgentClient, Iterable[ConditionNotification]]
"""A session holding the subscription, and its events."""


class NetconfLinks(Links, Protocol):
    """What `PeerSessions` uses of its agent's `an_agent.agents.peers.Peers` (beyond an A2A link's)."""

    retry: Backoff

    def address_of(self, name: str) -> tuple[str, int] | None: ...


class PeerSessions:
    """The sessions of ``me`` to one peer agent (module docstring)."""

    def __init__(self, peers: NetconfLinks, name: str) -> None:
        self._peers = peers
        self.name = name
        self._lock = threading.Lock()
        self._client: AgentClient | None = None
        self._watcher: AgentClient | None = None
        self._thread: threading.Thread | None = None  # the peer's one notification thread (module docstring)
        self._handed: Subscription | None = None  # opened by a request, for that thread to read next
        self._elsewhere: set[str] = set()
        self._seen: set[tuple[str, str, str]] = set()
        self._replay_from: float | None = None
        self._closed = False
        self._wake = threading.Event()  # ends a reconnection's wait: set by `close`, and by a subscription handed
        self._answers: dict[str, InputAnswer] = {}
        self._rng = random.Random(f"{peers.me}->{name}")  # jitter, the same in every run of a lab

    def followed_elsewhere(self, task_id: str) -> None:
        """``task_id`` is followed over A2A (`A2APeer`): its notifications here are not the hand-off."""
        with self._lock:
            self._elsewhere.add(task_id)

    def _connect(self) -> AgentClient:
        with self._lock:
            self._check_open()
            if self._client is not None:
                return self._client
            peers = self._peers
            address = peers.address_of(self.name)
            if address is None:
                raise ConfigError(f"{peers.me} has no address for agent {self.name!r} (no port in the topology?)")
            host, port = address
            user, password = peers.login_for(self.name)
            client = AgentClient.connect(host, port, username=user, password=password, timeout=peers.timeout)
            try:
                profile = client.profile()
                peers.record_exchange(
                    self.name,
                    "get",
                    "CapabilityRequest",
                    None,
                    f"profile of {profile.name}: {len(profile.skills)} skill(s)",
                )
                watcher = AgentClient.connect(host, port, username=user, password=password, timeout=peers.timeout)
                # After a lost session (the peer restarted, the network was cut), replay what was logged
                # meanwhile: from the last event seen, or from the first subscription when none came yet.
                if self._replay_from is None:
                    self._replay_from = peers.scheduler.now()
                    events = watcher.watch(until_terminal=False)
                else:
                    events = watcher.watch(until_terminal=False, start_time=self._replay_from)
                peers.record_exchange(
                    self.name,
                    "create-subscription",
                    "taskResultSubscribe",
                    None,
                    "condition-notifications of every task",
                )
            except BaseException:
                client.close()
                raise
            self._watcher = watcher
            self._client = client
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._follow, args=((watcher, events),), name=f"notify:{peers.me}<-{self.name}", daemon=True
                )
                self._thread.start()
            else:  # the notification thread reads a lost session, or waits to reconnect: this is its next one
                self._handed = (watcher, events)
                self._wake.set()
            return client

    def _follow(self, subscription: Subscription) -> None:
        """The notification thread: read ``subscription``; when its session is lost, subscribe again (or take
        the one a request opened meanwhile) and read on. Ends when closed, when the peer ends the
        subscription, or when reconnecting gave up (the next request starts a new thread)."""
        following: Subscription | None = subscription
        while following is not None:
            watcher, events = following
            following = self._resubscribe() if self._dispatch(watcher, events) else None
            with self._lock:
                if following is None:
                    following, self._handed = self._handed, None  # handed over while this one ended
                if following is None or self._closed:
                    if self._thread is threading.current_thread():
                        self._thread = None
                    return

    def _dispatch(self, watcher: AgentClient, events: Iterable[ConditionNotification]) -> bool:
        """Handle ``events`` until the subscription ends; True when its session was lost (subscribe again)."""
        peers = self._peers
        try:
            for event in events:
                if event.send_to != peers.me:
                    continue  # a task someone else assigned
                with self._lock:
                    if event.task_id in self._elsewhere:
                        continue  # assigned over A2A: its stream reports it
                    # the previous status too: a task may come back to processing after input-required
                    seen = (event.task_id, str(event.status), str(event.previous_status))
                    if seen in self._seen:
                        continue  # replayed after a reconnection: handled already
                    self._seen.add(seen)
                    if event.event_time is not None:
                        self._replay_from = event.event_time
                peers.record(
                    Exchange(
                        time=event.event_time if event.event_time is not None else peers.scheduler.now(),
                        sender=self.name,
                        receiver=peers.me,
                        operation="notification",
                        commu_type="taskResultNotify",
                        task_id=event.task_id,
                        summary=status_summary(event),
                        status=str(event.status),
                        order=next_order(),
                    )
                )
                if event.status == TaskStatus.INPUT_REQUIRED:
                    self._answer_input(event)
                if event.status.terminal:
                    peers.scheduler.complete((self.name, event.task_id), event)
        except TransportError:
            with self._lock:
                if self._closed:  # closed by us: the lab is stopping, nothing is lost
                    log.debug("notification dispatcher %s<-%s: session closed", peers.me, self.name)
                    return False
                current = self._watcher is watcher  # else dropped already, by a request that failed (`_drop`)
                clients = [c for c in (self._client, self._watcher) if c is not None] if current else []
                if current:  # the peer went away (killed, restarted): the next use connects again
                    self._client = self._watcher = None
            for client in clients:
                client.abort()  # the peer went away: nobody is left to answer a <close-session>
            return True
        except Exception:
            log.exception("notification dispatcher %s<-%s failed", peers.me, self.name)
        return False  # or the peer ended the subscription (notificationComplete)

    def _answer_input(self, event: ConditionNotification) -> None:
        """The assigner answers its executor's ``input-required`` by editing the task (draft-wang 5.2)."""
        with self._lock:
            answer = self._answers.get(event.task_id)
        values = None if answer is None else answer(event)
        if values is None:
            return  # nothing to say: the executor's own time limit decides
        order = next_order()
        param = input_param(event.task_id, values, order)
        summary = "input: " + ", ".join(f"{k} {v}" for k, v in values.items())
        try:
            client = self._connect()
            with self._lock:
                client.provide_input(event.task_id, [param])
        except AnAgentError as exc:
            self._peers.record_exchange(
                self.name, "edit-config", "taskInputProvide", event.task_id, summary, ok=False, error=str(exc),
                order=order,
            )  # fmt: skip
            return
        self._peers.record_exchange(self.name, "edit-config", "taskInputProvide", event.task_id, summary, order=order)

    def _resubscribe(self) -> Subscription | None:
        """The next subscription, after the session was lost: the one a request opened meanwhile, or the
        sessions opened again here (with replay) once the peer answers; None when closed or given up."""

        def attempt() -> Subscription | None:
            with self._lock:
                if self._closed or self._handed is not None:
                    handed, self._handed = self._handed, None
                    self._wake.clear()  # its wake-up is answered: the next wait is a whole one
                    return None if self._closed else handed
            self._connect()  # from this thread: the subscription is handed over to it (or SessionsClosed)
            with self._lock:
                handed, self._handed = self._handed, None
                self._wake.clear()
            if handed is None:  # closed meanwhile (`close` forgets it): the next attempt returns at once
                raise TransportError(f"no subscription to {self.name} after reconnecting")
            log.info("%s reconnected to %s", self._peers.me, self.name)
            return handed

        def wait(seconds: float) -> None:
            with self._lock:
                closed = self._closed  # `close` set the wake-up before an attempt cleared it: no wait
            if not closed:
                self._wake.wait(seconds)  # real time, cut short by `close` or by a request that reconnected
            self._wake.clear()

        try:  # real time: the peer's process is starting again (INFO: a lab that stops looks the same)
            return with_retry(
                attempt, policy=self._peers.reconnect, sleep=wait, rng=self._rng,
                what=self._what("reconnect"), level=logging.INFO,
            )  # fmt: skip
        except SessionsClosed:  # closed between the attempt's look and its connection: nothing to follow
            return None
        except AnAgentError as exc:
            log.warning("%s could not reconnect to %s: %s", self._peers.me, self.name, exc)
            return None

    def _what(self, operation: str) -> str:
        return f"{self._peers.me} -> {self.name}: {operation}"

    def _check_open(self) -> None:
        """`SessionsClosed` once `close` was called (hold ``self._lock``)."""
        if self._closed:
            raise link_closed(self._peers.me, self.name, f"the sessions to {self.name} are")

    def _drop(self, client: AgentClient) -> None:
        """Forget the sessions after ``client``'s broke (the next use reconnects and resubscribes with replay)."""
        with self._lock:
            if self._client is not client:
                return  # dropped already (by another request or by the dispatcher)
            clients = [c for c in (self._client, self._watcher) if c is not None]
            self._client = self._watcher = None
        # Aborted, not closed: the peer broke one session, so it is likely gone or going, and a polite
        # <close-session> on the other would wait for a reply that never comes (seen holding an agent's
        # stop past the lab's grace period). The subscription goes with it: the notification thread sees
        # its session end and subscribes again at once, with replay. Tasks assigned before still end at
        # the peer and their ends must come even if no request follows (the one that failed may have been
        # the last: found by lab soak --netns, where a request given up during a partition left two
        # tasks' ends unheard for ever).
        for each in clients:
            each.abort()

    def _request(self, operation: str, send: Callable[[AgentClient], T]) -> T:
        """``send`` on the request session, connecting first; a transport failure drops the sessions and the
        request is tried again with backoff on the agent's clock (`an_agent.nc.retry`). Only for requests
        that are safe to send twice (``send`` makes a task creation safe itself, `AgentClient.ensure_task`).
        """

        def attempt() -> T:
            client = self._connect()
            try:
                with self._lock:
                    self._check_open()  # closed since `_connect`: its session is closed too
                    return send(client)
            except TransportError:
                self._drop(client)
                raise

        peers = self._peers
        return with_retry(
            attempt, policy=peers.retry, sleep=peers.scheduler.sleep, rng=self._rng, what=self._what(operation)
        )

    def close(self) -> None:
        """Close both sessions for good (module docstring) and return once the notification thread has ended."""
        join_threads(self.close_nowait())

    def close_nowait(self) -> list[threading.Thread]:
        """`close` without the wait: returns the notification thread, none or one (a list, as
        `A2APeer.close_nowait`), which ends within a second (join it), whether it reads the subscription or
        waits to reconnect after its session was lost (its wait ends now: in a lab that stops, a peer that
        stopped first looks lost, and a dispatcher left waiting up to 5 s between attempts outlived the
        lab's stop under load). It is the peer's only thread, and no other starts after it (module
        docstring)."""
        with self._lock:
            self._closed = True
            clients = [c for c in (self._client, self._watcher) if c is not None]
            self._client = self._watcher = self._handed = None
            thread, self._thread = self._thread, None
        self._wake.set()
        for client in clients:
            with contextlib.suppress(AnAgentError):
                client.close()
        return [] if thread is None else [thread]
