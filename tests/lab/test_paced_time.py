"""Paced time (`SimKernel.set_pace`, ``lab run|up --pace N``): the lab's clock follows the wall clock."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from an_agent.lab.kernel import SimKernel


def test_a_paced_kernel_plays_instants_no_faster_than_its_pace_and_moves_its_clock_between_them() -> None:
    kernel = SimKernel(1000.0)
    kernel.set_pace(100.0)  # 100 simulated seconds per wall second
    seen: list[tuple[float, float]] = []
    began = time.monotonic()
    kernel.call_at(1050.0, "at +50 s", lambda: seen.append((kernel.now(), time.monotonic() - began)))
    try:
        assert kernel.run() == "idle"
    finally:
        kernel.close()
    ((when, wall),) = seen
    assert when == 1050.0
    assert wall >= 0.45  # 50 simulated seconds at 100 per second: not before half a wall second


def test_between_instants_the_paced_clock_follows_the_wall_clock() -> None:
    kernel = SimKernel(0.0)
    kernel.set_pace(50.0)
    runner = threading.Thread(target=kernel.run, kwargs={"forever": True})
    runner.start()
    try:
        time.sleep(0.6)
        moved = kernel.now()
    finally:
        kernel.close()
        runner.join(5)
    assert 15.0 <= moved <= 60.0  # ~30 simulated seconds, with nothing scheduled at all


def test_lock_step_stays_the_default_and_a_pace_must_be_positive() -> None:
    kernel = SimKernel(0.0)
    assert kernel.pace is None
    kernel.call_at(86400.0, "a day later", lambda: None)
    try:
        assert kernel.run() == "idle" and kernel.now() == 86400.0
        with pytest.raises(ValueError, match="above 0"):
            kernel.set_pace(0)
    finally:
        kernel.close()


def test_the_command_line_refuses_a_pace_that_is_not_a_positive_number(capsys: pytest.CaptureFixture[str]) -> None:
    from an_agent.cli import main

    topology = str(Path(__file__).resolve().parents[2] / "topologies" / "cross-domain-fault.yaml")
    for bad in ("0", "-3", "fast"):
        with pytest.raises(SystemExit) as refused:
            main(["lab", "run", topology, "--pace", bad])
        assert refused.value.code == 2
        assert "--pace" in capsys.readouterr().err


def test_agents_in_other_processes_follow_the_paced_clock_between_instants() -> None:
    from an_agent.lab.conductor import LabKernel

    kernel = LabKernel(0.0)
    kernel.set_pace(100.0)
    kernel.join("agent-a")  # an agent process, as the control channel's hello makes it
    runner = threading.Thread(target=kernel.run, kwargs={"forever": True})
    runner.start()
    try:
        first = kernel.next_for("agent-a", {})  # its clock thread's long poll
        second = kernel.next_for("agent-a", {"epoch": first["epoch"], "seq": 1, "busy": False, "head": None})
    finally:
        kernel.close()
        runner.join(5)
    assert 0.0 < first["advance"] < second["advance"]  # nothing scheduled, yet its clock moves with the lab's
    assert kernel.next_for("agent-a", {}) == {"closed": True}
