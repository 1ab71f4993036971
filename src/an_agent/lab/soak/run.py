"""`run_soak`: a topology under the soak's workload and chaos for a while, watched by the checkers.

::

    result = run_soak(load_topology(path), state_dir, SoakOptions(duration=1800, seed=1, chaos=True))
    result.ok          # every checker held

The lab runs paced (``pace`` simulated seconds per wall second, default `DEFAULT_PACE`): the schedule is
drawn in simulated time over ``duration x pace`` and played for ``duration`` wall seconds; a lab that
cannot keep up (a loaded machine) plays fewer of its events, never for longer (the report counts those
played). Then the lab goes lock-step and the loops get up to `DRAIN_S` simulated seconds to close. The checkers
run every ``check_every`` wall seconds along the way (the first failure of each is kept, with its wall
time) and once at the end on every agent's durable state, read after the agents stopped.

With ``disk_full`` faults (root only) every agent's state directory is a small tmpfs, unmounted at the end
whatever happens.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from an_agent.errors import AnAgentError, ConfigError
from an_agent.lab import chaos as lab_chaos
from an_agent.lab.fleet import ProcessFleet
from an_agent.lab.kernel import LabStall
from an_agent.lab.processes import LOG_FILE
from an_agent.lab.runner import Lab
from an_agent.lab.soak.checkers import run_checkers
from an_agent.lab.soak.evidence import Evidence, read_durable
from an_agent.lab.soak.resources import ResourceSampler, sqlite_integrity
from an_agent.lab.soak.schedule import SoakEvent, draw_schedule
from an_agent.lab.soak.verdict import Verdict
from an_agent.lab.soak.workload import SoakChaos, partitioner, with_workload
from an_agent.lab.spec import Topology

log = logging.getLogger(__name__)

DEFAULT_PACE = 60.0
"""Simulated seconds per wall second: a wall minute is a simulated hour (field repairs take 1-2 minutes)."""
DRAIN_S = 4 * 3600.0
"""Simulated seconds after the last event for the loops to close (the longest field repair and more)."""
TMPFS_MB = 64


@dataclass(frozen=True)
class SoakOptions:
    """``lab soak``'s options (see its ``--help``)."""

    duration: float
    """Wall seconds of faults."""
    seed: int = 1
    chaos: bool = True
    rate: float = 8.0
    """Faults (network and lab) per wall minute."""
    netns: bool = False
    pace: float = DEFAULT_PACE
    stall_timeout: float = 300.0
    """Wall seconds without progress, work in flight, before the run counts as stalled. Above TCP's longest
    retransmission timeout (120 s): a task's end queued during a partition reaches its assigner only at
    the executor's next retransmission after the heal (found by lab soak in ``--netns``: a 120 s limit
    declared a stall just as the backoff was running out)."""
    check_every: float = 60.0
    sample_every: float = 5.0
    disk_full: bool | None = None
    """Play ``disk_full`` faults (a tmpfs per agent): None for when running as root."""


