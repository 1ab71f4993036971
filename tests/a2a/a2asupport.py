"""The agent the A2A tests talk to: the test profile whose skill accepts energy_saving_adjust, both faces."""

from __future__ import annotations

import asyncio
import json
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest, StreamResponse

from an_agent.agents.default import DefaultBehaviour
from an_agent.clock import ManualClock, from_rfc3339
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder
from outsider import a2a_client, data_message
from support import TEST_PROFILE

T = TypeVar("T")
ENERGY = "application/json;schema=energy_saving_adjust_v1"


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


def run(
    server: AgentServer, test: Callable[[Any, AgentCard, httpx.AsyncClient], Awaitable[T]], binding: str = "JSONRPC"
) -> T:
    """Resolve the card and build the SDK client (streaming, over ``binding``), then run ``test``."""
    assert server.a2a is not None
    base = server.a2a.url
    assert base.startswith("https://")  # the tests' agents serve HTTPS (energy_agent_config)

    async def main() -> T:
        async with httpx.AsyncClient(auth=("admin", "admin"), timeout=30, verify=verify(server)) as http:
            client, card = await a2a_client(http, base, binding)
            return await test(client, card, http)

    return asyncio.run(main())


def structured(data: dict[str, Any], mime: str = ENERGY, text: str | None = None) -> SendMessageRequest:
    """`outsider.data_message`: an energy_saving_adjust payload unless ``mime`` says another."""
    return data_message(data, mime, text)


def text(words: str) -> SendMessageRequest:
    """A user message with one text part."""
    return SendMessageRequest(message=Message(message_id="m2", role=Role.ROLE_USER, parts=[Part(text=words)]))


async def collect(stream: Any) -> list[StreamResponse]:
    """Every event of an SDK stream (or the one reply of a non-streaming send)."""
    return [event async for event in stream]
