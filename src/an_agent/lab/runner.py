"""`Lab`: a topology's agents running on loopback, its network and scenario on simulated time.

::

    lab = Lab(load_topology(path), state_dir)
    lab.start()            # every agent a NETCONF server on its own 127.0.0.1 port
    lab.schedule_scenario()
    lab.play()             # until the closed loop is over (nothing left to do) or max_duration
    result = lab.collect() # tasks read back over NETCONF, KPIs, outcome, baseline
    lab.stop()             # kernel activities, sessions, servers: nothing left running

All agents of a lab live in this process and share one `SimKernel` (the clock of their servers) and one
`SimNetwork`; everything between them is NETCONF. The operator's ticket system, which brings
complaints, is a NETCONF client named ``bss``.
"""

from __future__ import annotations

import logging
import shutil
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from an_agent.access.users import agent_users
from an_agent.agents.base import LabBehaviour
from an_agent.agents.engineer import ENGINEER
from an_agent.agents.peers import Exchange, Peers
from an_agent.errors import AnAgentError
from an_agent.lab.agent import HOST, TASK_CAPACITY, build_profile, lab_host_key, make_behaviour
from an_agent.lab.journal import Journal, Note
from an_agent.lab.kernel import SimKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.spec import AgentSpec, EventSpec, Role, Topology
from an_agent.model import CommuType, Task, build_prompt

log = logging.getLogger(__name__)


@dataclass
class RunningAgent:
    spec: AgentSpec
    behaviour: LabBehaviour
    peers: Peers
    server: Any
    """The `AgentServer` (typed loosely: importing the server stack is deferred to `Lab.start`)."""

    @property
    def port(self) -> int:
        port: int = self.server.port
        return port


