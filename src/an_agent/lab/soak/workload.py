"""The soak's schedule put on a running lab: network faults and tickets as the scenario's events, the lab's
own faults played by `SoakChaos` (the fault functions of `an_agent.lab.chaos`), partitions by `Partition`.

Every lab fault played leaves a record (`ChaosRecord`): when (simulated, start and end), what, which
agents it touched, whether a new process was started, the SQLite integrity of a restarted agent, the
wall seconds until the agent served again, and any error.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from an_agent.lab import chaos as lab_chaos
from an_agent.lab.partition import Cuts, Partition
from an_agent.lab.soak.resources import sqlite_integrity
from an_agent.lab.soak.schedule import NETNS_KINDS, TICKET, SoakEvent
from an_agent.lab.spec import EventSpec, FaultSpec, FaultType, TicketSpec, Topology

EXIT_WAIT_S = 15.0
"""Wall seconds an agent has to notice that its control channel is gone (it then stops serving)."""


def with_workload(topology: Topology, schedule: Sequence[SoakEvent], drain: float) -> Topology:
    """``topology`` whose scenario is the schedule's network faults and tickets, ending ``drain`` simulated
    seconds after the last event at the latest (the loops' time to close)."""
    events = []
    for event in schedule:
        if event.kind == TICKET:
            events.append(EventSpec(event.at, ticket=TicketSpec(event.target, event.text)))
        elif event.kind in FaultType.__members__.values():
            fault = FaultSpec(FaultType(event.kind), event.target, repair_minutes=event.duration)
            events.append(EventSpec(event.at, fault=fault))
    last = max((e.at for e in schedule), default=0.0)
    return dataclasses.replace(topology, events=tuple(events), max_duration=last + drain)


@dataclass
class ChaosRecord:
    """One lab fault as played (module docstring); ``at``/``end`` simulated seconds since the epoch."""

    kind: str
    target: str
    at: float
    end: float
    agents: list[str]
    restarted: bool = False
    restart_wall_s: float | None = None
    integrity: dict[str, str] = field(default_factory=dict)
    detail: str = ""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class SoakFleet(Protocol):
    """What the chaos needs of the lab's agent processes (`an_agent.lab.fleet.ProcessFleet`)."""

    def kill_and_restart(self, name: str) -> tuple[int, int]: ...
    def drop_control(self, name: str) -> int: ...
    def alive(self, name: str) -> bool: ...
    def pids(self) -> dict[str, int]: ...
    def exit_report(self, name: str) -> str: ...


class Timers(Protocol):
    def call_at(self, when: float, label: str, fn: Callable[[], None]) -> object: ...
    def now(self) -> float: ...


class SoakChaos:
    """Plays the schedule's lab faults on ``fleet`` (kill, freeze, control_drop, disk_full) at their instants
    on ``kernel``; partitions and isolations through ``partition`` (``--netns``)."""

    def __init__(
        self,
        fleet: SoakFleet,
        kernel: Timers,
        agent_dir: Callable[[str], Path],
        start: float,
        partition: Callable[[Partition], None] | None = None,
        gate: Callable[[], bool] = lambda: True,
    ) -> None:
        self.gate = gate
        """Whether faults are still played (the soak's wall-clock duration has not passed)."""
        self.fleet = fleet
        self.kernel = kernel
        self.agent_dir = agent_dir
        self.start = start
        self._partition = partition
        self._lock = threading.Lock()
        self.records: list[ChaosRecord] = []
        self._timers: list[threading.Timer] = []
        self._filled: set[Path] = set()
        self._frozen: set[int] = set()
        self._restart_lock = threading.RLock()
        """One restart at a time (the watchdog's and the faults'): a restart waits for its agent to serve."""
        self._stopping = threading.Event()

    def schedule(self, events: Sequence[SoakEvent]) -> None:
        """Each lab fault of ``events`` at its instant, played then if `gate` still allows it."""
        for event in events:
            if event.is_chaos:
                self.kernel.call_at(self.start + event.at, f"soak {event.kind} {event.target}", self._player(event))

    def _player(self, event: SoakEvent) -> Callable[[], None]:
        def play() -> None:
            if not self.gate():
                return
            if event.kind in NETNS_KINDS:
                self._partition_now(event)
            else:
                self.play(event)

        return play

    def play(self, event: SoakEvent) -> ChaosRecord:
        """Play one lab fault now (`SoakEvent.kind` kill, freeze, control_drop or disk_full); its record."""
        now = self.kernel.now()
        record = ChaosRecord(event.kind, event.target, now, now, [event.target])
        with self._lock:
            self.records.append(record)
        try:
            getattr(self, f"_{event.kind}")(event, record)
        except Exception as exc:  # reported (a checker fails on it); the soak goes on with the next fault
            record.error = f"{type(exc).__name__}: {exc}"
        return record

    def _kill(self, event: SoakEvent, record: ChaosRecord) -> None:
        self._restart(event.target, record)

    def watch(self, every: float = 1.0) -> threading.Thread:
        """Start a watchdog: an agent process that exits on its own (not by a fault of ours) is recorded as a
        ``crash`` (an error: the run fails on it, with its log's tail) and started again, so that the soak
        goes on and the lab's clock does not wait for it. Stops with `release`."""

        crashed: set[int] = set()

        def loop() -> None:
            while not self._stopping.wait(every):
                for name in sorted(self.fleet.pids()):
                    with self._restart_lock:
                        if self._stopping.is_set() or self.fleet.alive(name) or self.fleet.pids()[name] in crashed:
                            continue
                        crashed.add(self.fleet.pids()[name])  # one record per process, however often it fails
                        now = self.kernel.now()
                        record = ChaosRecord("crash", name, now, now, [name], error=self.fleet.exit_report(name))
                        with self._lock:
                            self.records.append(record)
                        try:
                            self._restart(name, record)
                        except Exception as exc:  # reported; the run fails on the record's error anyway
                            record.detail += f"; not started again: {exc}"

        thread = threading.Thread(target=loop, name="soak-watchdog", daemon=True)
        thread.start()
        return thread

    def _restart(self, name: str, record: ChaosRecord) -> None:
        started = time.monotonic()
        with self._restart_lock:
            old, new = self.fleet.kill_and_restart(name)
        record.restarted = True
        record.restart_wall_s = round(time.monotonic() - started, 3)
        record.detail += f"pid {old} -> {new}"
        record.integrity = sqlite_integrity(self.agent_dir(name))
        record.end = self.kernel.now()

    def _freeze(self, event: SoakEvent, record: ChaosRecord) -> None:
        pid = self.fleet.pids()[event.target]
        with self._lock:
            self._frozen.add(pid)

        def thaw() -> None:
            lab_chaos.thaw(pid)
            with self._lock:
                self._frozen.discard(pid)
            record.end = self.kernel.now()

        lab_chaos.freeze(pid)
        self._later(event.duration, thaw)
        record.detail = f"pid {pid} stopped for {event.duration:g} s (wall)"

    def _control_drop(self, event: SoakEvent, record: ChaosRecord) -> None:
        """Cut the agent's control channel. An agent cannot go on without its lab (it learns time, its
        network and its peers there): it stops serving; the lab starts it again (killing it if it has not
        stopped within `EXIT_WAIT_S`, e.g. on a loaded machine, as a lab would a hung agent)."""
        with self._restart_lock:  # its exit is ours, not a crash for the watchdog
            cut = self.fleet.drop_control(event.target)
            deadline = time.monotonic() + EXIT_WAIT_S
            while self.fleet.alive(event.target) and time.monotonic() < deadline:
                time.sleep(0.1)
            alive = self.fleet.alive(event.target)
            how = f"still running after {EXIT_WAIT_S:g} s" if alive else "it stopped serving"
            record.detail = f"{cut} connection(s) cut; {how}; started again: "
            self._restart(event.target, record)

    def _disk_full(self, event: SoakEvent, record: ChaosRecord) -> None:
        directory = self.agent_dir(event.target)
        written = lab_chaos.fill(directory)
        with self._lock:
            self._filled.add(directory)

        def free() -> None:
            lab_chaos.free(directory)
            with self._lock:
                self._filled.discard(directory)
            record.end = self.kernel.now()

        self._later(event.duration, free)
        record.detail = f"{written // 1024} KiB of ballast for {event.duration:g} s (wall)"

    def _later(self, seconds: float, fn: Callable[[], None]) -> None:
        timer = threading.Timer(seconds, fn)
        timer.daemon = True
        with self._lock:
            self._timers.append(timer)
        timer.start()

    def _partition_now(self, event: SoakEvent) -> None:
        """Cut (now) and heal (``duration`` simulated seconds later) two agents, or one from all the others."""
        if self._partition is None:
            return
        if event.kind == "partition":
            a, b = event.target.split(",")
            cuts = [Partition(a, b, 0.0, event.duration)]
        else:
            others = sorted(n for n in self.fleet.pids() if n != event.target)
            cuts = [Partition(event.target, other, 0.0, event.duration) for other in others]
        now = self.kernel.now()
        agents = sorted({n for c in cuts for n in (c.a, c.b)})
        with self._lock:
            self.records.append(ChaosRecord(event.kind, event.target, now, now + event.duration, agents))
        for cut in cuts:
            self._partition(cut)

    def release(self) -> None:
        """End every freeze and give back every filled disk now (the soak is over, or failed); stop the watchdog."""
        self._stopping.set()
        with self._lock:
            timers, frozen, filled = list(self._timers), set(self._frozen), set(self._filled)
        for timer in timers:
            timer.cancel()
        for pid in frozen:
            lab_chaos.thaw(pid)
        for directory in filled:
            lab_chaos.free(directory)


def partitioner(lab: Any) -> Callable[[Partition], None] | None:
    """How `SoakChaos` cuts two agents of ``lab`` apart (``--netns`` only; None without it)."""
    if lab.net is None:
        return None
    cuts = Cuts(lab.net, lab.journal, lab.kernel)
    return lambda fault: fault.schedule(lab.kernel, lab.kernel.now(), cuts)
