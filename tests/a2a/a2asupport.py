"""The agent the A2A tests talk to: the test profile whose skill accepts energy_saving_adjust, both faces."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

from an_agent.agents.default import DefaultBehaviour
from an_agent.clock import ManualClock, from_rfc3339
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder
from support import TEST_PROFILE


def energy_profile() -> AgentProfile:
    """The test profile, its first skill also taking ``application/json;schema=energy_saving_adjust``."""
    document = json.loads(json.dumps(TEST_PROFILE))
    skill = document["irtf-agent:agent"]["skills"]["skill"][0]
    skill["input-modes"] = ["text", "application/json;schema=energy_saving_adjust"]
    return AgentProfile.from_dict(document)


def verify(server: AgentServer) -> ssl.SSLContext | bool:
    """What an httpx client of ``server``'s A2A face verifies against: its own certificate, explicitly."""
    assert server.a2a is not None
    if server.a2a.certificate is None:
        return True
    return ssl.create_default_context(cafile=str(server.a2a.certificate))


def energy_agent_config(state_dir: Path, work_seconds: float) -> ServerConfig:
    """NETCONF and A2A (HTTPS) on free ports, admin/admin, tasks that take ``work_seconds`` (real time)."""
    return ServerConfig(
        state_dir=state_dir,
        port=0,
        a2a_port=0,
        a2a_tls=True,  # HTTPS with the certificate generated in the state directory
        users={"admin": "admin"},
        profile=energy_profile(),
        behaviour=DefaultBehaviour(work_seconds),
        embedder=FakeEmbedder(),
        clock=ManualClock(from_rfc3339("2026-10-05T00:00:00Z")),
    )
