"""RFC 5277 event notifications: the durable log, subscriptions, replay, retention.

Every event is written to the SQLite log before it is sent (by the caller,
in the same transaction as the state change it announces), then offered, in
log order and under the bus lock, to every subscription. Offering never
blocks: each subscription has a bounded queue (`DEFAULT_MAX_BACKLOG` events)
and its own writer thread, so a subscriber that stops reading its session
stalls only itself, never other subscribers nor the edit that published.

Policy for a subscriber that falls behind: when its queue is full, the
subscription is ended. Its queued events are dropped, a ``notificationComplete``
(RFC 5277) is sent as soon as its session takes it, and a warning is logged
with the session; the client learns that its stream ended and may subscribe
again with ``startTime`` to replay from the log what it missed.

A subscription with ``startTime`` first replays the log (up to the log
position at subscription time) page by page (`REPLAY_PAGE` rows in memory at
a time), buffering live events meanwhile in the same bounded queue, sends
``replayComplete``, then sends live events. One with ``stopTime`` sends
``notificationComplete`` on time.

Retention: entries older than `DEFAULT_RETENTION` (7 days, configurable) on
the wall clock, never the agent's possibly simulated clock, are deleted at
start and hourly.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from lxml import etree

from an_agent.clock import Clock, to_rfc3339
from an_agent.model.ns import NETCONF_NOTIFICATION_NS, NETMOD_NOTIFICATION_NS
from an_agent.store.agent_store import AgentStore

log = logging.getLogger(__name__)

NOTIF_NS = NETCONF_NOTIFICATION_NS
NC_MONITOR_NOTIF_NS = NETMOD_NOTIFICATION_NS

DEFAULT_MAX_BACKLOG = 1000
"""Events a subscriber may have queued before it is dropped (see the module docstring)."""
DEFAULT_RETENTION = 7 * 24 * 3600.0
"""Seconds a logged notification is kept (wall clock)."""
REPLAY_PAGE = 500
_PRUNE_PERIOD = 3600.0

# Decides whether an event's content element passes the subscription's filter.
EventFilter = Callable[[etree._Element], bool]


@dataclass
class _Event:
    seq: int
    event_time: float
    xml: str  # content element only


def envelope(event_time: float, content_xml: str) -> str:
    """The ``<notification>`` message for one event."""
    return (
        f'<notification xmlns="{NOTIF_NS}"><eventTime>{to_rfc3339(event_time)}</eventTime>{content_xml}</notification>'
    )


def _marker(event_time: float, name: str) -> str:
    return envelope(event_time, f'<{name} xmlns="{NC_MONITOR_NOTIF_NS}"/>')


class Subscription:
    """One session's RFC 5277 subscription: a bounded queue and its own writer thread."""

    def __init__(
        self,
        send: Callable[[str], None],
        store: AgentStore,
        clock: Clock,
        event_filter: EventFilter | None,
        start_time: float | None,
        stop_time: float | None,
        replay_upto_seq: int,
        on_end: Callable[[Subscription], None],
        max_backlog: int = 1000,
    ) -> None:
        self._send = send
        self._store = store
        self._clock = clock
        self._filter = event_filter
        self._start = start_time
        self._stop = stop_time
        self._replay_upto = replay_upto_seq
        self._on_end = on_end
        self._max_backlog = max_backlog
        self._queue: deque[_Event] = deque()
        self._wake = threading.Condition()
        self._ended = False
        self._overflowed = False
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nc-subscription", daemon=True)

    def start(self) -> None:
        """Start the writer (after the ``<create-subscription>`` reply is on the wire)."""
        self._thread.start()

    def offer(self, event: _Event) -> None:
        """Queue ``event`` for this subscriber without ever blocking (called in log order)."""
        with self._wake:
            if self._ended:
                return
            if len(self._queue) >= self._max_backlog:
                self._overflowed = True
                self._ended = True
                self._queue.clear()
            else:
                self._queue.append(event)
            self._wake.notify()

    def end(self) -> None:
        """Stop sending (session closing); no notificationComplete is sent."""
        with self._wake:
            self._ended = True
            self._queue.clear()
            self._wake.notify()
        if not self._thread.is_alive() and not self._finished.is_set():
            self._finish()  # never started: nothing else will call on_end

    @property
    def backlog(self) -> int:
        with self._wake:
            return len(self._queue)

    def _passes(self, xml: str) -> bool:
        if self._filter is None:
            return True
        try:
            return self._filter(etree.fromstring(xml))
        except Exception:  # a filter that cannot evaluate an event does not select it
            log.debug("subscription filter failed on an event", exc_info=True)
            return False

    def _deliver(self, event: _Event) -> None:
        if self._passes(event.xml):
            self._send(envelope(event.event_time, event.xml))

    def _next(self) -> _Event | None:
        """The next live event; None when the subscription ended or stopTime passed."""
        with self._wake:
            while not self._queue and not self._ended:
                timeout = None
                if self._stop is not None:
                    timeout = max(0.0, min(self._stop - self._clock.now(), 1.0))
                    if self._clock.now() >= self._stop:
                        return None
                self._wake.wait(timeout)
            if self._ended:
                return None
            return self._queue.popleft()

    def _run(self) -> None:
        try:
            if self._start is not None:
                for page in self._store.notification_pages(self._start, self._stop, self._replay_upto, REPLAY_PAGE):
                    for logged in page:
                        if self._ended:
                            break
                        self._deliver(_Event(logged.seq, logged.event_time, logged.xml))
                if not self._ended:
                    self._send(_marker(self._clock.now(), "replayComplete"))
            while True:
                event = self._next()
                if event is None:
                    break
                if self._stop is not None and event.event_time > self._stop:
                    break
                if event.seq > self._replay_upto:
                    self._deliver(event)
            if self._overflowed:
                log.warning(
                    "a subscriber fell more than %d notifications behind and was dropped; "
                    "it is sent notificationComplete",
                    self._max_backlog,
                )
                self._complete()
            elif self._stop is not None and not self._ended:
                self._complete()
        except Exception:
            log.exception("subscription sender failed")
        finally:
            self._finish()

    def _finish(self) -> None:
        if self._finished.is_set():
            return
        self._finished.set()
        with self._wake:
            self._ended = True
        self._on_end(self)

    def _complete(self) -> None:
        self._send(_marker(self._clock.now(), "notificationComplete"))


