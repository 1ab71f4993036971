"""Every agent of a lab inside the lab's own process (``lab run --in-process``): one kernel, one network.

The default is a process per agent (`an_agent.lab.fleet`). This mode stays for what it is good at: unit
tests of behaviours and kernels that need a whole lab in a second or two, and profiling a run under one
interpreter. Agents are the same `AgentServer`s on 127.0.0.1 ports, talking NETCONF to each other.
"""

from __future__ import annotations

import logging
import shutil
import threading
from dataclasses import dataclass
from typing import Any

from an_agent.agents.base import LabBehaviour
from an_agent.agents.environment import RoleName
from an_agent.agents.peers import Peers
from an_agent.errors import AnAgentError
from an_agent.lab.agent import HOST, TASK_CAPACITY, build_profile, directory_login, make_behaviour
from an_agent.lab.owner import FleetOwner
from an_agent.lab.spec import AgentSpec

log = logging.getLogger(__name__)


@dataclass
class RunningAgent:
    spec: AgentSpec
    behaviour: LabBehaviour | None
    """None for the directory agent (the server's own directory behaviour)."""
    peers: Peers | None
    server: Any
    """The `AgentServer` (typed loosely: importing the server stack is deferred to `start`)."""

    @property
    def port(self) -> int:
        port: int = self.server.port
        return port


class InProcessFleet:
    """Starts and stops a lab's agents as servers of this process."""

    def __init__(self, lab: FleetOwner) -> None:
        self.lab = lab
        self.agents: dict[str, RunningAgent] = {}

    def start(self, users: dict[str, str], user_db: Any) -> None:
        from an_agent.lab.upstream import served_templates
        from an_agent.server import AgentServer, ServerConfig
        from an_agent.yang.context import YangContext

        lab = self.lab
        yang = YangContext.default()
        # The directory first: every other agent registers with it as it starts.
        for spec in sorted(lab.topology.agents, key=lambda a: a.role != RoleName.DIRECTORY):
            agent_dir = lab.agent_dir(spec.name)
            directory = spec.role == RoleName.DIRECTORY
            behaviour, peers = (None, None) if directory else make_behaviour(
                lab.topology,
                spec,
                lab.kernel,
                lab.network,
                lab.journal,
                lab.address_of,
                credentials=lab.login_of(spec.name),
                a2a_url_of=lab.a2a_url_of,
                a2a_trust=lab.a2a_trust,
                state_dir=agent_dir,
            )  # fmt: skip
            port = spec.port if lab.use_topology_ports else 0
            a2a_port = None if spec.a2a_port is None else spec.a2a_port if lab.use_topology_ports else 0
            server = AgentServer(
                ServerConfig(
                    state_dir=agent_dir,
                    host=HOST,
                    port=port,
                    users=users,
                    user_db=user_db,
                    profile=build_profile(spec),
                    behaviour=behaviour,
                    clock=lab.kernel.clock,
                    task_workers=TASK_CAPACITY,
                    # The agent's setting, as under `an-agent serve --topology` (default validate:
                    # learning from "other" loads the embedding model and is not deterministic).
                    schemas=spec.schemas,
                    schema_approval=spec.schema_approval,
                    a2a_port=a2a_port,
                    a2a_tls=lab.a2a_trust is not None,  # the certificate the lab made in agent_dir
                    templates=served_templates(spec, agent_dir),
                    directory=directory,
                    register_with=directory_login(lab.topology, spec.name, lab.address_of, lab.login_of(spec.name)),
                ),
                yang=yang,
            )
            if server.operations.directory is not None:
                journal_directory(server.operations.directory.registry, spec.name, lab.journal)
            server.start()
            self.agents[spec.name] = RunningAgent(spec, behaviour, peers, server)
            lab.serving(spec.name, server.port, server.a2a.port if server.a2a is not None else None)

    def stop(self) -> list[str]:
        # Servers before the agents' client sessions, and every server at once. Activities that are not
        # waiting on the kernel (a task worker in a NETCONF call to a peer) keep running after
        # `kernel.close`; only the peer's stop ends such a call, by closing its session, and a stopped
        # listener refuses the new session a worker would otherwise open once its old one was closed.
        # Stopped one after the other, with the client sessions first, a server waited for such a
        # worker until the request timeout (30 s): `lab down` right after `lab up` then hit its grace.
        # The directory after the others: they deregister as they stop.
        for last in (False, True):
            stoppers = [
                threading.Thread(target=_stop_server, args=(agent,), name=f"stop:{agent.spec.name}")
                for agent in self.agents.values()
                if (agent.spec.role == RoleName.DIRECTORY) == last
            ]
            for thread in stoppers:
                thread.start()
            for thread in stoppers:
                thread.join()
        dispatchers: list[threading.Thread] = []
        for agent in self.agents.values():
            if agent.peers is not None:
                dispatchers += agent.peers.close(join=False)
        for thread in dispatchers:
            thread.join(5.0)
        return []


def journal_directory(registry: Any, name: str, journal: Any) -> None:
    """Journal what the lab's directory agent ``name`` does: registrations, removals, queries.

    ``registry`` is its `an_agent.runtime.directory.Directory`; ``journal`` the lab's (or its proxy).
    """
    registry.observe(lambda kind, text, details: journal.note(name, f"directory_{kind}", text, **details))


def _stop_server(agent: RunningAgent) -> None:
    try:
        agent.server.stop()
    except AnAgentError as exc:
        log.warning("stopping %s: %s", agent.spec.name, exc)


def fresh_agent_dir(lab: FleetOwner, name: str) -> None:
    """Empty ``name``'s state directory (a run starts from empty agents) and give it the lab's host key."""
    agent_dir = lab.agent_dir(name)
    if agent_dir.is_mount():  # a lab soak's small tmpfs (`an_agent.lab.soak`): empty it, keep the mount
        for entry in agent_dir.iterdir():
            shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
    else:
        shutil.rmtree(agent_dir, ignore_errors=True)
    agent_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.copy2(lab.state_dir / "ssh_host_rsa_key", agent_dir / "ssh_host_rsa_key")
