"""Role behaviours served on their own (as ``an-agent serve --topology FILE --agent NAME`` does), over NETCONF."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.agents import payloads
from an_agent.agents.base import LabBehaviour
from an_agent.errors import ConfigError, RpcError
from an_agent.lab.agent import load_agent
from an_agent.lab.kernel import SimKernel
from an_agent.model import (
    CommuType,
    DataParam,
    NegotiationRequest,
    NegotiationType,
    Task,
    TaskStatus,
    build_prompt,
)
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
ENERGY_LAB = TOPOLOGIES / "fault-energy-optimization.yaml"


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[object]:
    """``serve(topology, agent)`` -> an AgentClient on that agent; everything is stopped afterwards."""
    started: list[tuple[AgentServer, LabBehaviour, AgentClient]] = []

    def start(topology: Path, name: str) -> AgentClient:
        profile, behaviour = load_agent(topology, name)
        assert isinstance(behaviour, LabBehaviour)
        server = AgentServer(ServerConfig(state_dir=tmp_path / name, port=0, profile=profile, behaviour=behaviour))
        server.start()
        client = AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin")
        started.append((server, behaviour, client))
        return client

    yield start
    for server, behaviour, client in started:
        client.close()
        server.stop()
        kernel = behaviour.env.scheduler
        assert isinstance(kernel, SimKernel)
        assert kernel.close() == []


def proposal(delta_db: float, tilt_deg: float, cells: list[str]) -> list[str]:
    value = payloads.envelope(
        "coverage_compensation_v1",
        {
            "target_cell_ids": cells,
            "tx_power_delta_db": delta_db,
            "antenna_tilt_delta_deg": tilt_deg,
            "duration_minutes": 60,
            "compensation_reason": "neighbour_outage",
        },
    )
    return [payloads.proposal(", ".join(cells), "Compensate the coverage of SITE-06", value)]


def test_profile_comes_from_the_role(serve) -> None:  # type: ignore[no-untyped-def]
    client = serve(ENERGY_LAB, "optimization")
    profile = client.profile()
    assert profile.name == "optimization" and profile.type == "optimization"
    assert [s.name for s in profile.skills] == ["coverage-compensation"]
    assert "application/json;schema=coverage_compensation_v1" in profile.skills[0].input_modes
    assert "acp-task-feasibility-negotiation-v1.0" in profile.capability.negotiate


def test_power_beyond_a_cell_limit_gets_a_counter_proposal(serve) -> None:  # type: ignore[no-untyped-def]
    client = serve(ENERGY_LAB, "optimization")
    cells = ["CELL-0601", "CELL-0602", "CELL-0603"]
    answer = client.negotiate(NegotiationRequest("t1", NegotiationType.FEASIBILITY, proposal(4, -1, cells), "me"))
    assert answer.feasible is False
    assert "CELL-0701 is held by its power limit 46 dBm (1 dB headroom)" in (answer.reason or "")
    counter = payloads.prompt_payload(answer.counter_proposal or "")
    assert counter is not None and counter["schema_id"] == "coverage_compensation_v1"
    # per cell within its own limits: every neighbour has 3 dB of headroom but CELL-0701 1 dB; what none can
    # take becomes uptilt (1 deg per 2 dB), on top of the 1 deg asked
    changes = {
        c["cell_id"]: (c["tx_power_delta_db"], c["antenna_tilt_delta_deg"]) for c in counter["payload"]["cell_changes"]
    }
    assert changes.pop("CELL-0701") == (1, -3)
    assert len(changes) == 23 and set(changes.values()) == {(3, -2)}
    again = client.negotiate(
        NegotiationRequest("t1", NegotiationType.FEASIBILITY, [answer.counter_proposal or ""], "me")
    )
    assert again.feasible is True


def test_an_invalid_payload_is_refused_with_every_problem(serve) -> None:  # type: ignore[no-untyped-def]
    client = serve(ENERGY_LAB, "optimization")
    bad = {"schema_id": "coverage_compensation_v1", "payload": {"target_cell_ids": ["cell 6"], "tx_power_delta_db": 40}}
    answer = client.negotiate(
        NegotiationRequest(
            "t2", NegotiationType.FEASIBILITY, [build_prompt("CELL-0601", "Compensate", json.dumps(bad))], "me"
        )
    )
    assert answer.feasible is False
    assert "target_cell_ids" in (answer.reason or "") and "tx_power_delta_db" in (answer.reason or "")
    param = DataParam(id="t3.payload", format="application/json;schema=coverage_compensation_v1", data=json.dumps(bad))
    task = Task(
        "t3",
        send_from="me",
        commu_type=CommuType.TASK_ASSIGN,
        content=build_prompt("CELL-0601", "Compensate the coverage"),
        msg_data=[param.id],
    )
    with pytest.raises(RpcError) as info:
        client.assign_task(task, [param])
    assert info.value.error_tag == "invalid-value"
    assert "tx_power_delta_db" in info.value.message and "target_cell_ids" in info.value.message
    assert client.list_tasks() == []  # nothing stored


def test_ran_agent_diagnoses_and_fulfillment_is_checked(serve) -> None:  # type: ignore[no-untyped-def]
    client = serve(ENERGY_LAB, "ran-fault")
    value = payloads.envelope(
        "fault_diagnosis_v1",
        {"fault_type": "base_station_outage", "affected_site_ids": ["SITE-03"], "domain": "wireless"},
    )
    param = payloads.data_param("d1.payload", value, "diagnosis request")
    events = client.watch("d1")
    client.assign_task(
        Task(
            "d1",
            send_from="me",
            commu_type=CommuType.TASK_ASSIGN,
            content=build_prompt("SITE-03", "Diagnose the radio side of SITE-03"),
            msg_data=[param.id],
        ),
        [param],
    )
    statuses = [e.status for e in events]
    assert statuses[-1] == TaskStatus.FINISHED
    task = client.get_task("d1")
    assert task.result is not None and task.result.data is not None
    result = json.loads(task.result.data)
    assert result["fault_type"] == "none" and result["explained_site_ids"] == ["SITE-03"]

    def fulfilled(requirement: dict[str, object]) -> bool | None:
        return client.negotiate(
            NegotiationRequest(
                "d1", NegotiationType.FULFILLMENT, [build_prompt("d1", "evaluate", json.dumps(requirement))], "me"
            )
        ).fulfilled

    assert fulfilled({"keys": ["root_cause"], "covers": {"explained_site_ids": ["SITE-03"]}}) is True
    assert fulfilled({"keys": ["root_cause"], "covers": {"explained_site_ids": ["SITE-09"]}}) is False
    assert fulfilled({"keys": ["element"]}) is False  # a healthy site has no faulty element


def test_a_site_of_another_region_is_not_feasible(serve) -> None:  # type: ignore[no-untyped-def]
    client = serve(TOPOLOGIES / "iov-complaint.yaml", "ran-south")
    value = payloads.envelope(
        "fault_diagnosis_v1", {"fault_type": "cell_degradation", "affected_site_ids": ["SITE-02"]}
    )
    answer = client.negotiate(
        NegotiationRequest(
            "x", NegotiationType.FEASIBILITY, [payloads.proposal("SITE-02", "Diagnose SITE-02", value)], "me"
        )
    )
    assert answer.feasible is False and "SITE-02 (north) not managed by ran-south" in (answer.reason or "")


def test_skills_from_the_topology(serve) -> None:  # type: ignore[no-untyped-def]
    profile = serve(TOPOLOGIES / "iov-complaint.yaml", "complaint-north").profile()
    assert [s.name for s in profile.skills] == ["iov-complaint-handling"]
    assert profile.skills[0].tags == ["complaint", "iov", "ticket"]
    assert profile.provider == "ExampleCSP North" and profile.management_object == "north"


def test_unknown_agent_name() -> None:
    with pytest.raises(ConfigError, match="no agent named 'nobody'"):
        load_agent(ENERGY_LAB, "nobody")
