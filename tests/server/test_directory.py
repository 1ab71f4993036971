"""Discovery over real NETCONF sessions (draft-wang 4.1/5.1, draft-zhou 3.2 step 2): a directory agent,
agents that register on start and deregister on stop, peers found by skill/domain/schema/provider, a
broker whose peer is found through the directory (not wired by name), an input-required round trip across
the two hops, and the caller's task failing with the reason when no agent fits."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from an_agent.a2a.client import A2AAgentClient
from an_agent.agents.default import DefaultBehaviour
from an_agent.agents.discovery import BrokerBehaviour, Discovery
from an_agent.cli import main
from an_agent.errors import RpcError
from an_agent.model import AgentProfile, DataParam, Task, TaskStatus
from an_agent.model.directory import AgentQuery, DirectoryEntry
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.directory_client import DirectoryClient, DirectoryLogin
from an_agent.server import AgentServer, ServerConfig, advertised_host
from fake_embedder import FakeEmbedder
from rawnc import NS, RawSession
from support import TEST_PROFILE

DIR = "urn:an-agent:params:xml:ns:yang:an-agent-directory"
ENERGY = "energy_saving_adjust_v1"
ADMIN = {"admin": "admin"}


def _profile(name: str, schemas: list[str], tags: list[str]) -> AgentProfile:
    document = json.loads(json.dumps(TEST_PROFILE))
    agent = document["irtf-agent:agent"]
    agent["name"] = name
    skill = agent["skills"]["skill"][0]
    skill["input-modes"] = ["text", *(f"application/json;schema={s}" for s in schemas)]
    skill["skill-tags"] = tags
    return AgentProfile.from_dict(document)


def _config(state: Path, **more: object) -> ServerConfig:
    return ServerConfig(state_dir=state, port=0, users=dict(ADMIN), embedder=FakeEmbedder(), **more)  # type: ignore[arg-type]


@pytest.fixture
def directory(tmp_path: Path) -> Iterator[AgentServer]:
    with AgentServer(_config(tmp_path / "directory", directory=True, a2a_port=0, a2a_tls=True)) as running:
        yield running


@pytest.fixture
def login(directory: AgentServer) -> DirectoryLogin:
    return DirectoryLogin("127.0.0.1", directory.port, "admin", "admin")


@pytest.fixture
def worker(tmp_path: Path, login: DirectoryLogin) -> Iterator[AgentServer]:
    config = _config(
        tmp_path / "worker",
        profile=_profile("energy-worker", [ENERGY], ["energy", "saving"]),
        behaviour=DefaultBehaviour(0.05, input_seconds=60),
        register_with=login,
    )
    with AgentServer(config) as running:
        yield running


@pytest.fixture
def broker(tmp_path: Path, login: DirectoryLogin, worker: AgentServer) -> Iterator[AgentServer]:
    behaviour = BrokerBehaviour(Discovery(login), ("admin", "admin"), skill="energy", input_seconds=60)
    config = _config(tmp_path / "broker", profile=_profile("broker", [], ["broker"]), behaviour=behaviour)
    with AgentServer(config) as running:
        yield running


def _wait_end(server: AgentServer, task_id: str, status: TaskStatus | None = None) -> Task:
    """The task once it ended (or reached ``status``), from a session of its own (one subscription each)."""
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=60) as client:
        for event in client.watch(task_id, start_time=0, timeout=60, until_terminal=status is None):
            if status is not None and event.status == status:
                break
        return client.get_task(task_id)


def test_agents_register_on_start_are_found_and_deregister_on_stop(
    tmp_path: Path,
    directory: AgentServer,
    login: DirectoryLogin,
    worker: AgentServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with login.connect() as client:
        (entry,) = client.find(AgentQuery(skill="Energy"))  # a tag, case-insensitive
        assert (entry.name, entry.port, entry.domain, entry.provider) == (
            "energy-worker",
            worker.port,
            "Wireless",
            "TestLab",
        )
        assert entry.schemas == (ENERGY,)
        for query in (AgentQuery(schema="energy_saving_adjust"), AgentQuery(domain="wireless", provider="TestLab")):
            assert [e.name for e in client.find(query)] == ["energy-worker"]
        for query in (AgentQuery(skill="energy", domain="Transport"), AgentQuery(schema="fault_diagnosis_v1")):
            assert client.find(query) == []
    raw = RawSession(directory.port)  # the registry is state of the directory's datastore
    try:
        reply = raw.rpc(f'<get><filter type="subtree"><directory xmlns="{DIR}"/></filter></get>')
        names = [
            e.text for e in reply.iterfind(f"nc:data/{{{DIR}}}directory/{{{DIR}}}registered-agent/{{{DIR}}}name", NS)
        ]
        assert names == ["energy-worker"]
        assert (
            reply.findtext(
                f"nc:data/{{{DIR}}}directory/{{{DIR}}}registered-agent/{{{DIR}}}registered-by", namespaces=NS
            )
            == "admin"
        )
    finally:
        raw.close()
    code = main(["agents", "find", "--skill", "saving", "--directory", f"127.0.0.1:{directory.port}", "--json",
                 "--user", "admin", "--password", "admin"])  # fmt: skip
    assert code == 0
    assert [a["name"] for a in json.loads(capsys.readouterr().out)] == ["energy-worker"]
    worker.stop()
    with login.connect() as client:
        assert client.find(AgentQuery()) == []
    assert main(["agents", "find", "--skill", "saving", "--directory", f"127.0.0.1:{directory.port}",
                 "--user", "admin", "--password", "admin"]) == 1  # fmt: skip
    assert "no agent" in capsys.readouterr().err


def test_an_agent_started_before_its_directory_registers_once_it_answers(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on yet: the directory comes later
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    login = DirectoryLogin("127.0.0.1", port, "admin", "admin", timeout=5)
    config = _config(tmp_path / "worker", profile=_profile("energy-worker", [ENERGY], ["energy"]), register_with=login)
    with AgentServer(config) as worker:
        assert worker.registration is not None and not worker.registration.registered  # serving all the same
        with AgentServer(replace(_config(tmp_path / "directory", directory=True), port=port)):
            assert worker.registration.wait(60)  # tried again in the background
            with login.connect() as client:
                assert [(e.name, e.address, e.port) for e in client.find(AgentQuery())] == [
                    ("energy-worker", "127.0.0.1", worker.port)
                ]
            worker.stop()
            with login.connect() as client:
                assert client.find(AgentQuery()) == []  # deregistered on stop


def test_an_agent_on_a_wildcard_address_advertises_a_name_peers_can_reach() -> None:
    assert advertised_host(None, "127.0.0.1") == "127.0.0.1"
    assert advertised_host("agent-7.lab", "0.0.0.0") == "agent-7.lab"
    assert advertised_host(None, "0.0.0.0") == advertised_host(None, "::") == socket.getfqdn()
    assert advertised_host(None, "agents.example") == "agents.example"


def test_only_a_user_who_speaks_for_an_agent_registers_it(tmp_path: Path) -> None:
    users = tmp_path / "users.yaml"
    users.write_text(
        "users:\n  - {name: bob, password: bob-pw, groups: [operators], agents: [bob-agent]}\n", encoding="utf-8"
    )
    users.chmod(0o600)
    config = ServerConfig(state_dir=tmp_path / "d", port=0, users_file=users, directory=True)
    with (
        AgentServer(config) as directory,
        DirectoryClient.connect("127.0.0.1", directory.port, username="bob", password="bob-pw") as bob,
    ):
        bob.register(DirectoryEntry("bob-agent", "127.0.0.1", 1830, skills=("x",)))
        with pytest.raises(RpcError) as denied:
            bob.register(DirectoryEntry("energy-worker", "127.0.0.1", 1831))
        assert denied.value.error_tag == "access-denied" and "energy-worker" in denied.value.message
        with pytest.raises(RpcError) as missing:
            bob.deregister("bob-agent-2")
        assert missing.value.error_tag == "access-denied"
        bob.deregister("bob-agent")
        with pytest.raises(RpcError) as gone:
            bob.deregister("bob-agent")
        assert gone.value.error_tag == "data-missing"


def test_broker_finds_its_peer_in_the_directory_and_relays_an_input_round_trip(
    broker: AgentServer, worker: AgentServer
) -> None:
    payload = json.dumps({"schema_id": ENERGY, "payload": {"cell_ids": ["CELL-0401"], "action": "reduce"}})
    with AgentClient.connect("127.0.0.1", broker.port, username="admin", password="admin", timeout=30) as client:
        client.assign_task(
            Task(
                "b1",
                task_async=True,
                content="## target object\nCELL-0401\n## task description\nsave energy",
                msg_data=["b1-p"],
            ),
            [DataParam("b1-p", format=f"application/json;schema={ENERGY}", data=payload)],
        )
        done = _wait_end(broker, "b1")
        assert done.status == TaskStatus.FINISHED, done
        assert done.result is not None and (done.result.summary or "").startswith("energy-worker:")
        assert json.loads(done.result.data or "{}")["executed_by"] == "energy-worker"

        # No target object: the worker asks, the broker asks its assigner the same, the answer goes back.
        client.assign_task(Task("b2", task_async=True, content="## task description\nsave energy tonight"))
        waiting = _wait_end(broker, "b2", TaskStatus.INPUT_REQUIRED)
        assert waiting.status == TaskStatus.INPUT_REQUIRED and "energy-worker asks" in (waiting.result.reason or "")  # type: ignore[union-attr]
        assert "target object" in waiting.input_required[0].required
        client.provide_input("b2", [DataParam("b2-answer", format="text/plain", data="CELL-0777")])
        done = _wait_end(broker, "b2")
        assert done.status == TaskStatus.FINISHED, done
        assert json.loads(done.result.data or "{}")["target_object"] == "CELL-0777"  # type: ignore[union-attr]
    with AgentClient.connect("127.0.0.1", worker.port, username="admin", password="admin") as on_worker:
        assert {t.task_id for t in on_worker.list_tasks()} == {"b1.energy-worker", "b2.energy-worker"}


def test_the_callers_task_fails_with_the_reason_when_no_agent_fits(broker: AgentServer) -> None:
    payload = json.dumps(
        {
            "schema_id": "fault_diagnosis_v1",
            "payload": {"fault_type": "base_station_outage", "affected_site_ids": ["SITE-07"]},
        }
    )
    with AgentClient.connect("127.0.0.1", broker.port, username="admin", password="admin", timeout=30) as client:
        client.assign_task(
            Task(
                "f1",
                task_async=True,
                content="## target object\nSITE-07\n## task description\ndiagnose",
                msg_data=["f1-p"],
            ),
            [DataParam("f1-p", format="application/json;schema=fault_diagnosis_v1", data=payload)],
        )
        failed = _wait_end(broker, "f1")
    assert failed.status == TaskStatus.FAILED
    reason = failed.result.reason if failed.result else ""
    assert "no agent registered in the directory" in (reason or "") and "fault_diagnosis_v1" in (reason or ""), reason


def test_the_directory_answers_queries_as_tasks_over_a2a_and_netconf(
    directory: AgentServer, worker: AgentServer
) -> None:
    assert directory.a2a is not None
    with A2AAgentClient.connect(
        directory.a2a.url, "admin", "admin", timeout=30, trust=directory.a2a.certificate
    ) as client:
        task = client.send_and_wait(scenario="agent_query", payload={"schema": "energy_saving_adjust"})
        assert task.status == TaskStatus.FINISHED and task.result is not None
        (agent,) = json.loads(task.result.data or "{}")["agents"]
        assert agent["name"] == "energy-worker" and agent["port"] == worker.port
        none = client.send_and_wait(scenario="agent_query", payload={"skill": "teleport"})
        assert json.loads(none.result.data or "{}")["agents"] == []  # type: ignore[union-attr]
    with AgentClient.connect("127.0.0.1", directory.port, username="admin", password="admin") as nc:
        nc.assign_task(
            Task("q1", task_async=True, content="## target object\nsaving\n## task description\nfind agents")
        )
    done = _wait_end(directory, "q1")
    assert [a["name"] for a in json.loads(done.result.data or "{}")["agents"]] == ["energy-worker"]  # type: ignore[union-attr]
