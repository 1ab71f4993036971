"""The service intent: its structure, its fulfilment, and the intent shares over NETCONF.

The energy-saving agent is served on its own from ``topologies/service-intent.yaml`` (as ``an-agent serve
--topology`` does) and spoken to over real NETCONF: it takes its share of the intent, keeps a
suspension within the intent's energy target (counter-proposal per cell), is relaxed (counter-proposal
with the value it needs) and restored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agentsupport import served

from an_agent.agents import payloads
from an_agent.agents.base import LabBehaviour
from an_agent.agents.environment import AreaKpis
from an_agent.agents.intent import Expectation, Target, fulfilment, intent_problems, parse_intent
from an_agent.errors import ConfigError, SchemaError
from an_agent.lab.network import SimNetwork
from an_agent.lab.topology import load_topology
from an_agent.model import CommuType, NegotiationRequest, NegotiationType, Task, TaskStatus, build_prompt
from an_agent.nc.agent_client import AgentClient

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
INTENT_LAB = TOPOLOGIES / "service-intent.yaml"
NEIGHBOURS_OF_SITE_06 = [f"CELL-{s:02d}0{c}" for s in (1, 2, 3, 5, 7, 9, 10, 11) for c in (1, 2, 3)]


def good_intent() -> dict[str, Any]:
    return {
        "intent_id": "INT-T1",
        "area": "metro",
        "observation_minutes": 60,
        "expectations": [
            {
                "expectation_id": "EXP-COVERAGE",
                "verb": "ENSURE",
                "object": "metro",
                "targets": [{"name": "coverage_percent", "condition": "IS_GREATER_THAN", "value": 92}],
                "context": {"priority": 1, "max_breach_minutes": 10},
            },
            {
                "expectation_id": "EXP-ENERGY",
                "targets": [{"name": "energy_kwh_per_day", "condition": "IS_LESS_THAN", "value": 900}],
                "context": {"priority": 2, "relax_up_to": 1000},
            },
        ],
    }


# ---- the intent's structure --------------------------------------------------------------------------


def test_an_intent_reads_as_expectations_with_targets_and_context() -> None:
    intent = parse_intent(good_intent())
    assert [e.expectation_id for e in intent.expectations] == ["EXP-COVERAGE", "EXP-ENERGY"]
    coverage, energy = intent.expectations
    assert coverage.targets == (Target("coverage_percent", "IS_GREATER_THAN", 92.0),)
    assert (coverage.verb, coverage.priority, coverage.max_breach_minutes) == ("ENSURE", 1, 10.0)
    assert (energy.verb, energy.object, energy.relax_up_to) == ("ENSURE", "metro", 1000.0)


def test_every_structural_problem_of_an_intent_is_named() -> None:
    raw = good_intent()
    raw["expectations"][0]["targets"] = [{"name": "throughput", "condition": "IS_ABOUT", "value": "high"}]
    raw["expectations"][1]["expectation_id"] = "EXP-COVERAGE"
    raw["expectations"][1]["object"] = "south"
    raw["expectations"][1]["context"]["priority"] = 0
    with pytest.raises(SchemaError) as info:
        parse_intent(raw)
    problems = "\n".join(info.value.problems)
    for expected in (
        "expectations[0].targets[0].name: 'throughput' is not one of",
        "expectations[0].targets[0].condition: 'IS_ABOUT'",
        "expectations[0].targets[0].value: expected a number",
        "expectations[1].object: 'south' is not the intent's area 'metro'",
        "expectations[1].context.priority: expected an integer >= 1",
        "expectation ids must be unique",
    ):
        assert expected in problems
    # the template's own checks come first: a key of the wrong type, a bad id
    assert any("intent_id" in p for p in intent_problems({**good_intent(), "intent_id": "metro intent"}))


def test_a_bad_intent_is_a_topology_error_with_its_line(tmp_path: Path) -> None:
    text = INTENT_LAB.read_text(encoding="utf-8").replace("condition: IS_GREATER_THAN, value: 92", "value: 92")
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_topology(path)
    assert "agents[0].options.intent: expectations[0].targets[0].condition: None is not one of" in str(info.value)
    assert f"{path}:" in str(info.value)


# ---- fulfilment -------------------------------------------------------------------------------------


def kpis(without: float, kw: float = 35.0) -> AreaKpis:
    return AreaKpis(users_total=1000, users_without_service=without, energy_kw=kw)


def test_a_target_missed_longer_than_allowed_is_not_fulfilled() -> None:
    expectation = Expectation(
        "EXP-U", "ENSURE", "metro", (Target("users_without_service", "IS_LESS_THAN", 100),), 1, 10
    )
    short_dip = [(0.0, kpis(0)), (600.0, kpis(300)), (1080.0, kpis(0))]  # 8 minutes above the target
    long_dip = [(0.0, kpis(0)), (600.0, kpis(300)), (1320.0, kpis(0))]  # 12 minutes
    ok = fulfilment(expectation, short_dip, 0.0, 3600.0)
    assert ok.fulfilled and ok.targets[0].breach_minutes == 8 and ok.targets[0].worst == 300
    late = fulfilment(expectation, long_dip, 0.0, 3600.0)
    assert not late.fulfilled and late.targets[0].breach_minutes == 12
    unrepaired = fulfilment(expectation, short_dip[:2], 0.0, 660.0)  # missed at the end of the window
    assert not unrepaired.fulfilled


def test_energy_per_day_is_judged_on_its_average_over_the_window() -> None:
    expectation = Expectation("EXP-E", "DELIVER", "metro", (Target("energy_kwh_per_day", "IS_LESS_THAN", 900),))
    peak = [(0.0, kpis(0, 35.0)), (600.0, kpis(0, 45.0)), (1200.0, kpis(0, 35.0))]  # 840, 1080, 840 kWh/day
    result = fulfilment(expectation, peak, 0.0, 3600.0)
    assert result.fulfilled and result.targets[0].worst == pytest.approx(1080)
    assert result.targets[0].judged_value == pytest.approx((840 * 50 + 1080 * 10) / 60)
    assert not fulfilment(expectation, peak, 600.0, 1200.0).fulfilled  # the peak alone


# ---- the energy-saving agent's share, over NETCONF ---------------------------------------------------


@pytest.fixture
def energy(tmp_path: Path) -> Iterator[tuple[AgentClient, LabBehaviour, int]]:
    with served(INTENT_LAB, "energy-saving", tmp_path / "es") as agent:
        yield agent


def intent_task(
    action: str, value: float, cells: list[str] | None = None, duty: str = "energy_saving"
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "intent_id": "INT-METRO1",
        "action": action,
        "duty": duty,
        "expectation_ids": ["EXP-ENERGY"],
        "area": "metro",
        "targets": [{"name": "energy_kwh_per_day", "condition": "IS_LESS_THAN", "value": value}],
        # Served on its own, the agent's clock jumps to its next timer whenever it is idle: the relaxation's
        # end (a timer) comes at once, the share's (no timer) stays ahead of it.
        "until": "2030-01-01T00:00:00Z" if action == "relax" else "2031-01-01T00:00:00Z",
    }
    if cells:
        payload["cell_ids"] = cells
    return payloads.envelope("intent_task_v1", payload)


def negotiate(client: AgentClient, task_id: str, value: dict[str, Any]) -> Any:
    prompt = payloads.proposal("metro", "Intent share", value)
    return client.negotiate(NegotiationRequest(task_id, NegotiationType.FEASIBILITY, [prompt], "service-intent"))


def assign(client: AgentClient, port: int, task_id: str, value: dict[str, Any]) -> dict[str, Any]:
    """taskAssign ``value``; the task's JSON result once finished."""
    task = assign_task(client, port, task_id, value, TaskStatus.FINISHED)
    assert task.result is not None and task.result.data is not None
    result: dict[str, Any] = json.loads(task.result.data)
    return result


