"""Operators' own templates: checked at start, served over NETCONF and A2A alike."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState
from a2asupport import verify
from google.protobuf.struct_pb2 import Struct

from an_agent.errors import ConfigError
from an_agent.model import AgentProfile
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder
from support import TEST_PROFILE

PROBE = {
    "schema_id": "probe_v1",
    "scenario": "probe",
    "keys": [
        {"key_name": "probe_id", "key_type": "string", "required": True, "default_value": None,
         "semantic_description": "Probe identifier. Format: P-<digits>."},
        {"key_name": "count", "key_type": "integer", "required": False, "default_value": None,
         "semantic_description": "How many probes. Range: 1 to 10."},
    ],
}  # fmt: skip


def test_operator_template_served_over_both_faces(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "probe_v1.json").write_text(json.dumps(PROBE))
    config = ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        a2a_port=0,
        a2a_tls=True,
        templates=[templates],
        embedder=FakeEmbedder(),
        profile=AgentProfile.from_dict(TEST_PROFILE),
    )
    with AgentServer(config) as server:
        assert server.a2a is not None
        with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
            assert nc.schemas.template("probe", ["1"]).schema_id == "probe_v1"
            assert "probe_v1" in [t["schema_id"] for t in nc.schemas.live_templates()]

        async def over_a2a() -> tuple[dict[str, object], str]:
            async with httpx.AsyncClient(auth=("admin", "admin"), timeout=30, verify=verify(server)) as http:
                base = server.a2a.url  # type: ignore[union-attr]
                raw = (await http.get(base + "/.well-known/agent-card.json")).json()
                card = await A2ACardResolver(http, base).get_agent_card()
                client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
                part = Part(metadata=Struct())
                part.data.struct_value.update({"probe_id": "P-7", "count": 3})
                part.metadata.update({"mimeType": "application/json;schema=probe_v1"})
                message = Message(message_id="m", role=Role.ROLE_USER, parts=[part, Part(text="probe the core")])
                (event,) = [e async for e in client.send_message(SendMessageRequest(message=message))]
                return raw, TaskState.Name(event.task.status.state)

        card, state = asyncio.run(over_a2a())
        assert card["schemas"]["probe_v1"]["properties"]["probe_id"]["pattern"] == "^P-[0-9]+$"  # type: ignore[index]
        assert state == "TASK_STATE_COMPLETED"


def test_a_bad_template_stops_the_start_before_any_state(tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "probe_v1.json").write_text(json.dumps({**PROBE, "keys": [{**PROBE["keys"][0], "key_type": "text"}]}))  # type: ignore[dict-item]
    with pytest.raises(ConfigError, match=r"probe_v1\.json: probe_id: key_type must be one of"):
        AgentServer(ServerConfig(state_dir=tmp_path / "state", port=0, templates=[templates]))
    assert not (tmp_path / "state").exists()
    done = subprocess.run(
        [sys.executable, "-m", "an_agent.cli", "serve", "--port", "0", "--a2a-port", "0", "--state-dir",
         str(tmp_path / "s2"), "--templates", str(templates)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"{templates / 'probe_v1.json'}: probe_id: key_type must be one of" in done.stderr
