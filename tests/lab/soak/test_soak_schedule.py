"""The soak's schedule is drawn from its seed: the same seed gives the same schedule, faults of every kind
the topology's agents handle (and of the lab with chaos), no element hit again within its cool-down."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from an_agent.lab.soak.schedule import (
    COOLDOWN,
    NETWORK_KINDS,
    TICKET,
    SoakEvent,
    draw_schedule,
    handled_fault_types,
)
from an_agent.lab.spec import Topology
from an_agent.lab.topology import load_topology

TOPOLOGIES = Path(__file__).resolve().parents[3] / "topologies"


@pytest.fixture(scope="module")
def topology() -> Topology:
    return load_topology(TOPOLOGIES / "cross-domain-fault.yaml")


def draw(topology: Topology, seed: int, **options: Any) -> list[SoakEvent]:
    return draw_schedule(
        topology, seed, **{"duration": 1800, "pace": 60, "rate": 8, "chaos": True, "netns": False, **options}
    )


def test_the_same_seed_draws_the_same_schedule_and_another_seed_another(topology: Topology) -> None:
    assert draw(topology, 1) == draw(topology, 1)
    assert draw(topology, 1) != draw(topology, 2)


def test_thirty_minutes_at_the_default_rate_hold_more_than_200_faults_of_every_kind(topology: Topology) -> None:
    for netns in (False, True):
        schedule = draw(topology, 1, netns=netns)
        kinds = Counter(e.kind for e in schedule if e.is_fault)
        assert sum(kinds.values()) >= 200
        expected = {*handled_fault_types(topology), "kill", "freeze", "control_drop", "disk_full"}
        expected |= {"partition", "isolate"} if netns else set()
        assert set(kinds) == expected
        assert all(0 <= e.at < 1800 * 60 for e in schedule)
        assert any(e.kind == TICKET for e in schedule)


def test_only_the_kinds_the_topology_handles_and_partitions_only_in_namespaces(topology: Topology) -> None:
    # no optimization agent here: nobody would notice a misconfigured cell, so none is injected
    assert set(handled_fault_types(topology)) == set(NETWORK_KINDS) - {"cell_misconfiguration"}
    kinds = {e.kind for e in draw(topology, 3, netns=False, disk_full=False)}
    assert not kinds & {"partition", "isolate", "disk_full"}
    assert {e.kind for e in draw(topology, 3, chaos=False)} <= {*NETWORK_KINDS, TICKET}


def test_no_element_is_hit_again_within_its_cool_down(topology: Topology) -> None:
    last: dict[str, float] = {}
    for event in draw(topology, 5, rate=30):
        if event.kind in NETWORK_KINDS:
            assert event.at - last.get(event.target, -COOLDOWN) >= COOLDOWN
            last[event.target] = event.at


def test_the_cli_explains_itself_and_refuses_a_bad_duration() -> None:
    run = [sys.executable, "-m", "an_agent.cli", "lab", "soak"]
    shown = subprocess.run([*run, "--help"], capture_output=True, text=True, check=False)
    assert shown.returncode == 0 and "--seed" in shown.stdout and "Exit code 0 when every checker held" in shown.stdout
    bad = subprocess.run(
        [*run, str(TOPOLOGIES / "cross-domain-fault.yaml"), "--duration", "soon"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (
        bad.returncode == 2
        and "expected a duration such as 90s, 30m or 2h" in bad.stderr
        and "Traceback" not in bad.stderr
    )
