"""One topology agent served on its own over NETCONF on 127.0.0.1 (as ``an-agent serve --topology`` does)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from an_agent.agents import payloads
from an_agent.agents.base import LabBehaviour
from an_agent.lab.agent import load_agent
from an_agent.lab.kernel import SimKernel
from an_agent.model import CommuType, Task, build_prompt
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


def assign_and_wait(
    client: AgentClient,
    task_id: str,
    sender: str,
    target: str,
    description: str,
    value: dict[str, object],
    kind: str,
    watcher: AgentClient | None = None,
) -> Task:
    """Assign ``task_id`` from ``sender`` with ``value`` as its data-param (of ``kind``) over ``client``, wait for
    its end on ``watcher``'s notifications (``client``'s when None) and return the task as the agent has it."""
    param = payloads.data_param(f"{task_id}.payload", value, kind)
    events = (watcher or client).watch(task_id)
    client.assign_task(
        Task(
            task_id=task_id,
            send_from=sender,
            commu_type=CommuType.TASK_ASSIGN,
            content=build_prompt(target, description),
            task_async=True,
            msg_data=[param.id],
        ),
        [param],
    )
    for event in events:
        if event.status.terminal:
            break
    return client.get_task(task_id)
