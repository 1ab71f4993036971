"""`run_topology`: the whole ``an-agent lab run`` — start, play, read back, stop, check, result."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from an_agent.agents.peers import Exchange
from an_agent.errors import ConfigError
from an_agent.lab.chaos import ChaosPlayer, ChaosSpec
from an_agent.lab.fleet import ProcessFleet
from an_agent.lab.journal import Note
from an_agent.lab.outcome import build_result
from an_agent.lab.partition import Cuts, Partition
from an_agent.lab.result import LabResult
from an_agent.lab.runner import Lab
from an_agent.lab.spec import Topology


def run_topology(
    topology: Topology,
    state_dir: Path,
    *,
    on_note: Callable[[Note], None] | None = None,
    on_exchange: Callable[[Exchange], None] | None = None,
    on_phase: Callable[[str], None] | None = None,
    stall_timeout: float = 60.0,
    in_process: bool = False,
    chaos: Sequence[ChaosSpec] = (),
    netns: bool = False,
    partitions: Sequence[Partition] = (),
    a2a_tls: bool = True,
    pace: float | None = None,
    otlp: str | None = None,
) -> LabResult:
    """Run ``topology`` to the end of its closed loop and return the result (`build_result`).

    Every agent is stopped before this returns, whatever happens; `LabStall` and start-up errors
    propagate after the stop. Agents run as processes of their own unless ``in_process``; with ``netns``
    each in a network namespace of its own (`an_agent.lab.netns`). A2A links are HTTPS with certificates the
    lab makes (`an_agent.lab.certs`) unless ``a2a_tls`` is False.

    ``chaos``: faults of the lab itself (`an_agent.lab.chaos`), played at their instants; ``partitions``
    (``netns`` only, `an_agent.lab.partition`) cut pairs of agents off from each other for a while, and the
    journal notes each cut and heal (agent ``chaos``, kinds ``partition`` and
    ``partition_healed``). The result's ``chaos`` lists each with the time to
    restore of this run and of the same run without them (played first, in one process: it has the same
    outcome as with agent processes).

    ``pace``: the lab's clock follows the wall clock at that many simulated seconds per wall second
    (`SimKernel.set_pace`) instead of lock-step. ``otlp``: the collector every agent process sends its spans
    to (``--otlp``; the caller exports the lab process's own, `an_agent.otlp`).
    """
    if chaos and in_process:
        raise ConfigError("--chaos kills agent processes: it cannot be combined with --in-process")
    if partitions and not netns:
        raise ConfigError("--chaos partition:... needs --netns (the agents' traffic is cut in their namespaces)")
    for fault in partitions:
        fault.check({a.name for a in topology.agents})
    phase = on_phase or (lambda _: None)
    lab = Lab(
        topology,
        state_dir,
        on_note=on_note,
        on_exchange=on_exchange,
        stall_timeout=stall_timeout,
        in_process=in_process,
        netns=netns,
        a2a_tls=a2a_tls,
        pace=pace,
        otlp=otlp,
    )
    try:
        outside = [a.name for a in topology.agents if a.external is not None]
        started = len(topology.agents) - len(outside)
        phase(f"starting {started} agents" + (f" ({', '.join(outside)}: external, not started)" if outside else ""))
        lab.start()
        phase("playing the scenario: " + ", ".join(f"{a.spec.name} on {a.port}" for a in lab.agents.values()))
        lab.schedule_scenario()
        players = []
        for spec in chaos:
            assert isinstance(lab.fleet, ProcessFleet)
            players.append(ChaosPlayer(spec, lab.fleet))
            lab.kernel.call_at(topology.start_time + spec.at, f"chaos {spec.kind} {spec.agent}", players[-1])
        if partitions:
            assert lab.net is not None  # made by start with netns
            cuts = Cuts(lab.net, lab.journal, lab.kernel)
            for fault in partitions:
                fault.schedule(lab.kernel, topology.start_time, cuts)
        lab.play()
        phase("reading back the tasks of every agent")
        tasks = lab.read_tasks()
    finally:
        lab.stop()
    threads, ports = lab.leftovers()
    phase("stopped")
    result = build_result(lab, tasks, threads, ports)
    if chaos or partitions:
        phase("the same run without chaos, for comparison")
        reference = run_topology(topology, state_dir / "without-chaos", in_process=True, stall_timeout=stall_timeout)
        with_chaos, without = result.outcome.time_to_restore_s, reference.outcome.time_to_restore_s
        cost = None if with_chaos is None or without is None else round(with_chaos - without, 3)
        restore = {"with": with_chaos, "without": without, "cost_s": cost}
        result.chaos = [{**p.event.to_dict(), "time_to_restore_s": restore} for p in players]
        result.chaos += [{**fault.to_json(), "time_to_restore_s": restore} for fault in partitions]
    return result