class NotificationBus:
    """Offers logged events to subscriptions in log order; prunes the log by its retention."""

    def __init__(
        self,
        store: AgentStore,
        clock: Clock,
        max_backlog: int = DEFAULT_MAX_BACKLOG,
        retention: float = DEFAULT_RETENTION,
    ) -> None:
        self._store = store
        self._clock = clock
        self.max_backlog = max_backlog
        self.retention = retention
        self._lock = threading.Lock()
        self._subscriptions: list[Subscription] = []
        self._closing = threading.Event()
        self._pruner = threading.Thread(target=self._prune_loop, name="nc-notify-retention", daemon=True)
        self._pruner.start()

    def set_retention(self, seconds: float) -> None:
        """Keep log entries ``seconds`` on the wall clock (0: keep forever); prunes at once."""
        self.retention = seconds
        self.prune()

    def prune(self) -> int:
        """Delete log entries older than the retention; returns how many."""
        if self.retention <= 0:
            return 0
        try:
            removed = self._store.prune_notifications(self.retention)
        except Exception:  # a failed prune is retried at the next period; it must not stop the agent
            log.exception("pruning the notification log failed")
            return 0
        if removed:
            log.info("notification log: %d entries older than %g s removed", removed, self.retention)
        return removed

    def _prune_loop(self) -> None:
        self.prune()
        while not self._closing.wait(_PRUNE_PERIOD):
            self.prune()

    def subscribe(
        self,
        send: Callable[[str], None],
        event_filter: EventFilter | None,
        start_time: float | None,
        stop_time: float | None,
        on_end: Callable[[Subscription], None],
    ) -> Subscription:
        """Register a subscription; call `Subscription.start` once the rpc-reply is sent."""

        def ended(sub: Subscription) -> None:
            with self._lock:
                if sub in self._subscriptions:
                    self._subscriptions.remove(sub)
            on_end(sub)

        with self._lock:
            # Taken under the lock that `publish` holds, so every event is
            # either replayed (seq <= upto) or offered live, never both or neither.
            upto = self._store.last_notification_seq()
            sub = Subscription(
                send, self._store, self._clock, event_filter, start_time, stop_time, upto, ended, self.max_backlog
            )
            self._subscriptions.append(sub)
        return sub

    def publish(self, log_event: Callable[[], tuple[int, float, str] | None]) -> None:
        """Run ``log_event`` (which writes the event durably and returns (seq, time, xml)) and fan it out.

        Logging and offering happen under one lock so subscribers see events in
        sequence order; offering only appends to bounded queues.
        """
        with self._lock:
            logged = log_event()
            if logged is None:
                return
            event = _Event(*logged)
            for sub in self._subscriptions:
                sub.offer(event)

    def subscriber_count(self) -> int:
        with self._lock:
            return len(self._subscriptions)

    def close(self) -> None:
        self._closing.set()
        with self._lock:
            subs = list(self._subscriptions)
        for sub in subs:
            sub.end()
        self._pruner.join(timeout=5)