class Lab:
    """A running topology (module docstring)."""

    def __init__(
        self,
        topology: Topology,
        state_dir: Path,
        *,
        use_topology_ports: bool = False,
        on_note: Callable[[Note], None] | None = None,
        on_exchange: Callable[[Exchange], None] | None = None,
        stall_timeout: float = 60.0,
    ) -> None:
        self.topology = topology
        self.state_dir = state_dir
        self.use_topology_ports = use_topology_ports
        self.kernel = SimKernel(topology.start_time, stall_timeout=stall_timeout)
        self.network = SimNetwork(topology.network, topology.seed, self.kernel.now, self.kernel.call_at)
        self.kernel.on_instant_end(self.network.sample)
        self.journal = Journal(self.kernel.now, on_note, on_exchange)
        self.agents: dict[str, RunningAgent] = {}
        self._bss: Peers | None = None
        self._ports: dict[str, int] = {}
        self._logins: dict[str, str] = {}
        self._a2a_ports: dict[str, int] = {}
        self.end_reason: str | None = None
        self.wall_seconds = 0.0
        """Real seconds from `start` to the end of `stop`."""
        self._started_at = 0.0
        self._stopped = False
        self._threads_before: set[threading.Thread] = set()

    # ---- lifecycle -------------------------------------------------------------------------------------
    def login_of(self, name: str) -> tuple[str, str]:
        """The ``(user, password)`` agent ``name`` logs in to its peers with (made by `start`, for this run)."""
        return name, self._logins[name]

    def address_of(self, name: str) -> tuple[str, int] | None:
        port = self._ports.get(name)
        return None if port is None else (HOST, port)

    def a2a_url_of(self, name: str) -> str | None:
        """The A2A URL of an agent that serves the A2A face (``a2a_port`` in the topology)."""
        port = self._a2a_ports.get(name)
        return None if port is None else f"http://{HOST}:{port}"

    def start(self) -> None:
        """Start every agent's NETCONF server (a free port each, or the topology's with use_topology_ports).

        Each agent's databases go to ``state_dir/agents/<name>``, emptied first.
        """
        from an_agent.server import AgentServer, ServerConfig
        from an_agent.yang.context import YangContext

        self._started_at = time.monotonic()
        self._threads_before = set(threading.enumerate())
        self.state_dir.mkdir(parents=True, exist_ok=True)
        yang = YangContext.default()
        key_file = self.state_dir / "ssh_host_rsa_key"
        lab_host_key(key_file)
        self.network.sample(self.kernel.now())
        # The lab itself (read-back, bss) logs in as admin; each agent logs in to its peers as itself
        # (a user per agent, an operator that may send as that agent only, a password made for this run),
        # so task ownership and task-sendFrom are checked between agents as between people.
        users = {"admin": "admin"}
        # The field engineers the lab plays are clients of their copilot, run with its login (`engineer_sessions`).
        engineers = {a.name: [ENGINEER] for a in self.topology.agents if a.role == Role.FME_COPILOT}
        agent_db, self._logins = agent_users((a.name for a in self.topology.agents), speaks_for=engineers)
        try:
            for spec in self.topology.agents:
                agent_dir = self.state_dir / "agents" / spec.name
                shutil.rmtree(agent_dir, ignore_errors=True)  # a run starts from empty agents, never resumes
                agent_dir.mkdir(parents=True)
                if not (agent_dir / "ssh_host_rsa_key").exists():
                    shutil.copy2(key_file, agent_dir / "ssh_host_rsa_key")
                behaviour, peers = make_behaviour(
                    self.topology,
                    spec,
                    self.kernel,
                    self.network,
                    self.journal,
                    self.address_of,
                    credentials=self.login_of(spec.name),
                    a2a_url_of=self.a2a_url_of,
                )
                port = spec.port if self.use_topology_ports else 0
                a2a_port = None if spec.a2a_port is None else spec.a2a_port if self.use_topology_ports else 0
                server = AgentServer(
                    ServerConfig(
                        state_dir=agent_dir,
                        host=HOST,
                        port=port,
                        users=users,
                        user_db=agent_db,
                        profile=build_profile(spec),
                        behaviour=behaviour,
                        clock=self.kernel.clock,
                        task_workers=TASK_CAPACITY,
                        # The agent's setting, as under `an-agent serve --topology` (default validate:
                        # learning from "other" loads the embedding model and is not deterministic).
                        schemas=spec.schemas,
                        schema_approval=spec.schema_approval,
                        a2a_port=a2a_port,
                        templates=list(spec.templates),
                    ),
                    yang=yang,
                )
                server.start()
                self.agents[spec.name] = RunningAgent(spec, behaviour, peers, server)
                self._ports[spec.name] = server.port
                if server.a2a is not None:
                    self._a2a_ports[spec.name] = server.a2a.port
        except BaseException:
            self.stop()
            raise
        complaint_agents = [a.name for a in self.topology.agents if a.role == Role.COMPLAINT]
        self._bss = Peers("bss", self.kernel, self.address_of, complaint_agents, self.journal.record)

    def schedule_scenario(self) -> None:
        """Put the scenario's faults and tickets on the simulated timeline."""
        tickets = 0
        for index, event in enumerate(self.topology.events):
            when = self.topology.start_time + event.at
            if event.ticket is not None:
                tickets += 1
            self.kernel.call_at(when, f"scenario event {index + 1}", _EventPlayer(self, tickets, event))

    def play(self, forever: bool = False) -> str:
        """Run simulated time until nothing is left to do (or max_duration); returns why it ended."""
        deadline = self.topology.start_time + self.topology.max_duration
        self.end_reason = self.kernel.run(until=None if forever else deadline, forever=forever)
        return self.end_reason

    def stop(self) -> list[str]:
        """Stop activities, sessions and servers; returns what did not stop (threads), empty when clean."""
        if self._stopped:
            return []
        self._stopped = True
        leftovers = self.kernel.close()
        # Servers before the agents' client sessions, and every server at once. Activities that are not
        # waiting on the kernel (a task worker in a NETCONF call to a peer) keep running after
        # `kernel.close`; only the peer's stop ends such a call, by closing its session, and a stopped
        # listener refuses the new session a worker would otherwise open once its old one was closed.
        # Stopped one after the other, with the client sessions first, a server waited for such a
        # worker until the request timeout (30 s): `lab down` right after `lab up` then hit its grace.
        stoppers = [
            threading.Thread(target=_stop_server, args=(agent,), name=f"stop:{agent.spec.name}")
            for agent in self.agents.values()
        ]
        for thread in stoppers:
            thread.start()
        for thread in stoppers:
            thread.join()
        dispatchers: list[threading.Thread] = []
        for peers in [*(a.peers for a in self.agents.values()), *([self._bss] if self._bss else [])]:
            dispatchers += peers.close(join=False)  # all sessions first: the dispatchers then end together
        for thread in dispatchers:
            thread.join(5.0)
        if self._started_at:
            self.wall_seconds = time.monotonic() - self._started_at
        return leftovers

    def leftovers(self, timeout: float = 5.0) -> tuple[list[str], list[str]]:
        """After `stop`: threads started by the lab still alive, and agent ports still accepting connections."""
        deadline = time.monotonic() + timeout
        while True:
            alive = [t for t in threading.enumerate() if t not in self._threads_before and t.is_alive()]
            if not alive or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        open_ports = []
        for name, port in sorted(self._ports.items()):
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.settimeout(0.5)
                if probe.connect_ex((HOST, port)) == 0:
                    open_ports.append(f"{name} ({HOST}:{port})")
        return sorted(t.name for t in alive), open_ports

    def __enter__(self) -> Lab:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- reading back -----------------------------------------------------------------------------------
    def read_tasks(self) -> dict[str, list[Task]]:
        """Every agent's tasks, read over NETCONF (``<get>`` of /tasks) by the lab itself."""
        from an_agent.nc.agent_client import AgentClient

        out: dict[str, list[Task]] = {}
        for name, agent in self.agents.items():
            with AgentClient.connect(HOST, agent.port, username="admin", password="admin") as client:
                out[name] = client.list_tasks()
        return out

    def bss_ticket(self, index: int, to: str, text: str) -> None:
        """The ticket system assigns ticket ``index`` (natural language) to a complaint agent, waits for its end."""
        assert self._bss is not None
        task = Task(
            task_id=f"bss.ticket.{index}",
            send_from="bss",
            send_to=to,
            commu_type=CommuType.TASK_ASSIGN,
            content=build_prompt("trouble ticket", text),
            task_async=True,
            expected_response="the resolution of the complaint",
        )
        self.journal.note("bss", "ticket", f"ticket {task.task_id} sent to {to}: {text}")
        done = self._bss.peer(to).assign(task).result()
        reason = done.result.reason if done.result and done.result.reason else ""
        self.journal.note(
            "bss",
            "ticket_closed",
            f"ticket {task.task_id} {done.status}: {reason}",
            task_id=task.task_id,
            status=str(done.status),
        )


def _stop_server(agent: RunningAgent) -> None:
    try:
        agent.server.stop()
    except AnAgentError as exc:
        log.warning("stopping %s: %s", agent.spec.name, exc)


class _EventPlayer:
    def __init__(self, lab: Lab, index: int, event: EventSpec) -> None:
        self.lab, self.index, self.event = lab, index, event

    def __call__(self) -> None:
        if self.event.fault is not None:
            fault = self.event.fault
            record = self.lab.network.inject(fault)
            self.lab.journal.note(
                "scenario",
                "fault",
                f"{fault.type} on {fault.target}"
                + (f": {len(record.affected_sites)} site(s) out of service" if record.affected_sites else ""),
                type=fault.type,
                target=fault.target,
                sites=list(record.affected_sites),
            )
        elif self.event.ticket is not None:
            self.lab.bss_ticket(self.index, self.event.ticket.to, self.event.ticket.text)
