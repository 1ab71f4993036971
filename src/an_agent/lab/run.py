"""`run_topology`: the whole ``an-agent lab run`` — start, play, read back, stop, check, result."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from an_agent.agents.peers import Exchange
from an_agent.lab.journal import Note
from an_agent.lab.outcome import build_result
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
) -> LabResult:
    """Run ``topology`` to the end of its closed loop and return the result (`build_result`).

    Every agent is stopped before this returns, whatever happens; `LabStall` and start-up errors
    propagate after the stop. Agents run as processes of their own unless ``in_process``.
    """
    phase = on_phase or (lambda _: None)
    lab = Lab(
        topology,
        state_dir,
        on_note=on_note,
        on_exchange=on_exchange,
        stall_timeout=stall_timeout,
        in_process=in_process,
    )
    try:
        phase(f"starting {len(topology.agents)} agents")
        lab.start()
        phase("playing the scenario: " + ", ".join(f"{a.spec.name} on {a.port}" for a in lab.agents.values()))
        lab.schedule_scenario()
        lab.play()
        phase("reading back the tasks of every agent")
        tasks = lab.read_tasks()
    finally:
        lab.stop()
    threads, ports = lab.leftovers()
    phase("stopped")
    return build_result(lab, tasks, threads, ports)
