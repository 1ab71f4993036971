"""`SimKernel`: simulated time for a lab, deterministic although agents run in real threads.

A lab's agents are real NETCONF servers with worker threads; they talk over real sockets. Time, though,
is simulated: a `ManualClock` that the kernel moves forward, from one scheduled instant to the next,
only when every *activity* is waiting. An activity is a thread doing lab work: counted as busy while
it runs, idle while it waits in `sleep`, `future().wait()` or `queue().get()`.

Work in flight between agents must stay counted, or time would jump while a NETCONF message travels:

- a task accepted by an agent is `hold`-ed in ``check_assignment`` (inside the assigner's
  ``<edit-config>``, so the assigner is still busy) and `adopt`-ed by the worker that executes it;
- the end of a task is a two-sided hand-off: the assigner `expect`s it before assigning; the executor
  `arrive`s when it returns, the assigner's notification reader `complete`s when the terminal
  ``condition-notifications`` comes in. Whichever side comes first holds a unit until the other comes.

So the order of events at different simulated instants never depends on thread scheduling; what
happens at the same instant must not depend on the order either (behaviours sort what they handle).

Paced time (`set_pace`, ``lab run|up --pace N``): instead of jumping to the next instant as soon as
everything is idle, the clock follows the wall clock at N simulated seconds per wall second, so that
participants the kernel cannot see (an outside agent on an element manager, a person) act in the same
time. Instants still play in order and only when everything is idle; an instant overdue (the lab was
busy) plays at once. Between instants the lab's clock moves on with the wall clock (`PACE_TICK`), and
the lab's kernel moves its agents' clocks with it.

`run` plays until nothing is scheduled; if activities stay busy without any progress for
``stall_timeout`` real seconds it raises `LabStall` naming them (a lost hand-off is a bug to see, not to
wait out).
"""

from __future__ import annotations

import contextvars
import heapq
import itertools
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from an_agent.agents.environment import Shutdown
from an_agent.clock import ManualClock
from an_agent.errors import AnAgentError
from an_agent.lab.waits import Future, Queue

log = logging.getLogger(__name__)

T = TypeVar("T")
Key = tuple[str, str]
PACE_TICK = 0.25
"""Paced time: the longest the lab's clock stands still (wall seconds) while nothing happens."""


class LabStall(AnAgentError):
    """Activities stayed busy without progress: something in flight was lost (the message lists them)."""


@dataclass(eq=False)
class _Sleeper:
    label: str
    woken: bool = False


@dataclass(eq=False)
class _TimerEntry:
    label: str
    fn: Callable[[], None]
    kernel: SimKernel
    cancelled: bool = False

    def cancel(self) -> None:
        with self.kernel._cond:
            self.cancelled = True


@dataclass(eq=False)
class _Token:
    label: str
    released: bool = False


@dataclass(eq=False)
class _Handoff:
    future: Future[Any]
    arrivals: int = 0
    completed: bool = False


@dataclass
class KernelStats:
    """What a run did, for reports: instants played and activities started."""

    instants: int = 0
    activities: int = 0
    told: int = 0
    """Advances sent to agent processes (`an_agent.lab.lockstep`): each one a message and its acknowledgement."""
    errors: list[str] = field(default_factory=list)


