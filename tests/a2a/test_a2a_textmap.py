"""Text-only A2A messages mapped to a payload with the real MiniLM model (the mapping depends on it)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from an_agent.a2a.client import A2AAgentClient
from an_agent.model import IRTF_AGENT_NS, AgentProfile, DataParam, TaskStatus
from an_agent.model._xml import root
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig
from support import TEST_PROFILE

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    document = json.loads(json.dumps(TEST_PROFILE))
    skill = document["irtf-agent:agent"]["skills"]["skill"][0]
    skill["input-modes"] = ["text", "application/json;schema=energy_saving_adjust"]
    config = ServerConfig(
        state_dir=tmp_path_factory.mktemp("textmap") / "state",
        port=0,
        a2a_port=0,
        a2a_tls=True,
        users={"admin": "admin"},
        profile=AgentProfile.from_dict(document),
        schemas="validate",  # the shared MiniLM model, no learning in the background
    )
    with AgentServer(config) as running:
        yield running


def _params(server: AgentServer) -> dict[str, DataParam]:
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        data = nc.netconf.get(filter=root("data-params"))
    params = [DataParam.from_xml(e) for e in data.iter(f"{{{IRTF_AGENT_NS}}}data-params")]
    return {p.id: p for p in params}


def test_text_that_maps_completely_becomes_a_structured_task(server: AgentServer) -> None:
    assert server.a2a is not None
    with A2AAgentClient.connect(server.a2a.url, "admin", "admin", timeout=120, trust=server.a2a.certificate) as client:
        task = client.send_and_wait(
            text="Reduce power on CELL-0401 and CELL-0402 for 30 minutes because traffic is low at night"
        )
        vague = client.send_and_wait(text="please save some energy somewhere")
    param = _params(server)[f"{task.task_id}-payload"]
    assert param.format == "application/json;schema=energy_saving_adjust_v1"
    payload = json.loads(param.data or "")["payload"]
    assert payload["cell_ids"] == ["CELL-0401", "CELL-0402"] and payload["action"] == "reduce"
    assert payload["duration_minutes"] == 30
    # No cell named: the mapping cannot fill cell_ids, so the task asks for it (test_a2a_text_input has more).
    assert vague.status == TaskStatus.INPUT_REQUIRED and f"{vague.task_id}-payload" not in _params(server)
    assert f"{vague.task_id}-mapped" in _params(server)
