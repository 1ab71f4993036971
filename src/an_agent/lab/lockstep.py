"""The lab process's clock for one-process-per-agent labs (`LabKernel`): time moves in lock-step with the agents.

Time moves only when the lab's own activities (scenario events, the ticket system) are idle, every agent
process has reported itself idle, no network event is on its way to an agent and no end-of-task hand-off
is open. Then the kernel moves to the earliest instant any of them has scheduled and tells the agents
with something due there (a barrier: time moves again only once each has acknowledged, with what it
woke). An agent that reads the lab's clock from its file (`an_agent.lab.sharedclock`: ``ready`` with
``shared_clock``) and has nothing due is not told: its clock is already the lab's, and its last report
(idle, its next instant) still holds. An agent that keeps its own copy of the clock (on another host) is
told of every instant, as all were before issue 30. `an_agent.lab.conductor` serves it to the agents over
the control channel.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from an_agent.errors import ControlError
from an_agent.lab.kernel import Key, SimKernel
from an_agent.lab.sharedclock import PublishedClock

ADVANCE = "clock advance to the agents"


@dataclass(eq=False)
class _Remote:
    name: str
    seq: int = 0
    busy: bool = False
    head: float | None = None
    events: deque[Any] = field(default_factory=deque)
    subscribed: bool = False
    shared_clock: bool = False
    """It reads the lab's clock file: told of an instant only when it has something due then."""