class SimKernel:
    """Discrete-event simulated time over real threads (module docstring). Implements `Scheduler`."""

    def __init__(self, start: float, stall_timeout: float = 60.0, peers_elsewhere: bool = False) -> None:
        """``peers_elsewhere``: the agents this kernel's activities talk to run in other processes (``an-agent
        serve --topology``), so a task's end is one-sided: the assigner's notification completes it alone."""
        self.clock = ManualClock(start)
        self.stall_timeout = stall_timeout
        self._peers_elsewhere = peers_elsewhere
        self._cond = threading.Condition()
        self._busy = 0
        self._labels: Counter[str] = Counter()
        self._heap: list[tuple[float, int, _Sleeper | _TimerEntry]] = []
        self._seq = itertools.count()
        self._closed = False
        self._close_deadline: float | None = None
        self._changes = 0
        self._threads: list[threading.Thread] = []
        self._local = threading.local()
        self._handoffs: dict[Key, _Handoff] = {}
        self._hooks: list[Callable[[float], None]] = []
        self._pace: float | None = None
        self._pace_anchor: tuple[float, float] | None = None
        self.stats = KernelStats()

    def set_pace(self, pace: float | None) -> None:
        """Follow the wall clock at ``pace`` simulated seconds per wall second (None: lock-step, the default)."""
        if pace is not None and pace <= 0:
            raise ValueError(f"the pace must be above 0 simulated seconds per wall second, not {pace:g}")
        with self._cond:
            self._pace = pace
            self._pace_anchor = None
            self._cond.notify_all()

    @property
    def pace(self) -> float | None:
        return self._pace

    def _paced_wait(self, at: float | None) -> float | None:
        """Paced: move the clock with the wall clock (never past ``at``); the wall seconds to wait before
        ``at`` is due, or None when it is due now (caller holds _cond)."""
        pace = self._pace
        assert pace is not None
        wall = time.monotonic()
        if self._pace_anchor is None:
            self._pace_anchor = (self.clock.now(), wall)
        start, wall0 = self._pace_anchor
        target = start + (wall - wall0) * pace
        reach = target if at is None else min(target, at)
        moved = reach > self.clock.now()
        if moved:
            self.clock.set(reach)
        if at is not None and at <= target:
            return None  # `run` plays the instant (and tells the agents elsewhere)
        if moved:
            self._advanced(reach)  # agents in other processes follow the paced clock between instants too
            self._cond.notify_all()
        return PACE_TICK if at is None else min(PACE_TICK, (at - target) / pace)

    # ---- accounting (callers hold _cond) --------------------------------------------------------
    def _inc(self, label: str) -> None:
        if self._closed:
            return
        self._busy += 1
        self._labels[label] += 1
        self._changes += 1

    def _dec(self, label: str) -> None:
        if self._closed:
            return
        if self._labels[label] <= 0:  # released more often than held: a bug to see, not a count to corrupt
            self.stats.errors.append(f"lab kernel: {label} released while not held (an accounting bug)")
            log.error("lab kernel: %s released while not held", label)
            return
        self._busy -= 1
        self._labels[label] -= 1
        if self._labels[label] <= 0:
            del self._labels[label]
        self._changes += 1
        if self._busy <= 0:
            self._cond.notify_all()

    def _check_open(self) -> None:
        if self._closed:
            raise Shutdown()

    def _current_label(self) -> str:
        label: str | None = getattr(self._local, "label", None)
        if label is None:
            raise RuntimeError(
                f"thread {threading.current_thread().name} is not a lab activity: it may not wait on simulated time"
            )
        return label

    # ---- Scheduler ------------------------------------------------------------------------------
    def now(self) -> float:
        return self.clock.now()

    def sleep(self, seconds: float) -> None:
        label = self._current_label()
        with self._cond:
            self._check_open()
            sleeper = _Sleeper(label)
            heapq.heappush(self._heap, (self.clock.now() + max(0.0, seconds), next(self._seq), sleeper))
            self._dec(label)
            while not sleeper.woken and not self._closed:
                self._cond.wait()
            if not sleeper.woken:
                raise Shutdown()

    def spawn(self, label: str, fn: Callable[[], None]) -> None:
        with self._cond:
            self._check_open()
            self._inc(label)
            self._start_thread(label, fn)

    def _start_thread(self, label: str, fn: Callable[[], None]) -> None:
        # In a copy of the spawner's context: an activity carries on the trace of the work that started it.
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run, args=(self._activity, label, fn), name=f"lab:{label}", daemon=True
        )
        self._threads = [t for t in self._threads if t.is_alive()]
        self._threads.append(thread)
        self.stats.activities += 1
        thread.start()

    def _activity(self, label: str, fn: Callable[[], None]) -> None:
        self._local.label = label
        try:
            fn()
        except Shutdown:
            pass
        except BaseException as exc:  # a behaviour bug: keep the lab going, report it at the end
            log.exception("lab activity %r failed", label)
            with self._cond:
                self._record_error(f"{label}: {type(exc).__name__}: {exc}")
        finally:
            self._local.label = None
            with self._cond:
                self._dec(label)

    def _record_error(self, text: str) -> None:
        """An activity failed (caller holds _cond); a kernel in an agent process also tells its lab."""
        self.stats.errors.append(text)

    def _advanced(self, at: float) -> None:
        """Time has just moved to ``at`` (caller holds _cond); the lab's kernel moves its agents' clocks."""

    def call_at(self, when: float, label: str, fn: Callable[[], None]) -> _TimerEntry:
        with self._cond:
            entry = _TimerEntry(label, fn, self)
            heapq.heappush(self._heap, (max(when, self.clock.now()), next(self._seq), entry))
            self._cond.notify_all()
            return entry

    def future(self, label: str) -> Future[Any]:
        return Future(self, label)

    def queue(self, label: str) -> Queue[Any]:
        return Queue(self, label)

    def hold(self, label: str) -> _Token:
        with self._cond:
            self._inc(label)
            return _Token(label)

    def release(self, token: object) -> None:
        assert isinstance(token, _Token)
        with self._cond:
            if not token.released:
                token.released = True
                self._dec(token.label)

    def adopt(self, token: object) -> None:
        assert isinstance(token, _Token)
        with self._cond:
            token.released = True  # the unit now belongs to this thread's activity
        self._local.label = token.label

    def leave(self) -> None:
        label = getattr(self._local, "label", None)
        self._local.label = None
        if label is not None:
            with self._cond:
                self._dec(label)

    def expect(self, key: Key) -> Future[Any]:
        with self._cond:
            handoff = _Handoff(Future(self, f"result of {key[0]}/{key[1]}"))
            self._handoffs[key] = handoff
            return handoff.future

    def is_expected(self, key: Key) -> bool:
        with self._cond:
            return key in self._handoffs

    def arrive(self, key: Key) -> None:
        with self._cond:
            self._arrive(key)

    def _arrive(self, key: Key) -> None:
        handoff = self._handoffs.get(key)
        if handoff is None:
            return
        handoff.arrivals += 1
        label = f"hand-off {key[0]}/{key[1]}"
        if handoff.arrivals == 1:
            self._inc(label)
        else:
            self._dec(label)
            del self._handoffs[key]

    def complete(self, key: Key, value: Any) -> None:
        with self._cond:
            handoff = self._handoffs.get(key)
            if handoff is None or handoff.completed:
                return
            handoff.completed = True
            handoff.future._set_locked(value)
            if self._peers_elsewhere:  # the executor's arrival happened in its own process
                del self._handoffs[key]
                return
            self._arrive(key)

    def forget(self, key: Key) -> None:
        with self._cond:
            handoff = self._handoffs.pop(key, None)
            if handoff is not None and handoff.arrivals == 1:
                self._dec(f"hand-off {key[0]}/{key[1]}")

    # ---- driving --------------------------------------------------------------------------------
    def on_instant_end(self, hook: Callable[[float], None]) -> None:
        """Call ``hook(now)`` whenever everything that happens at ``now`` has happened (before time moves)."""
        self._hooks.append(hook)

    def busy_labels(self) -> dict[str, int]:
        with self._cond:
            return dict(self._labels)

    def run(self, until: float | None = None, forever: bool = False) -> str:
        """Play simulated time; returns ``"idle"`` (nothing left), ``"deadline"`` or ``"closed"``.

        With ``forever`` it waits for new work instead of returning ``"idle"`` (``lab up``).
        Raises `LabStall` when activities stay busy without progress for ``stall_timeout`` seconds.
        """
        while True:
            with self._cond:
                self._wait_quiescent()
                if self._closed:
                    return "closed"
                at = self._head()
            now = self.clock.now()
            for hook in self._hooks:  # everything at `now` has happened: observers may sample
                hook(now)
            with self._cond:
                if self._closed:
                    return "closed"
                if self._busy != 0 or self._head() != at:
                    continue  # something started or was scheduled meanwhile
                if at is None and not forever:
                    return "idle"
                if at is not None and until is not None and at > until:
                    return "deadline"
                if self._pace is not None:
                    wait = self._paced_wait(at)
                    if wait is not None:
                        self._cond.wait(wait)
                        continue
                elif at is None:
                    self._cond.wait(0.5)
                    continue
                assert at is not None
                if at > self.clock.now():
                    self.clock.set(at)
                self.stats.instants += 1
                self._wake_until(at)
                self._advanced(at)
                self._cond.notify_all()

    def _wake_until(self, at: float) -> None:
        """Wake the sleepers and start the timers due at ``at`` (caller holds _cond; the clock is at ``at``)."""
        while self._heap and self._heap[0][0] <= at:
            _, _, entry = heapq.heappop(self._heap)
            if isinstance(entry, _Sleeper):
                entry.woken = True
                self._inc(entry.label)
            elif not entry.cancelled:
                self._inc(entry.label)
                self._start_thread(entry.label, entry.fn)

    def _head(self) -> float | None:
        """The next scheduled instant (cancelled timers dropped), or None."""
        while self._heap and isinstance(self._heap[0][2], _TimerEntry) and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def _wait_quiescent(self) -> None:
        seen = self._changes
        deadline = time.monotonic() + self.stall_timeout
        while self._busy > 0 and not self._closed:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                busy = ", ".join(f"{label} x{n}" for label, n in sorted(self._labels.items()))
                raise LabStall(f"the lab made no progress for {self.stall_timeout:.0f} s with work in flight: {busy}")
            self._cond.wait(remaining)
            if self._changes != seen:
                seen = self._changes
                deadline = time.monotonic() + self.stall_timeout

    def close(self, join_timeout: float = 10.0) -> list[str]:
        """Stop: every waiting activity gets `Shutdown`; returns the names of threads that did not end.

        Every call waits until the same deadline, ``join_timeout`` after the first call: an agent closes its
        kernel before its server, then again with the lab channel, and an activity stuck in a peer request
        must cost its stop one ``join_timeout``, not one per call.
        """
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            threads = list(self._threads)
            if self._close_deadline is None:
                self._close_deadline = time.monotonic() + join_timeout
            deadline = self._close_deadline
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))
        return [t.name for t in threads if t.is_alive()]

    @property
    def closed(self) -> bool:
        return self._closed