def assign_task(client: AgentClient, port: int, task_id: str, value: dict[str, Any], ends: TaskStatus) -> Task:
    """taskAssign ``value`` and wait (on a second session) for its end, which must be ``ends``; the task."""
    param = payloads.data_param(f"{task_id}.payload", value, "intent share")
    with AgentClient.connect("127.0.0.1", port, username="admin", password="admin") as watcher:
        events = watcher.watch(task_id, timeout=120)
        client.assign_task(
            Task(
                task_id,
                send_from="service-intent",
                commu_type=CommuType.TASK_ASSIGN,
                content=build_prompt("metro", "Intent share"),
                msg_data=[param.id],
            ),
            [param],
        )
        assert [e.status for e in events][-1] == ends
    return client.get_task(task_id)


def test_the_energy_agent_keeps_within_its_share_of_the_intent(
    energy: tuple[AgentClient, LabBehaviour, int],
) -> None:
    client, behaviour, port = energy
    network = behaviour.env.network
    suspend = payloads.envelope(
        "energy_saving_adjust_v1",
        {
            "cell_ids": NEIGHBOURS_OF_SITE_06,
            "action": "suspend",
            "duration_minutes": 60,
            "reason": "coverage_compensation",
        },
    )
    # no intent share yet: any suspension is feasible
    assert negotiate(client, "s0", suspend).feasible is True

    share = assign(client, port, "share", intent_task("assure", 940))
    assert share["duty"] == "energy_saving" and share["targets"][0]["value"] == 940

    # within the share: 24 cells would break 940 kWh/day; the counter chooses per cell, most users first:
    # suspend where that fits, else reduce (half the saving) where that fits, else keep
    answer = negotiate(client, "s1", suspend)
    assert answer.feasible is False and "above the 940 kWh/day target of INT-METRO1" in (answer.reason or "")
    counter = payloads.prompt_payload(answer.counter_proposal or "")
    assert counter is not None
    kept = counter["payload"]["cell_ids"]
    assert 0 < len(kept) < len(NEIGHBOURS_OF_SITE_06) and set(kept) < set(NEIGHBOURS_OF_SITE_06)
    users = {c: network.cell(c).users for c in NEIGHBOURS_OF_SITE_06}
    assert min(users[c] for c in kept) >= max(users[c] for c in NEIGHBOURS_OF_SITE_06 if c not in kept)
    halved = counter["payload"].get("reduce_cell_ids") or []
    assert set(halved) < set(kept) and counter["payload"].get("energy_saving_target_percent", 15) == 15
    full = [c for c in kept if c not in halved]
    kw = network.area_kpis(["metro"]).energy_kw + network.saving_cost_kw(full) + network.saving_cost_kw(halved) / 2
    assert kw * 24 <= 940
    # nothing more fits: not a further cell suspended, nor reduced
    left = [c for c in NEIGHBOURS_OF_SITE_06 if c not in kept]
    assert all(kw + network.saving_cost_kw([c]) / 2 > 940 / 24 for c in left)
    assert negotiate(client, "s1", counter).feasible is True
    # a reduction gives up only part of the saving: more cells fit than for a suspension
    reduce = payloads.envelope(
        "energy_saving_adjust_v1",
        {"cell_ids": NEIGHBOURS_OF_SITE_06, "action": "reduce", "energy_saving_target_percent": 10},
    )
    reduced = payloads.prompt_payload(negotiate(client, "s1r", reduce).counter_proposal or "")
    assert reduced is not None and len(kept) < len(reduced["payload"]["cell_ids"]) < len(NEIGHBOURS_OF_SITE_06)

    # a relaxation too small to suspend the rest: counter-proposal with the value that leaves room
    rest = sorted(set(NEIGHBOURS_OF_SITE_06) - set(kept))
    small = negotiate(client, "r1", intent_task("relax", 987, rest))
    assert small.feasible is False and "leaves no room" in (small.reason or "")
    relaxed = payloads.prompt_payload(small.counter_proposal or "")
    assert relaxed is not None
    needed = relaxed["payload"]["targets"][0]["value"]
    assert needed > 987 and needed >= (network.area_kpis(["metro"]).energy_kw + network.saving_cost_kw(rest)) * 24
    assert negotiate(client, "r1", relaxed).feasible is True
    assign(client, port, "r1", relaxed)
    assert isinstance(network, SimNetwork)
    suspended = {c.element for c in network.changes() if c.by == "energy-saving" and c.text.endswith("-> suspended")}
    assert suspended == set(rest)  # the relaxation was for the rest only
    # the relaxed target is the one in force now
    assert f"above the {needed:g} kWh/day target of INT-METRO1" in (negotiate(client, "s2", suspend).reason or "")

    restored = assign(client, port, "back", intent_task("restore", 940, rest))
    assert restored["targets"][0]["value"] == 940  # the intent's own target is back
    assert all(network.cell(c).energy_saving == "enabled" for c in rest)
    assert "above the 940 kWh/day target of INT-METRO1" in (negotiate(client, "s3", suspend).reason or "")
    assert negotiate(client, "again", intent_task("restore", 940, rest)).feasible is False  # nothing to restore


def test_a_share_that_is_not_the_agents_is_refused(energy: tuple[AgentClient, LabBehaviour, int]) -> None:
    client, _, port = energy
    answer = negotiate(client, "x", intent_task("assure", 940, duty="fault_management"))
    assert answer.feasible is False and "serves energy_saving in an intent, not fault_management" in (
        answer.reason or ""
    )
    answer = negotiate(client, "y", intent_task("relax", 2000, ["CELL-0101"]))
    assert answer.feasible is False and "holds no share of intent INT-METRO1" in (answer.reason or "")
    # assigned without asking first: the task fails, with the reason
    value = intent_task("assure", 940, duty="performance_optimization")
    task = assign_task(client, port, "z", value, TaskStatus.FAILED)
    assert task.result is not None and "not performance_optimization" in (task.result.reason or "")
