"""The client half of schema negotiation over real NETCONF sessions: negotiate, cache, validate, invalidate."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from an_agent.clock import ManualClock, from_rfc3339
from an_agent.errors import RpcError, SchemaError
from an_agent.model import AgentProfile, Task, TaskStatus
from an_agent.nc.agent_client import AgentClient, SchemaUpdate, schema_update_suggestions
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder
from rawnc import wait_for

ENERGY = "energy_saving_adjust"


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    config = ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        profile=profile,
        embedder=FakeEmbedder(),
        clock=ManualClock(from_rfc3339("2026-10-05T00:00:00Z")),
    )
    with AgentServer(config) as running:
        yield running


def _client(server: AgentServer) -> AgentClient:
    return AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=10)


def _counting(client: AgentClient) -> list[str]:
    """Record the RPCs the client sends (the real session still carries them)."""
    sent: list[str] = []
    real = client.netconf.call

    def call(rpc: Any) -> Any:
        sent.append(rpc.tag)
        return real(rpc)

    client.schemas.netconf.call = call  # type: ignore[method-assign]
    return sent


def test_negotiates_once_and_caches(server: AgentServer) -> None:
    with _client(server) as client:
        sent = _counting(client)
        first = client.schemas.template(ENERGY, ["1", "2"])
        assert first.schema_id == "energy_saving_adjust_v1" and first.language == "en"
        assert "action" in first.template.key_names
        assert client.schemas.template(ENERGY, ["2", "1"]) is first  # same versions, any order: cached
        assert len(sent) == 1
        client.schemas.forget("energy_saving_adjust_v1")
        assert client.schemas.cached_ids == set()
        client.schemas.template(ENERGY, ["1", "2"])
        assert len(sent) == 2


def test_no_common_version_is_the_agents_clear_error(server: AgentServer) -> None:
    with _client(server) as client, pytest.raises(RpcError) as info:
        client.schemas.template(ENERGY, ["v2", "fault_diagnosis_v3"])
    assert info.value.error_tag == "invalid-value"
    assert "no common version of scenario 'energy_saving_adjust': the client supports v2, v3" in info.value.message
    assert "the agent has energy_saving_adjust_v1" in info.value.message


def test_an_agent_that_ignores_the_versions_is_refused_client_side(server: AgentServer) -> None:
    """An agent of the first an-agent-schema revision answers with its newest version whatever is asked."""
    with _client(server) as client:
        real = client.netconf.call

        def old_agent(rpc: Any) -> Any:
            for element in rpc.findall("{*}supported-version"):
                rpc.remove(element)
            return real(rpc)

        client.netconf.call = old_agent  # type: ignore[method-assign]
        with pytest.raises(SchemaError, match="no common version") as info:
            client.schemas.template(ENERGY, ["v2"])
        assert info.value.problems == ["supported-version: the agent answered energy_saving_adjust_v1"]


def test_unknown_scenario_is_the_agents_refusal_listing_its_templates(server: AgentServer) -> None:
    with _client(server) as client, pytest.raises(RpcError) as info:
        client.schemas.template("teleportation")
    assert "fault_diagnosis_v1" in str(info.value)


def test_payload_refused_client_side_sends_nothing(server: AgentServer) -> None:
    with _client(server) as client:
        with pytest.raises(SchemaError) as info:
            client.schemas.assign(
                Task("t-bad", send_from="noc-1"), ENERGY, {"cell_ids": "CELL-0401", "action": "explode"}, ["1"]
            )
        assert [p.split(":")[0] for p in info.value.problems] == ["cell_ids", "action"]
        assert client.list_tasks() == []


def test_structured_assignment_with_an_integral_double(server: AgentServer) -> None:
    payload = {"cell_ids": ["CELL-0401"], "action": "reduce", "duration_minutes": 30.0, "other": "night only"}
    with _client(server) as client:
        accepted = client.schemas.assign(Task("t-ok", send_from="noc-1"), ENERGY, payload, ["1"])
        assert accepted.schema_id == "energy_saving_adjust_v1"
        task = wait_for(lambda: (t := client.get_task("t-ok")).status == TaskStatus.FINISHED and t)
        assert task.msg_data == ["t-ok-payload"]
        assert schema_update_suggestions(task) == []


def test_schema_update_drops_the_cache_and_results_surface_the_suggestion(server: AgentServer) -> None:
    other = "cooling fan failure in the shelter"
    with _client(server) as watcher, _client(server) as sender:
        watcher.schemas.template(ENERGY, ["1"], client_id="site-agent-1")
        assert watcher.schemas.cached_ids == {"energy_saving_adjust_v1"}
        updates = watcher.schemas.updates(timeout=30)
        received: list[SchemaUpdate] = []
        reader = threading.Thread(target=lambda: received.append(next(updates)))
        reader.start()
        for n in range(6):  # the default trigger: heat >= 50 and 5 distinct clients
            sender.schemas.assign(
                Task(f"hot{n}", send_from=f"site-agent-{n}"),
                ENERGY,
                {"cell_ids": ["CELL-0401"], "action": "reduce", "other": other},
                ["1"],
            )
        assert server.operations.schemas is not None
        server.operations.schemas.drain()
        reader.join(timeout=30)
        assert received and received[0].event == "patch-published"
        assert received[0].schema_id == "energy_saving_adjust_v1"
        assert watcher.schemas.cached_ids == set()  # dropped before the update was handed over

        # The sender's next task result carries the suggestion; reading it drops the sender's cache too.
        assert sender.schemas.cached_ids == {"energy_saving_adjust_v1"}
        sender.schemas.assign(
            Task("after", send_from="site-agent-2"), ENERGY, {"cell_ids": ["CELL-0401"], "action": "resume"}, ["1"]
        )
        task = wait_for(lambda: (t := sender.get_task("after")).status == TaskStatus.FINISHED and t)
        (suggestion,) = schema_update_suggestions(task)
        assert suggestion["schema_id"] == "energy_saving_adjust_v1" and suggestion["patches"]
        assert sender.schemas.cached_ids == set()
        fresh = sender.schemas.template(ENERGY, ["1"], client_id="site-agent-2")
        assert fresh.applied_patches == (suggestion["patches"][0]["patch_id"],)
