"""One schema setting for a topology agent: the same under ``serve --topology`` and in a lab.

The server's schema service validates each assigned payload against the agent's own templates (evolved
keys included); the behaviour then accepts what the server accepted. With ``schemas: off`` there is no
schema service and the behaviour holds payloads to the base templates.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.agents.base import LabBehaviour
from an_agent.agents.environment import DEFAULT_SCHEMA_MODE
from an_agent.errors import ConfigError, RpcError
from an_agent.lab.agent import load_agent
from an_agent.lab.kernel import SimKernel
from an_agent.lab.topology import load_topology
from an_agent.model import CommuType, DataParam, NegotiationRequest, NegotiationType, Task, TaskStatus, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
ENERGY_LAB = TOPOLOGIES / "fault-energy-optimization.yaml"


def _with(tmp_path: Path, old: str, new: str) -> Path:
    text = ENERGY_LAB.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "topology.yaml"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return path


def test_one_documented_default_for_lab_and_serve(tmp_path: Path) -> None:
    assert DEFAULT_SCHEMA_MODE == "validate"
    assert {a.schemas for a in load_topology(ENERGY_LAB).agents} == {"validate"}
    _, behaviour = load_agent(ENERGY_LAB, "energy-saving")
    assert behaviour.env.schemas == "validate" and behaviour.env.accepts_evolved_keys
    # the topology's setting, an agent's own, and serve --schemas overriding both
    path = _with(tmp_path, "provider: ExampleCSP\n", "provider: ExampleCSP\nschemas: evolve\n")
    assert {a.schemas for a in load_topology(path).agents} == {"evolve"}
    path = _with(tmp_path, "{name: ip-fault, role: ip-fault,", "{name: ip-fault, role: ip-fault, schemas: off,")
    assert {a.name: a.schemas for a in load_topology(path).agents}["ip-fault"] == "off"
    _, off = load_agent(path, "ip-fault")
    assert off.env.schemas == "off" and not off.env.accepts_evolved_keys
    _, overridden = load_agent(path, "ip-fault", schemas="evolve")
    assert overridden.env.schemas == "evolve"
    for each in (behaviour, off, overridden):
        assert isinstance(each.env.scheduler, SimKernel)
        each.env.scheduler.close()


def test_the_approval_policy_comes_from_the_topology(tmp_path: Path) -> None:
    assert {a.schema_approval for a in load_topology(ENERGY_LAB).agents} == {"auto"}
    path = _with(tmp_path, "provider: ExampleCSP\n", "provider: ExampleCSP\nschemas: evolve\nschema_approval: manual\n")
    assert {a.schema_approval for a in load_topology(path).agents} == {"manual"}
    text = path.read_text(encoding="utf-8").replace(
        "{name: ip-fault, role: ip-fault,", "{name: ip-fault, role: ip-fault, schema_approval: auto,"
    )
    path.write_text(text, encoding="utf-8")
    assert {a.name: a.schema_approval for a in load_topology(path).agents}["ip-fault"] == "auto"
    path.write_text(text.replace("schema_approval: manual", "schema_approval: sometimes"), encoding="utf-8")
    with pytest.raises(ConfigError, match="schema_approval"):
        load_topology(path)


@pytest.fixture
def energy_agent(tmp_path: Path) -> Iterator[object]:
    """``start(schemas)`` -> (server, client) of the energy-saving agent served as ``serve --topology`` does."""
    started: list[tuple[AgentServer, LabBehaviour, AgentClient]] = []

    def start(schemas: str) -> tuple[AgentServer, AgentClient]:
        profile, behaviour = load_agent(ENERGY_LAB, "energy-saving", schemas=schemas)  # type: ignore[arg-type]
        config = ServerConfig(
            state_dir=tmp_path / schemas,
            port=0,
            profile=profile,
            behaviour=behaviour,
            schemas=behaviour.env.schemas,
            embedder=FakeEmbedder(),
        )
        server = AgentServer(config).start()
        client = AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin")
        started.append((server, behaviour, client))
        return server, client

    yield start
    for server, behaviour, client in started:
        client.close()
        server.stop()
        assert isinstance(behaviour.env.scheduler, SimKernel)
        assert behaviour.env.scheduler.close() == []


def _task_args(task_id: str, sender: str, payload: dict[str, object]) -> tuple[Task, list[DataParam]]:
    envelope = {"schema_id": "energy_saving_adjust_v1", "payload": payload}
    param = DataParam(
        id=f"{task_id}.p", format="application/json;schema=energy_saving_adjust_v1", data=json.dumps(envelope)
    )
    task = Task(
        task_id,
        send_from=sender,
        commu_type=CommuType.TASK_ASSIGN,
        content=build_prompt("CELL-0401", "adjust energy saving"),
        msg_data=[param.id],
    )
    return task, [param]


def test_an_evolved_key_is_accepted_where_evolution_accepts_it(energy_agent) -> None:  # type: ignore[no-untyped-def]
    server, client = energy_agent("evolve")
    other = "battery bank replacement crew onsite tonight"
    for n in range(6):  # the default gate: heat >= 50 and 5 distinct clients
        client.assign_task(
            *_task_args(f"hot{n}", f"site-agent-{n}", {"cell_ids": ["CELL-0401"], "action": "suspend", "other": other})
        )
    server.operations.schemas.drain()
    patches = server.operations.schemas.engine.patches("energy_saving_adjust_v1")
    new_keys = [k["key_name"] for p in patches for k in p["new_keys"]]
    assert new_keys, json.dumps(patches, indent=1)
    # the evolved key, now in the template this client sees: the server accepts it, so does the behaviour
    events = client.watch("evolved")
    client.assign_task(
        *_task_args("evolved", "site-agent-1", {"cell_ids": ["CELL-0401"], "action": "suspend", new_keys[0]: "fan"})
    )
    assert [e.status for e in events][-1] == TaskStatus.FINISHED, client.get_task("evolved")
    # a FEASIBILITY proposal with it is judged on its base keys
    proposal = json.dumps(
        {
            "schema_id": "energy_saving_adjust_v1",
            "payload": {"cell_ids": ["CELL-0401"], "action": "suspend", new_keys[0]: "fan"},
        }
    )
    answer = client.negotiate(
        NegotiationRequest(
            "n1", NegotiationType.FEASIBILITY, [build_prompt("CELL-0401", "suspend", proposal)], "site-agent-1"
        )
    )
    assert answer.feasible is True, answer.reason


def test_without_a_schema_service_the_behaviour_holds_to_the_base_template(energy_agent) -> None:  # type: ignore[no-untyped-def]
    _, client = energy_agent("off")
    with pytest.raises(RpcError) as info:
        client.assign_task(*_task_args("x1", "me", {"cell_ids": ["CELL-0401"], "action": "suspend", "fan_note": "x"}))
    assert info.value.error_tag == "invalid-value" and "fan_note" in info.value.message
    assert client.list_tasks() == []


def test_with_validate_the_server_refuses_keys_its_templates_lack(energy_agent) -> None:  # type: ignore[no-untyped-def]
    _, client = energy_agent("validate")
    with pytest.raises(RpcError) as info:
        client.assign_task(*_task_args("x2", "me", {"cell_ids": ["CELL-0401"], "action": "suspend", "fan_note": "x"}))
    assert info.value.error_tag == "invalid-value" and "fan_note" in info.value.message
    assert info.value.app_tag == "invalid-structured-payload"  # the schema service's answer, not the behaviour's


@pytest.mark.parametrize(("schemas", "behaviour_validations"), [("validate", 0), ("off", 1)])
def test_each_payload_is_validated_once(energy_agent, monkeypatch, schemas: str, behaviour_validations: int) -> None:  # type: ignore[no-untyped-def]
    """The behaviour acts on the payload admission validated; it validates only where no schema service did."""
    from an_agent.agents import payloads

    _, client = energy_agent(schemas)
    calls = {"behaviour": 0}
    original = payloads.validate_payload

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls["behaviour"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(payloads, "validate_payload", counting)
    events = client.watch("once")
    client.assign_task(*_task_args("once", "me", {"cell_ids": ["CELL-0401"], "action": "suspend"}))
    assert [e.status for e in events][-1] == TaskStatus.FINISHED, client.get_task("once")
    assert calls["behaviour"] == behaviour_validations
