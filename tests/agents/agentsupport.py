"""One topology agent served on its own over NETCONF on 127.0.0.1 (as ``an-agent serve --topology`` does)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from an_agent.agents.base import LabBehaviour
from an_agent.lab.agent import load_agent
from an_agent.lab.kernel import SimKernel
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig


@contextmanager
def served(topology: Path, name: str, state_dir: Path) -> Iterator[tuple[AgentClient, LabBehaviour, int]]:
    """The agent ``name`` of ``topology`` with the topology's schema setting: a client on it, its behaviour, its
    port. Afterwards the client, the server and the agent's clock are stopped (no activity left behind)."""
    profile, behaviour = load_agent(topology, name)
    assert isinstance(behaviour, LabBehaviour)
    config = ServerConfig(
        state_dir=state_dir, port=0, profile=profile, behaviour=behaviour, schemas=behaviour.env.schemas
    )
    server = AgentServer(config)
    server.start()
    client = AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin")
    try:
        yield client, behaviour, server.port
    finally:
        client.close()
        server.stop()
        kernel = behaviour.env.scheduler
        assert isinstance(kernel, SimKernel)
        assert kernel.close() == []