class LabKernel(SimKernel):
    """A `SimKernel` whose quiescence and next instant also count agents in other processes (module docstring)."""

    def __init__(self, start: float, stall_timeout: float = 60.0) -> None:
        super().__init__(start, stall_timeout=stall_timeout)
        self.clock: PublishedClock = PublishedClock(start)
        self._remotes: dict[str, _Remote] = {}
        self._cuts: set[frozenset[str]] = set()
        self._assigners: dict[Key, str] = {}
        self._parked: set[Key] = set()
        self._orphaned: set[Key] = set()
        """Hand-offs whose executor's process is gone before its side came (`executor_gone`)."""
        self._epoch = 0
        self._awaiting: set[str] = set()

    # ---- membership -----------------------------------------------------------------------------
    def join(self, name: str) -> float:
        """Count agent ``name`` from now on (a restarted agent joins again, as new); returns the time."""
        with self._cond:
            self._drop(name)
            self._remotes[name] = _Remote(name)
            return self.clock.now()

    def publish_clock(self, directory: Path) -> dict[str, str]:
        """Write the clock to a file in ``directory`` from now on (`an_agent.lab.sharedclock`); returns
        what ``hello`` gives agents to map it."""
        return self.clock.publish(directory)

    def shares_clock(self, name: str) -> None:
        """Agent ``name`` reads the published clock (it said so when ready): tell it only of instants at
        which it has something due."""
        with self._cond:
            remote = self._remotes.get(name)
            if remote is not None:
                remote.shared_clock = True

    def detach(self, name: str) -> None:
        """Stop counting agent ``name`` (its process is gone): its busy unit, events and acknowledgement."""
        with self._cond:
            self._drop(name)

    def _drop(self, name: str) -> None:
        remote = self._remotes.pop(name, None)
        if remote is None:
            return
        if remote.busy:
            self._dec(f"agent {name}")
        for _ in remote.events:
            self._dec(f"network events to {name}")
        self._ack(name)
        self._cond.notify_all()

    # ---- partitions: a task's end that cannot cross a cut does not hold time ----------------------
    def expect_for(self, key: Key, assigner: str) -> None:
        """`expect` by agent ``assigner`` (the executor is ``key[0]``)."""
        with self._cond:
            self.expect(key)
            self._assigners[key] = assigner

    def cut(self, a: str, b: str) -> None:
        """Agents ``a`` and ``b`` no longer reach each other (``--chaos partition``).

        The end of a task between them cannot reach its assigner until the cut heals (its notification
        waits in the executor's TCP send queue), and the heal is a later instant: so once the executor
        has arrived at such a hand-off it is *parked* — not counted as in flight — and time moves on.
        """
        with self._cond:
            self._cuts.add(frozenset((a, b)))
            # Not those parked already (by another cut: an isolation is one cut per pair): found by lab
            # soak --netns, where each further cut released them again, the count of activities went
            # below zero and the lab's clock stopped for good.
            crossing = [k for k, h in self._handoffs.items() if h.arrivals == 1 and k not in self._parked]
            for key in [k for k in crossing if self._crosses_cut(k)]:
                self._parked.add(key)
                self._dec(f"hand-off {key[0]}/{key[1]}")
            self._cond.notify_all()

    def heal(self, a: str, b: str) -> None:
        """``a`` and ``b`` reach each other again: their parked hand-offs are in flight again (time holds)."""
        with self._cond:
            self._cuts.discard(frozenset((a, b)))
            for key in [k for k in self._parked if not self._crosses_cut(k)]:
                self._parked.discard(key)
                self._inc(f"hand-off {key[0]}/{key[1]}")
            self._cond.notify_all()

    def _crosses_cut(self, key: Key) -> bool:
        assigner = self._assigners.get(key)
        return assigner is not None and frozenset((assigner, key[0])) in self._cuts

    def _arrive(self, key: Key) -> None:
        handoff = self._handoffs.get(key)
        if handoff is None:
            return
        if key in self._parked:  # the second side, uncounted like the first: the hand-off is over
            self._parked.discard(key)
            self._assigners.pop(key, None)
            del self._handoffs[key]
        elif handoff.arrivals == 0 and self._crosses_cut(key):
            handoff.arrivals = 1
            self._parked.add(key)
        else:
            super()._arrive(key)
            if key not in self._handoffs:
                self._assigners.pop(key, None)

    def executor_gone(self, name: str) -> None:
        """Agent ``name``'s process is gone: the task ends its assigners already have (their side of the
        hand-off came) no longer wait for its side, which the dead process cannot send and a restarted one
        will not (the task has ended). Found by lab soak: an end reported as the agent's control channel
        was cut held the lab's clock for ever."""
        with self._cond:
            self._orphaned = {k for k in self._orphaned if k in self._handoffs}  # those settled since: gone
            self._orphaned |= {key for key in self._handoffs if key[0] == name}  # see `complete`
            for key in [k for k in self._orphaned if self._handoffs[k].completed and self._handoffs[k].arrivals == 1]:
                self._settle(key)
            self._cond.notify_all()

    def complete(self, key: Key, value: Any) -> None:
        """The assigner's side; for a task whose executor was restarted meanwhile (`executor_gone`) the
        whole hand-off: the new process ends the resumed task without the old one's bookkeeping (found by
        lab soak: a field ticket failed by a restarted copilot held the lab's clock for ever)."""
        with self._cond:
            super().complete(key, value)
            handoff = self._handoffs.get(key)
            if key in self._orphaned and handoff is not None and handoff.completed and handoff.arrivals == 1:
                self._settle(key)
            if key not in self._handoffs:
                self._orphaned.discard(key)

    def _settle(self, key: Key) -> None:
        """End the hand-off ``key`` whose one side came (caller holds the lock)."""
        del self._handoffs[key]
        self._assigners.pop(key, None)
        self._orphaned.discard(key)
        if key in self._parked:
            self._parked.discard(key)
        else:
            self._dec(f"hand-off {key[0]}/{key[1]}")

    def forget(self, key: Key) -> None:
        with self._cond:
            self._assigners.pop(key, None)
            if key in self._parked:  # not counted: nothing to give back
                self._parked.discard(key)
                self._handoffs.pop(key, None)
                return
            super().forget(key)

    # ---- what agents report ---------------------------------------------------------------------
    def report(self, name: str, seq: int, busy: bool, head: float | None) -> None:
        """Agent ``name`` is busy or idle and its next instant is ``head`` (ignored when older than the last)."""
        with self._cond:
            remote = self._remotes.get(name)
            if remote is None or seq <= remote.seq:
                return
            remote.seq = seq
            if busy and not remote.busy:
                self._inc(f"agent {name}")
            elif remote.busy and not busy:
                self._dec(f"agent {name}")
            remote.busy, remote.head = busy, head
            self._changes += 1
            self._cond.notify_all()

    def push_event(self, name: str, event: Any) -> None:
        """Queue a network event for agent ``name``: in flight (time holds) until it acknowledges it."""
        with self._cond:
            remote = self._remotes.get(name)
            if remote is None or self._closed:
                return
            remote.events.append(event)
            self._inc(f"network events to {name}")
            self._cond.notify_all()

    def subscribe(self, name: str) -> bool:
        """Mark ``name`` as a listener; False when it was one already (a restarted agent subscribes again)."""
        with self._cond:
            remote = self._remotes.get(name)
            if remote is None:
                raise ControlError(f"agent {name} has not joined")
            first = not remote.subscribed
            remote.subscribed = True
            return first

    def next_for(self, name: str, ack: dict[str, Any]) -> dict[str, Any]:
        """The ``next`` long poll (module docstring)."""
        with self._cond:
            remote = self._remotes.get(name)
            if remote is None:
                return {"closed": True}
            for _ in range(int(ack.get("events", 0))):
                if remote.events:
                    remote.events.popleft()
                    self._dec(f"network events to {name}")
            if "epoch" in ack and int(ack["epoch"]) == self._epoch:
                self._ack(name)
            if "seq" in ack:  # the lock is reentrant
                self.report(name, int(ack["seq"]), bool(ack["busy"]), ack.get("head"))
            while not self._closed and self._remotes.get(name) is remote:
                # The advance first: events in the queue now were raised at the new instant (none can be
                # left from before it: time moves only when none is in flight).
                if name in self._awaiting:
                    return {"advance": self.clock.now(), "epoch": self._epoch}
                if remote.events:  # what was sent before is acknowledged above: these are all new
                    return {"events": list(remote.events)}
                self._cond.wait()
            return {"closed": True}

    def add_error(self, text: str) -> None:
        """An activity of an agent process failed (it reports it, the result lists it)."""
        with self._cond:
            self.stats.errors.append(text)

    def _ack(self, name: str) -> None:
        if name in self._awaiting:
            self._awaiting.discard(name)
            if not self._awaiting:
                self._dec(ADVANCE)

    # ---- SimKernel hooks --------------------------------------------------------------------------
    def _head(self) -> float | None:
        local = super()._head()
        heads = [r.head for r in self._remotes.values() if r.head is not None]
        if local is not None:
            heads.append(local)
        return min(heads) if heads else None

    def _advanced(self, at: float) -> None:
        if not self._remotes:
            return
        self._epoch += 1
        due = {r.name for r in self._remotes.values() if r.head is not None and r.head <= at}
        was = bool(self._awaiting)
        self._awaiting = due | {r.name for r in self._remotes.values() if not r.shared_clock}
        if self._awaiting and not was:
            self._inc(ADVANCE)
        elif was and not self._awaiting:
            self._dec(ADVANCE)
        for name in due:  # their acknowledgements tell what they scheduled next
            self._remotes[name].head = None
        self.stats.told += len(self._awaiting)
