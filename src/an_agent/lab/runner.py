"""`Lab`: a topology's agents on loopback, its network and scenario on simulated time.

::

    lab = Lab(load_topology(path), state_dir)
    lab.start()            # every agent a process of its own, a NETCONF server on its own 127.0.0.1 port
    lab.schedule_scenario()
    lab.play()             # until the closed loop is over (nothing left to do) or max_duration
    result = lab.collect() # tasks read back over NETCONF, KPIs, outcome, baseline
    lab.stop()             # kernel, agent processes, sessions: nothing left running

The lab process owns the simulated clock (`LabKernel`), the `SimNetwork` and the journal; the agents
reach them over the authenticated control channel (`an_agent.lab.fleet`, `an_agent.lab.conductor`).
Between agents everything is NETCONF (or A2A). The operator's ticket system, which brings complaints, is
a NETCONF client of the lab process named ``bss``. With ``in_process`` every agent runs inside the lab's
process instead (`an_agent.lab.inprocess`).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from an_agent import tracing
from an_agent.access.users import UserDb, agent_users
from an_agent.agents.engineer import ENGINEER
from an_agent.agents.peers import Exchange, Peers
from an_agent.errors import ConfigError
from an_agent.lab import netns as lab_netns
from an_agent.lab.agent import HOST, lab_host_key
from an_agent.lab.certs import a2a_url, hello_files, lab_a2a_certificates
from an_agent.lab.em.manager import ElementManager
from an_agent.lab.fleet import ProcessFleet
from an_agent.lab.inprocess import InProcessFleet, fresh_agent_dir
from an_agent.lab.journal import Journal, Note
from an_agent.lab.lockstep import LabKernel
from an_agent.lab.netns import LabNetwork
from an_agent.lab.network import SimNetwork
from an_agent.lab.placement import lab_host, runs_here
from an_agent.lab.services import Service, check_external, register_externals, start_services, stop_services
from an_agent.lab.spec import EventSpec, Role, Topology
from an_agent.model import AgentProfile, CommuType, Task, build_prompt
from an_agent.nc.registration import DirectoryRegistration

log = logging.getLogger(__name__)

ADMIN = ("admin", "admin")
"""The lab's own login on its agents (read-back, the ticket system; loopback only)."""