@dataclass
class SoakResult:
    """What a soak did and what the checkers said (`an_agent.lab.soak.report` renders it)."""

    topology: str
    options: SoakOptions
    schedule: list[SoakEvent]
    evidence: Evidence
    verdicts: list[Verdict]
    along_the_way: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per checker that failed during the run: its first failure (``wall`` seconds, ``problem``)."""
    end_reason: str = ""
    wall_seconds: float = 0.0
    leftovers: list[str] = field(default_factory=list)
    interrupted: BaseException | None = None
    """Ctrl-C or SIGTERM during the run: judged as far as it got; the caller reports, then raises it again."""

    @property
    def ok(self) -> bool:
        return all(v.ok for v in self.verdicts)


def run_soak(
    topology: Topology, state_dir: Path, options: SoakOptions, on_phase: Callable[[str], None] | None = None
) -> SoakResult:
    """Run the soak (module docstring); every agent, mount and namespace is gone when this returns."""
    phase = on_phase or (lambda _: None)
    if options.duration <= 0:
        raise ConfigError(f"--duration must be more than 0 seconds, not {options.duration:g}")
    disk_full = os.geteuid() == 0 if options.disk_full is None else options.disk_full
    schedule = draw_schedule(
        topology,
        options.seed,
        duration=options.duration,
        pace=options.pace,
        rate=options.rate,
        chaos=options.chaos,
        netns=options.netns,
        disk_full=disk_full,
    )
    soaked = with_workload(topology, schedule, DRAIN_S)
    started = [a.name for a in topology.agents if a.external is None]
    state_dir.mkdir(parents=True, exist_ok=True)
    mounted: list[Path] = []
    result = SoakResult(topology.name, options, schedule, Evidence(topology.start_time, topology.start_time, False), [])
    wall0 = time.monotonic()
    try:
        if disk_full:
            for name in started:
                directory = state_dir / "agents" / name
                lab_chaos.mount_tmpfs(directory, TMPFS_MB)
                mounted.append(directory)
        _play(soaked, state_dir, options, schedule, result, phase)
    finally:
        _keep_logs(state_dir, started)  # before the mounts go, with the logs on them
        for directory in mounted:
            problem = lab_chaos.unmount(directory)
            if problem:
                result.leftovers.append(problem)
    result.wall_seconds = round(time.monotonic() - wall0, 1)
    return result


LOGS = "agent-logs"
"""Where a soak keeps a copy of each agent's log (``STATE/agent-logs/NAME.log``): its state directory may
be a tmpfs that goes at the end."""


def _keep_logs(state_dir: Path, agents: list[str]) -> None:
    logs = state_dir / LOGS
    logs.mkdir(mode=0o700, exist_ok=True)
    for name in agents:
        with contextlib.suppress(OSError):
            shutil.copyfile(state_dir / "agents" / name / LOG_FILE, logs / f"{name}.log")
            (logs / f"{name}.log").chmod(0o600)


def _play(
    topology: Topology,
    state_dir: Path,
    options: SoakOptions,
    schedule: list[SoakEvent],
    result: SoakResult,
    phase: Callable[[str], None],
) -> None:
    lab = Lab(topology, state_dir, netns=options.netns, pace=options.pace, stall_timeout=options.stall_timeout)
    sampler: ResourceSampler | None = None
    watcher: _Watcher | None = None
    chaos: SoakChaos | None = None
    wall: _WallClock | None = None
    try:
        phase(f"starting {len(lab.local_agents)} agents")
        lab.start()
        assert isinstance(lab.fleet, ProcessFleet)
        wall = _WallClock(options.duration, lambda: lab.kernel.set_pace(None))
        lab.event_gate = lambda event: wall.open
        chaos = SoakChaos(
            lab.fleet, lab.kernel, lab.agent_dir, topology.start_time, partitioner(lab), lambda: wall.open
        )
        lab.schedule_scenario()
        chaos.schedule(schedule)
        last = topology.start_time + max((e.at for e in schedule), default=0.0)
        lab.kernel.call_at(last, "soak: the last event played, drain lock-step", lambda: lab.kernel.set_pace(None))
        sampler = ResourceSampler(lab.fleet.pids, lab.agent_dir, options.sample_every).start()
        watcher = _Watcher(lambda: collect_evidence(lab, chaos, sampler, final=False), options.check_every)
        watcher.start()
        wall.start()
        chaos.watch()
        faults = sum(1 for e in schedule if e.is_fault)
        phase(f"soaking for {options.duration:g} s (seed {options.seed}, {faults} faults drawn); then the loops close")
        try:
            result.end_reason = lab.play()
        except LabStall as exc:
            result.end_reason = f"stalled: {exc}"
        except (KeyboardInterrupt, SystemExit) as exc:  # a long run stopped by hand keeps its report
            result.end_reason = "interrupted (Ctrl-C or SIGTERM): judged as far as it got"
            result.interrupted = exc
    except AnAgentError as exc:
        result.end_reason = f"failed: {exc}"
        raise
    finally:
        if wall is not None:
            wall.cancel()
        if watcher is not None:
            watcher.stop()
            result.along_the_way = watcher.first_failures
        if chaos is not None:
            chaos.release()
        if sampler is not None:
            sampler.stop()
        phase("stopping the agents")
        result.leftovers += lab.stop()
    live = collect_evidence(lab, chaos, sampler, final=True)
    for name in [a.name for a in lab.local_agents]:
        live.tasks[name], live.logs[name] = read_durable(lab.agent_dir(name))
        live.integrity[name] = sqlite_integrity(lab.agent_dir(name))
    result.evidence = live
    live.end_reason = result.end_reason
    result.verdicts = run_checkers(live)
    threads, ports = lab.leftovers()
    result.leftovers += threads + ports


def collect_evidence(
    lab: Lab, chaos: SoakChaos | None = None, sampler: ResourceSampler | None = None, *, final: bool
) -> Evidence:
    """`Evidence` of ``lab`` as it is now: its journal, network, the chaos played and the samples taken.

    Along the way (not ``final``) with each agent's durable state read as it is (the agents keep
    writing); at the end the caller reads it after the agents stopped (`read_durable`).
    """
    start = lab.topology.start_time
    faults = [{**r.to_dict(), "repair_minutes": r.spec.repair_minutes} for r in lab.network.faults()]
    evidence = Evidence(
        start=start,
        end=lab.kernel.now(),
        final=final,
        notes=[n.to_dict() for n in lab.journal.notes()],
        exchanges=[e.to_dict() for e in lab.journal.exchanges()],
        faults=faults,
        changes=[c.to_dict() for c in lab.network.changes()],
        chaos=[r.to_dict() for r in (chaos.records if chaos is not None else [])],
        samples=[s.to_dict() for s in (sampler.samples if sampler is not None else [])],
        wall=0.0 if sampler is None else sampler.elapsed(),
    )
    if not final:  # along the way: the durable state as it is now (read-only; agents keep writing)
        for name in [a.name for a in lab.local_agents]:
            with contextlib.suppress(Exception):
                evidence.tasks[name], evidence.logs[name] = read_durable(lab.agent_dir(name))
    return evidence


class _Watcher:
    """Runs the checkers every ``every`` wall seconds on the evidence so far; keeps each one's first failure."""

    def __init__(self, evidence: Callable[[], Evidence], every: float) -> None:
        self._evidence = evidence
        self._every = every
        self._stop = threading.Event()
        self._started = time.monotonic()
        self.first_failures: dict[str, dict[str, Any]] = {}
        self._thread = threading.Thread(target=self._loop, name="soak-checkers", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self._every):
            try:
                verdicts = run_checkers(self._evidence())
            except Exception:  # a read racing the agents' writes: the next round reads again
                log.debug("soak checkers along the way failed", exc_info=True)
                continue
            for verdict in verdicts:
                if not verdict.ok and verdict.name not in self.first_failures:
                    wall = round(time.monotonic() - self._started, 1)
                    self.first_failures[verdict.name] = {"wall": wall, **verdict.to_dict()}

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30.0)


class _WallClock:
    """The soak's duration in wall-clock time: `open` until it has passed, then ``at_end`` (lock-step)."""

    def __init__(self, seconds: float, at_end: Callable[[], None]) -> None:
        self._seconds = seconds
        self._ended = threading.Event()
        self._at_end = at_end
        self._timer = threading.Timer(seconds, self._end)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    @property
    def open(self) -> bool:
        return not self._ended.is_set()

    def _end(self) -> None:
        self._ended.set()
        self._at_end()

    def cancel(self) -> None:
        self._timer.cancel()
