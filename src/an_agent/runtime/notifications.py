"""RFC 5277 event notifications: the durable log, subscriptions, replay, retention.

Every event is written to the SQLite log before it is sent (by the caller,
in the same transaction as the state change it announces), then offered, in
log order and under the bus lock, to every subscription. Offering never
blocks: each subscription has a bounded queue (`DEFAULT_MAX_BACKLOG` events)
and its own writer thread, so a subscriber that stops reading its session
stalls only itself, never other subscribers nor the edit that published.

Fan-out: an event is parsed, filtered, wrapped in ``<notification>`` and
encoded once per distinct *view*, not once per subscriber. Subscriptions
that declare the same view (the face's key for "same filter, same principal")
share one filter decision per event, and sinks with the same ``encoding``
(NETCONF 1.0 or 1.1 framing) share the encoded bytes; each subscriber's queue
then holds bytes ready for its writer thread. A subscription without a view
key gets its own decision (the A2A face filters per stream). The rendering
itself is `an_agent.runtime.event_rendering`.

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
import time
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from lxml import etree

from an_agent import metrics, stages
from an_agent.clock import Clock
from an_agent.runtime.event_rendering import EventSink, LoggedEvent, Rendering, TextSink, envelope, marker, passes
from an_agent.runtime.requests import EventFilter
from an_agent.store.agent_store import AgentStore

log = logging.getLogger(__name__)

DEFAULT_MAX_BACKLOG = 1000
"""Events a subscriber may have queued before it is dropped (see the module docstring)."""
DEFAULT_RETENTION = 7 * 24 * 3600.0
"""Seconds a logged notification is kept (wall clock)."""
REPLAY_PAGE = 500
_PRUNE_PERIOD = 3600.0


@dataclass
class _Queued:
    """A live event as one subscriber will send it: already filtered, wrapped and encoded."""

    seq: int
    event_time: float
    data: bytes


class Subscription:
    """One session's RFC 5277 subscription: a bounded queue of encoded events and its own writer thread.

    ``view`` identifies its filter and read view for sharing work across
    subscribers (see the module docstring); subscriptions with equal views
    must pass the same events.
    """

    def __init__(
        self,
        sink: EventSink,
        store: AgentStore,
        clock: Clock,
        event_filter: EventFilter | None,
        start_time: float | None,
        stop_time: float | None,
        replay_upto_seq: int,
        on_end: Callable[[Subscription], None],
        max_backlog: int = 1000,
        view: Hashable = None,
        on_written: Callable[[], None] | None = None,
    ) -> None:
        self._sink = sink
        self._on_written = on_written
        self.view: Hashable = view if view is not None else object()  # None: a view of its own
        self._store = store
        self._clock = clock
        self._filter = event_filter
        self._start = start_time
        self._stop = stop_time
        self._replay_upto = replay_upto_seq
        self._on_end = on_end
        self._max_backlog = max_backlog
        self._queue: deque[_Queued] = deque()
        self._in_flight: int | None = None  # seq of the live event being written, taken off the queue
        self._try_send: Callable[[bytes], bool] | None = getattr(sink, "try_send_encoded", None)
        self._live = False  # the writer sends live events (started, replay done): `offer` may write itself
        self._wake = threading.Condition()
        self._ended = False
        self._overflowed = False
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nc-subscription", daemon=True)

    def start(self) -> None:
        """Start the writer (after the ``<create-subscription>`` reply is on the wire)."""
        self._thread.start()

    def offer(self, rendering: Rendering) -> None:
        """Queue the event's bytes for this subscriber without ever blocking (called in log order).

        Events its filter drops are not queued and do not count against the
        backlog. When nothing is queued or being written for this subscriber
        and its sink can take the bytes at once without blocking
        (``try_send_encoded``, see `EventSink`), they are written here, on the
        publishing thread: a fan-out to many sessions then costs no thread
        wake-up per subscriber.
        """
        if self._ended:
            return
        data = rendering.for_subscriber(self.view, self._filter, self._sink)
        if data is None:
            return
        event = rendering.event
        queued = _Queued(event.seq, event.event_time, data)
        with self._wake:
            if self._ended:
                return
            direct = (
                self._live
                and self._stop is None
                and self._try_send is not None
                and not self._queue
                and self._in_flight is None
            )
            if direct:
                self._in_flight = event.seq  # the writer leaves it alone; later events queue behind it
            elif len(self._queue) >= self._max_backlog:
                self._overflowed = True
                self._ended = True
                metrics.notifications_dropped(len(self._queue) + 1)
                self._queue.clear()
                self._wake.notify()
                return
            else:
                self._queue.append(queued)
                self._wake.notify()
                return
        assert self._try_send is not None
        try:
            sent = self._try_send(data)
        except Exception:  # the writer meets the same failure and ends the session properly
            sent = False
        with self._wake:
            self._in_flight = None
            if not sent:
                self._queue.appendleft(queued)
            self._wake.notify()
        if sent:
            if stages.ON:
                stages.mark(f"written:{event.seq}")
            if self._on_written is not None:
                self._on_written()

    def end(self) -> None:
        """Stop sending (session closing); no notificationComplete is sent."""
        with self._wake:
            self._ended = True
            self._queue.clear()
            self._wake.notify()
        if not self._thread.is_alive() and not self._finished.is_set():
            self._finish()  # never started: nothing else will call on_end

    def holds(self, seq: int) -> bool:
        """Whether a live event up to ``seq`` is still queued or being written for this subscriber."""
        with self._wake:
            if self._ended:
                return False
            if self._in_flight is not None and self._in_flight <= seq:
                return True
            return bool(self._queue) and self._queue[0].seq <= seq

    @property
    def backlog(self) -> int:
        with self._wake:
            return len(self._queue)

    def _send(self, message: str) -> None:
        self._sink.send_encoded(self._sink.encode(message))

    def _replay(self, event: LoggedEvent) -> None:
        # Replayed events are this subscriber's alone: filtered and encoded here, on its writer thread.
        if passes(self._filter, etree.fromstring(event.xml)):
            self._send(envelope(event.event_time, event.xml))

    def _next(self) -> _Queued | None:
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
            event = self._queue.popleft()
            self._in_flight = event.seq
            return event

    def _run(self) -> None:
        try:
            if self._start is not None:
                for page in self._store.notification_pages(self._start, self._stop, self._replay_upto, REPLAY_PAGE):
                    for logged in page:
                        if self._ended:
                            break
                        self._replay(LoggedEvent(logged.seq, logged.event_time, logged.xml))
                if not self._ended:
                    self._send(marker(self._clock.now(), "replayComplete"))
            with self._wake:
                self._live = True
            while True:
                event = self._next()
                if event is None:
                    break
                if self._stop is not None and event.event_time > self._stop:
                    break
                if event.seq > self._replay_upto:
                    self._sink.send_encoded(event.data)
                    if stages.ON:
                        stages.mark(f"written:{event.seq}")
                with self._wake:
                    self._in_flight = None
                if self._on_written is not None:
                    self._on_written()
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
            self._in_flight = None
        self._on_end(self)
        if self._on_written is not None:
            self._on_written()

    def _complete(self) -> None:
        self._send(marker(self._clock.now(), "notificationComplete"))


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
        self._written = threading.Condition()  # notified after each live event a writer handed over
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
        send: EventSink | Callable[[str], None],
        event_filter: EventFilter | None,
        start_time: float | None,
        stop_time: float | None,
        on_end: Callable[[Subscription], None],
        view: Hashable = None,
    ) -> Subscription:
        """Register a subscription; call `Subscription.start` once the rpc-reply is sent.

        ``send`` is an `EventSink` or a function taking each message as text.
        ``view`` (None: its own) lets subscriptions with the same filter and
        read view share one filter decision per event.
        """
        sink: EventSink = TextSink(send) if callable(send) else send

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
                sink,
                self._store,
                self._clock,
                event_filter,
                start_time,
                stop_time,
                upto,
                ended,
                self.max_backlog,
                view,
                on_written=self._wrote,
            )
            self._subscriptions.append(sub)
        return sub

    def publish(self, log_event: Callable[[], tuple[int, float, str] | None]) -> int | None:
        """Run ``log_event`` (which writes the event durably and returns (seq, time, xml)) and fan it out.

        Returns the event's log position (None when ``log_event`` logged nothing).

        Logging and offering happen under one lock so subscribers see events in
        sequence order; offering filters and encodes once per distinct view and
        encoding (`Rendering`) and appends bytes to bounded queues.
        """
        with self._lock:
            logged = log_event()
            if logged is None:
                return None
            rendering = Rendering(LoggedEvent(*logged))
            if stages.ON:
                stages.mark(f"logged:{rendering.event.seq}")
            for sub in self._subscriptions:
                sub.offer(rendering)
            if stages.ON:
                stages.mark(f"offered:{rendering.event.seq}")
            return rendering.event.seq

    def _wrote(self) -> None:
        with self._written:
            self._written.notify_all()

    def wait_handed_over(self, seq: int, timeout: float) -> bool:
        """Wait until every subscriber's writer has handed the events up to ``seq`` to its session.

        For work that would compete for the CPU with a fan-out in progress
        (a follow-up status change, a second datastore edit): waiting at most
        ``timeout`` seconds lets the event reach every transport first. False
        when the time ran out (a slow subscriber); nothing is dropped either way.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            subs = list(self._subscriptions)
        with self._written:
            while True:
                subs = [sub for sub in subs if sub.holds(seq)]
                left = deadline - time.monotonic()
                if not subs:
                    return True
                if left <= 0:
                    return False
                self._written.wait(left)

    def subscriber_count(self) -> int:
        with self._lock:
            return len(self._subscriptions)

    def backlog(self) -> int:
        """Notifications queued for all subscribers together, not yet written (the queue depth metric)."""
        with self._lock:
            subscriptions = list(self._subscriptions)
        return sum(s.backlog for s in subscriptions)

    def close(self) -> None:
        self._closing.set()
        with self._lock:
            subs = list(self._subscriptions)
        for sub in subs:
            sub.end()
        self._pruner.join(timeout=5)