class Lab:
    """A running topology (module docstring).

    ``prefix``/``env``: what each agent process's command runs behind and with, ignored ``in_process``;
    without a prefix (or with ``netns``) agents are forked from the lab's template process
    (`an_agent.lab.zygote`), with one each is a new interpreter behind it.
    ``pace``: simulated seconds per wall second (`SimKernel.set_pace`), for participants the lab cannot see.
    ``netns``: every agent process in a network namespace of its own on a lab bridge (`an_agent.lab.netns`,
    made by `start`, removed by `stop`), listening on its lab address; needs root.
    """

    def __init__(
        self,
        topology: Topology,
        state_dir: Path,
        *,
        use_topology_ports: bool = False,
        on_note: Callable[[Note], None] | None = None,
        on_exchange: Callable[[Exchange], None] | None = None,
        stall_timeout: float = 60.0,
        in_process: bool = False,
        prefix: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        host: str | None = None,
        secret_file: Path | None = None,
        netns: bool = False,
        a2a_tls: bool = True,
        pace: float | None = None,
        otlp: str | None = None,
    ) -> None:
        if netns and in_process:
            raise ConfigError("--netns puts every agent in a process of its own: it does not go with --in-process")
        if netns and (host is not None or lab_host(topology) is not None):
            raise ConfigError("--netns puts every agent of the lab on this machine: it does not go with hosts:")
        self.topology = topology
        self.host = host
        """With ``hosts`` in the topology: the host this lab process runs on (its agents only; the clock,
        network and scenario when it is the first host)."""
        self.secret_file = secret_file
        """The control channel's secret, shared by the hosts of the lab (default: made in ``state_dir``)."""
        self.local_agents = tuple(a for a in topology.agents if runs_here(topology, a, host))
        self.netns = netns
        self.a2a_tls = a2a_tls
        self.a2a_trust: Path | None = None
        """With ``a2a_tls``, once started: the certificates every agent's A2A client trusts (`an_agent.lab.certs`)."""
        self.net: LabNetwork | None = None
        """The lab's network namespaces (with ``netns``, between `start` and `stop`)."""
        self._prefix = tuple(prefix)
        self.state_dir = state_dir
        self.use_topology_ports = use_topology_ports
        self.admin = ADMIN
        self.in_process = in_process
        self.otlp = otlp
        """The OpenTelemetry collector every agent process sends its spans to (``--otlp``), None: none."""
        self.kernel = LabKernel(topology.start_time, stall_timeout=stall_timeout)
        self.kernel.set_pace(pace)  # None: lock-step
        self.network = SimNetwork(topology.network, topology.seed, self.kernel.now, self.kernel.call_at)
        self.kernel.on_instant_end(self.network.sample)
        self.journal = Journal(self.kernel.now, on_note, on_exchange)
        self.fleet: InProcessFleet | ProcessFleet = InProcessFleet(self) if in_process else ProcessFleet(self, env)
        self._bss: Peers | None = None
        self.devices: dict[str, ElementManager] = {}
        """The element managers by name (the topology's ``devices:``), serving once started."""
        self._ports: dict[str, int] = {}
        self._logins: dict[str, str] = {}
        self._a2a_ports: dict[str, int] = {}
        self.end_reason: str | None = None
        self.event_gate: Callable[[EventSpec], bool] = lambda event: True
        """Whether a scenario event is still played when its instant comes (``lab soak``: until its wall-clock end)."""
        self.wall_seconds = 0.0
        """Real seconds from `start` to the end of `stop`."""
        self._started_at = 0.0
        self._stopped = False
        self._threads_before: set[threading.Thread] = set()
        self._externals = {a.name: a.external for a in topology.agents if a.external is not None}
        self.services: list[Service] = []
        self._external_profiles: dict[str, AgentProfile] = {}
        self._registrations: list[DirectoryRegistration] = []
        """The topology's ``services``, started first by `start` and stopped last by `stop`."""

    @property
    def agents(self) -> Mapping[str, Any]:
        """The running agents by name: each with its ``spec`` and ``port`` (and ``pid`` as processes)."""
        return self.fleet.agents

    # ---- lifecycle -------------------------------------------------------------------------------------
    def login_of(self, name: str) -> tuple[str, str]:
        """The ``(user, password)`` agent ``name`` logs in to its peers with (made by `start`, for this run)."""
        return name, self._logins[name]

    def host_of(self, name: str) -> str:
        """The address agent ``name`` listens on: its lab address with ``netns``, else the topology's
        ``address`` (default 127.0.0.1)."""
        return self.net.address(name) if self.net is not None else self.topology.agent(name).address or HOST

    def prefix_of(self, name: str) -> list[str]:
        """What agent ``name``'s command runs behind (``ip netns exec NS`` with ``netns``)."""
        return self.net.prefix(name) if self.net is not None else list(self._prefix)

    def netns_of(self, name: str) -> str | None:
        """The network namespace agent ``name`` runs in with ``netns`` (None without)."""
        return self.net.slot(name).netns if self.net is not None else None

    @property
    def control_host(self) -> str:
        """Where the lab serves its control channel: its address on the lab bridge with ``netns``, else 127.0.0.1."""
        return self.net.host_address if self.net is not None else HOST

    def address_of(self, name: str) -> tuple[str, int] | None:
        """Where agent (or element manager) ``name`` serves NETCONF; None while it does not."""
        external = self._externals.get(name)
        if external is not None:
            return external.netconf
        device = self.devices.get(name)
        if device is not None:
            return device.host, device.port
        port = self._ports.get(name)
        return None if port is None else (self.host_of(name), port)

    def a2a_url_of(self, name: str) -> str | None:
        """The A2A URL of an agent that serves the A2A face (``a2a_port`` in the topology, an external's ``a2a``)."""
        external = self._externals.get(name)
        if external is not None:
            return external.a2a
        port = self._a2a_ports.get(name)
        return None if port is None else a2a_url(self.host_of(name), port, self.a2a_trust)

    def agent_dir(self, name: str) -> Path:
        """Agent ``name``'s state directory (databases, host key, log)."""
        return self.state_dir / "agents" / name

    def _a2a_dir(self, name: str) -> Path:
        """Where agent ``name``'s A2A certificate is made: its state directory, or for an agent of another host
        a directory of this lab's, from which ``hello`` sends it (`hello_files`)."""
        here = any(a.name == name for a in self.local_agents)
        return self.agent_dir(name) if here else self.state_dir / "remote-a2a" / name

    def hello_files(self, name: str) -> dict[str, str]:
        """What the control channel's ``hello`` gives agent ``name`` for HTTPS (`an_agent.lab.certs.hello_files`)."""
        own = self._a2a_dir(name)
        return hello_files(self.a2a_trust, None if own == self.agent_dir(name) else own)

    def serving(self, name: str, port: int, a2a_port: int | None) -> None:
        """Agent ``name`` serves NETCONF on ``port`` (and A2A on ``a2a_port``): peers find it there."""
        self._ports[name] = port
        if a2a_port is not None:
            self._a2a_ports[name] = a2a_port

    def start(self) -> None:
        """Start every agent (a free port each, or the topology's with use_topology_ports).

        Each agent's databases go to ``state_dir/agents/<name>``, emptied first.
        """
        self._started_at = time.monotonic()
        self._threads_before = set(threading.enumerate())
        self.state_dir.mkdir(parents=True, exist_ok=True)
        lab_host_key(self.state_dir / "ssh_host_rsa_key")
        if isinstance(self.fleet, ProcessFleet) and self.topology.source is not None:
            self.fleet.prepare()  # the agents' template process loads while the lab makes the rest
        self.network.sample(self.kernel.now())
        # The lab itself (read-back, bss) logs in as admin; each agent logs in to its peers as itself
        # (a user per agent, an operator that may send as that agent only, a password made for this run),
        # so task ownership and task-sendFrom are checked between agents as between people.
        # The field engineers the lab plays are clients of their copilot, run with its login (`engineer_sessions`).
        engineers = {a.name: [ENGINEER] for a in self.topology.agents if a.role == Role.FME_COPILOT}
        agent_db, self._logins = agent_users((a.name for a in self.topology.agents), speaks_for=engineers)
        try:
            if self.netns:
                self.net = lab_netns.create(self.state_dir, [a.name for a in self.local_agents])
            for spec in self.local_agents:
                fresh_agent_dir(self, spec.name)  # a run starts from empty agents, never resumes
            # Every host's A2A agents: the first host makes them all (an_agent.lab.certs).
            serving_a2a = [(self._a2a_dir(a.name), self.host_of(a.name)) for a in self.topology.agents if a.a2a_port]
            if self.a2a_tls and serving_a2a:
                self.a2a_trust = lab_a2a_certificates(self.state_dir, serving_a2a)
            first = lab_host(self.topology)
            if first is None or self.host in (None, first.name):  # the host that has the network
                self._start_devices(agent_db, self.control_host if first is None else first.address)
                self._start_outside()
            if isinstance(self.fleet, InProcessFleet):
                self.fleet.start(dict([ADMIN]), agent_db)
            else:
                self.fleet.start({"logins": dict(self._logins), "speaks_for": engineers, "admin": list(ADMIN)})
            self._registrations = register_externals(self._external_profiles, self.topology, self.address_of)
        except BaseException:
            self.stop()
            raise
        complaint_agents = [a.name for a in self.topology.agents if a.role == Role.COMPLAINT]
        self._bss = Peers("bss", self.kernel, self.address_of, complaint_agents, self.journal.record, credentials=ADMIN)

    def _start_outside(self) -> None:
        """The topology's services (after the element managers, whose addresses their argv may name; before
        the agents, which may need them), then a check that each external agent answers."""
        base = self.topology.source.parent if self.topology.source is not None else Path.cwd()
        self.services = start_services(self.topology.services, base, self.state_dir, self.address_of)
        for agent in self.topology.agents:
            if agent.external is not None:
                self._external_profiles[agent.name] = check_external(agent)

    def _start_devices(self, agent_db: UserDb, host: str) -> None:
        """The element managers, in this process beside the network they serve (`an_agent.lab.em`)."""
        for device in self.topology.devices:
            # an agent the lab does not start cannot be told a free port: it finds them where the topology says
            fixed = self.use_topology_ports or self.net is not None or bool(self._externals)
            port = device.port if fixed else 0
            manager = ElementManager(
                device,
                self.network,
                self.kernel.call_at,
                self.kernel,
                state_dir=self.state_dir / "devices" / device.name,
                host=host,
                port=port,
                host_key=self.state_dir / "ssh_host_rsa_key",
                logins=dict([ADMIN]),
                user_db=agent_db,
                users_file=self.topology.users_file,
            )
            self.devices[device.name] = manager.start()

    def device_addresses(self) -> list[dict[str, Any]]:
        """Each element manager: ``name``, ``domain``, ``host``, ``port``, ``regions`` (``lab up --json``)."""
        return [
            {
                "name": name,
                "domain": str(manager.device.domain),
                "host": manager.host,
                "port": manager.port,
                "regions": list(manager.device.regions),
            }
            for name, manager in self.devices.items()
        ]

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
        """Stop activities, agents and sessions; returns what did not stop (threads, processes), empty when clean."""
        if self._stopped:
            return []
        self._stopped = True
        leftovers = self.kernel.close()
        if self._bss is not None:
            # The lab's own client before the agents: its dispatcher would take its peer's stop for a lost
            # session and try to reconnect (in a --netns lab, to an address that goes away with the network).
            self._bss.close()
        for registration in self._registrations:  # before the directory stops with the fleet
            registration.stop()
        leftovers += self.fleet.stop()
        for manager in self.devices.values():
            manager.stop()
        leftovers += stop_services(self.services)  # last: what the lab started first
        if self.net is not None:
            # after the fleet: a process still running in a namespace now is one the fleet did not stop
            removed = self.net.destroy()
            leftovers += [f"process {pid} left in the lab network" for pid in removed.processes]
        if self._started_at:
            self.wall_seconds = time.monotonic() - self._started_at
        return leftovers

    def leftovers(self, timeout: float = 5.0) -> tuple[list[str], list[str]]:
        """After `stop`: threads and agent processes still alive, and agent ports still accepting connections."""
        deadline = time.monotonic() + timeout
        while True:
            alive = [t for t in threading.enumerate() if t not in self._threads_before and t.is_alive()]
            if not alive or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        processes = self.fleet.leftovers() if isinstance(self.fleet, ProcessFleet) else []
        open_ports = []
        if self.net is not None:
            # its addresses are gone with it (another lab may have them now): look for its objects instead
            processes += lab_netns.leftover_labs().get(self.net.lab_id, [])
        for name, port in sorted(self._ports.items()) if self.net is None else ():
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.settimeout(0.5)
                if probe.connect_ex((HOST, port)) == 0:
                    open_ports.append(f"{name} ({HOST}:{port})")
        return sorted(t.name for t in alive) + processes, open_ports

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
            with AgentClient.connect(self.host_of(name), agent.port, username=ADMIN[0], password=ADMIN[1]) as client:
                out[name] = client.list_tasks()
        return out

    def bss_ticket(self, index: int, to: str, text: str) -> None:
        """The ticket system assigns ticket ``index`` (natural language) to a complaint agent, waits for its end."""
        assert self._bss is not None
        span = tracing.new_trace()  # a request from outside: a trace of its own
        task = Task(
            task_id=f"bss.ticket.{index}",
            send_from="bss",
            send_to=to,
            commu_type=CommuType.TASK_ASSIGN,
            content=build_prompt("trouble ticket", text),
            task_async=True,
            expected_response="the resolution of the complaint",
            traceparent=span.traceparent(),
        )
        tracing.event("bss", "request.sent", f"ticket {task.task_id} to {to}", span, task_id=task.task_id, peer=to)
        self.journal.note("bss", "ticket", f"ticket {task.task_id} sent to {to}: {text}", trace_id=span.trace_id)
        done = self._bss.peer(to).assign(task).result()
        reason = done.result.reason if done.result and done.result.reason else ""
        self.journal.note(
            "bss",
            "ticket_closed",
            f"ticket {task.task_id} {done.status}: {reason}",
            task_id=task.task_id,
            status=str(done.status),
        )


class _EventPlayer:
    def __init__(self, lab: Lab, index: int, event: EventSpec) -> None:
        self.lab, self.index, self.event = lab, index, event

    def __call__(self) -> None:
        if not self.lab.event_gate(self.event):
            return
        if self.event.fault is not None:
            fault = self.event.fault
            span = tracing.new_trace()  # the fault's trace: its alarms carry it to the agents
            text = f"{fault.type} on {fault.target}"
            tracing.event("scenario", "fault.injected", text, span, target=fault.target)  # before its alarms
            with tracing.use(span):
                record = self.lab.network.inject(fault)
            self.lab.journal.note(
                "scenario",
                "fault",
                text + (f": {len(record.affected_sites)} site(s) out of service" if record.affected_sites else ""),
                type=fault.type,
                target=fault.target,
                sites=list(record.affected_sites),
                trace_id=span.trace_id,
            )
        elif self.event.ticket is not None:
            self.lab.bss_ticket(self.index, self.event.ticket.to, self.event.ticket.text)
