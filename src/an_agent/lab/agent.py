"""One topology agent put together: its profile, its behaviour wired to a scheduler, network and peers.

`Lab` assembles every agent of a topology this way inside one process; `load_agent` assembles one for
``an-agent serve --topology FILE --agent NAME``. Nothing here starts a server: the caller passes the
profile and behaviour to `an_agent.server.AgentServer`.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from an_agent.agents.base import LabBehaviour
from an_agent.agents.discovery import DirectoryPeers
from an_agent.agents.engineer import ENGINEER
from an_agent.agents.environment import AgentEnvironment, ManagedNetwork, RoleName, SchemaMode
from an_agent.agents.exchange import Exchange
from an_agent.agents.peers import OutsideLogin, Peers
from an_agent.agents.plugins import load_behaviour_class
from an_agent.agents.roles import ROLES
from an_agent.errors import ConfigError
from an_agent.lab.devices import southbound_device
from an_agent.lab.em.southbound import NetconfNetwork
from an_agent.lab.incarnation import next_incarnation
from an_agent.lab.journal import Journal, Note
from an_agent.lab.kernel import SimKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.services import external_login, read_login
from an_agent.lab.spec import AgentSpec, NetworkSpec, Topology
from an_agent.lab.topology import load_topology
from an_agent.model import AgentProfile, Capability, Skill
from an_agent.nc.directory_client import DirectoryLogin

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
TASK_CAPACITY = 200
"""Tasks a lab agent executes at once (its server gets as many workers; most of them wait)."""
NEGOTIATION_TYPES = ["acp-task-feasibility-negotiation-v1.0", "acp-task-fulfillment-negotiation-v1.0"]

AddressOf = Callable[[str], "tuple[str, int] | None"]
UrlOf = Callable[[str], "str | None"]


class LabJournal(Protocol):
    """Where an agent's notes and exchanges go: the lab's `Journal`, or its proxy in an agent process."""

    def note(self, agent: str, kind: str, text: str, **details: Any) -> None: ...

    def record(self, exchange: Exchange) -> None: ...


def lab_host_key(path: Path) -> None:
    """One SSH host key for all the agents of a lab, each getting a copy.

    RSA 2048 rather than the server's default 3072: on loopback it protects nothing more, and every
    agent loads it at start (0.09 s against 0.25 s for 3072 bits, times the number of agents).
    """
    if path.exists():
        return
    import paramiko

    key = paramiko.RSAKey.generate(2048)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        key.write_private_key(fh)


DIRECTORY_SKILL = Skill(
    name="agent-discovery",
    description="find the registered agents by skill, domain, schema or provider (module an-agent-directory)",
    tags=["directory", "discovery", "registration"],
    input_modes=["text/plain", "application/json;schema=agent_query_v1"],
    output_modes=["application/json"],
)


def build_profile(spec: AgentSpec) -> AgentProfile:
    """The ``/irtf-agent:agent`` profile of a topology agent (skills from its role)."""
    if spec.role == RoleName.DIRECTORY:
        return AgentProfile(
            name=spec.name,
            alias=spec.role,
            description=spec.description or "the lab's directory: agents register on start and find peers here",
            type=spec.role,
            skills=[DIRECTORY_SKILL],
            version="1.0.0",
            provider=spec.provider,
            domain=spec.domain or "Management",
            capability=Capability(streaming=False, push_notifications=True, negotiate=list(NEGOTIATION_TYPES)),
            management_object="the lab's agents",
        )
    if spec.a2a_upstream:
        from an_agent.lab.upstream import upstream_profile

        return upstream_profile(spec)
    role = ROLES[spec.role]
    skills = [
        Skill(
            name=s.name,
            description=s.description,
            tags=list(s.tags),
            examples=list(s.examples),
            input_modes=list(role.skills[0].input_modes),
            output_modes=list(role.skills[0].output_modes),
        )
        for s in spec.skills
    ] or list(role.skills)
    return AgentProfile(
        name=spec.name,
        alias=spec.role,
        description=spec.description or behaviour_class(spec).description,
        type=spec.role,
        skills=skills,
        version="1.0.0",
        provider=spec.provider,
        domain=spec.domain or role.domain,
        capability=Capability(streaming=False, push_notifications=True, negotiate=list(NEGOTIATION_TYPES)),
        management_object=", ".join(spec.regions) or "all regions",
    )


def peer_login(topology: Topology) -> tuple[str, str]:
    """The ``(user, password)`` agents log in to their peers with: the topology's ``peer_login_file``.

    Without one, ``admin``/``admin``, which agents accept only on loopback. `ConfigError` when the file
    cannot be read or does not hold ``user:password``.
    """
    if topology.peer_login_file is None:
        return ("admin", "admin")
    return read_login(topology.peer_login_file, "peer_login_file")


def topology_addresses(topology: Topology) -> dict[str, tuple[str, int]]:
    """Each agent's NETCONF address as the topology gives it (``address``, default 127.0.0.1, and ``port``),
    and each element manager's with a port (on this machine: where ``lab up`` serves it)."""
    devices = {d.name: (HOST, d.port) for d in topology.devices if d.port}
    return {**devices, **{a.name: (a.address or HOST, a.port) for a in topology.agents if a.port}}


def topology_directory_login(topology: Topology, name: str) -> DirectoryLogin | None:
    """Where agent ``name`` served alone (``serve --topology``) registers: the topology's directory at its
    topology address, with the topology's `peer_login` (an exported lab's one login, which every agent of
    it accepts as an administrator, who may register any name). None when the topology has no directory."""
    return directory_login(topology, name, topology_addresses(topology).get, peer_login(topology))


def directory_login(
    topology: Topology, name: str, address_of: AddressOf, credentials: tuple[str, str]
) -> DirectoryLogin | None:
    """Agent ``name``'s login on its lab's directory agent (None: no directory, it is the directory, or
    the directory does not serve yet). Each agent logs in as itself: only it may (de)register its name."""
    directory = topology.directory_agent
    where = None if directory is None or directory == name else address_of(directory)
    return None if where is None else DirectoryLogin(where[0], where[1], credentials[0], credentials[1])


def make_behaviour(
    topology: Topology,
    spec: AgentSpec,
    kernel: SimKernel,
    network: ManagedNetwork,
    journal: LabJournal,
    address_of: AddressOf,
    task_capacity: int = TASK_CAPACITY,
    credentials: tuple[str, str] | None = None,
    a2a_url_of: UrlOf = lambda name: None,
    a2a_trust: Path | None = None,
    state_dir: Path | None = None,
    incarnation: int | None = None,
) -> tuple[LabBehaviour, Peers]:
    """The behaviour of one topology agent, wired to the lab's kernel, network, journal and addresses.

    ``credentials`` are the agent's login on its peers (default: the topology's `peer_login`).
    With ``southbound: netconf`` the behaviour reads and acts on the network through the lab's transport
    element manager (`an_agent.lab.em.southbound.NetconfNetwork`), logged in as itself.
    ``a2a_url_of`` gives the A2A URL of the peers it reaches over A2A (links marked ``transport: a2a``),
    ``a2a_trust`` the certificates their HTTPS is verified against (`an_agent.lab.certs`).
    ``state_dir`` is the agent's own directory (a ``command``'s working directory); ``incarnation`` this
    start's number (`an_agent.lab.incarnation`; counted in ``state_dir`` when not given).
    """
    if spec.role not in ROLES:
        raise ConfigError(f"agent {spec.name}: unknown role {spec.role!r}")
    credentials = credentials or peer_login(topology)
    if spec.southbound == "netconf":
        device = southbound_device(spec, topology.devices)
        if device is None:
            raise ConfigError(f"agent {spec.name}: southbound: netconf but no transport element manager serves it")
        # the lab's element manager, where the lab says it serves (a free port is known once it does)
        network = NetconfNetwork(network, functools.partial(address_of, device.name), credentials, device.name)
    finder = senders = None
    if topology.directory_agent is not None:
        # talks_to is policy here: peers are what the directory answers, reached where it says they are.
        login, wired = credentials, address_of  # the directory itself is where the lab says
        finder = DirectoryPeers(
            spec.name,
            topology.directory_agent,
            lambda: directory_login(topology, spec.name, wired, login),
            topology.talks_to.get(spec.name, ()),
            {str(name): role.skills[0].name for name, role in ROLES.items()},
            journal.record,
            kernel.now,
        )
        address_of = _found_first(finder.address_of, address_of)
        a2a_url_of = _found_first(finder.a2a_url_of, a2a_url_of)
        # the lab's ticket system brings complaints; a copilot's field engineer asks it
        extra = {"bss"} if spec.role == RoleName.COMPLAINT else set()
        extra |= {ENGINEER} if spec.role == RoleName.FME_COPILOT else set()
        senders = topology.senders_of(spec.name) | extra
    talks_to = topology.talks_to.get(spec.name, ())
    outside = {
        a.name: OutsideLogin(*external_login(a.external), a.external.trust)
        for a in topology.agents
        if a.external is not None and a.name in talks_to
    }
    peers = Peers(
        spec.name,
        kernel,
        address_of,
        talks_to,
        journal.record,
        credentials=credentials,
        over_a2a=topology.over_a2a(spec.name),
        a2a_url_of=a2a_url_of,
        a2a_trust=a2a_trust,
        outside=outside,
    )
    env = AgentEnvironment(
        name=spec.name,
        role=spec.role,
        regions=spec.regions,
        scheduler=kernel,
        network=network,
        journal=journal,
        directory=topology.directory_for(spec.name),
        finder=finder,
        senders=senders,
        timing=topology.timing,
        options=dict(spec.options),
        task_capacity=task_capacity,
        schemas=spec.schemas,
        incarnation=incarnation or (1 if state_dir is None else next_incarnation(state_dir)),
    )
    if spec.a2a_upstream:
        from an_agent.agents.gateway import GatewayBehaviour
        from an_agent.lab.upstream import open_spec_upstream

        return GatewayBehaviour(env, peers, lambda: open_spec_upstream(spec), spec.a2a_upstream), peers
    if spec.command:
        from an_agent.agents.command import CommandBehaviour

        return CommandBehaviour(env, peers, spec.command, state_dir, spec.behaviour_timeout, address_of), peers
    return behaviour_class(spec)(env, peers), peers


def behaviour_class(spec: AgentSpec) -> type[LabBehaviour]:
    """The class playing ``spec``: its ``behaviour`` (an outsider's, `an_agent.agents.plugins`), else the role's."""
    if spec.behaviour is None:
        return ROLES[spec.role].behaviour
    cls = load_behaviour_class(spec.behaviour)
    if not issubclass(cls, LabBehaviour):
        raise ConfigError(f"agent {spec.name}: behaviour {spec.behaviour} does not subclass LabBehaviour")
    return cls


def _found_first(found: Callable[[str], Any], wired: Callable[[str], Any]) -> Callable[[str], Any]:
    """Where the directory said a peer is; the lab's own book only for what it did not answer (the ticket
    system's own peers, or a peer asked for before any query)."""
    return lambda name: found(name) or wired(name)


@dataclass
class StandaloneAgent:
    """One topology agent assembled to be served on its own: its profile, behaviour and private world."""

    profile: AgentProfile
    behaviour: LabBehaviour
    kernel: SimKernel
    network: SimNetwork
    journal: Journal

    def start_clock(self) -> None:
        """Play simulated time in a daemon thread, as fast as the agent's work allows, until the process ends."""
        name = self.behaviour.name
        threading.Thread(
            target=self.kernel.run, kwargs={"forever": True}, name=f"lab-clock:{name}", daemon=True
        ).start()


def assemble_agent(topology: Topology, name: str, on_note: Callable[[Note], None] | None = None) -> StandaloneAgent:
    """Agent ``name`` of ``topology`` with its own idle copy of the network; the clock is not started yet.

    Peers are reached at their topology ``address`` (default 127.0.0.1) and ``port``, logged in as
    `peer_login` says. ``on_note`` receives the journal's notes (default: logged at INFO).
    """
    spec = topology.agent(name)
    kernel = SimKernel(topology.start_time, peers_elsewhere=True)
    network = SimNetwork(topology.network, topology.seed, kernel.now, kernel.call_at)
    addresses = topology_addresses(topology)
    urls = {a.name: f"http://{a.address or HOST}:{a.a2a_port}" for a in topology.agents if a.a2a_port}

    def address_of(peer: str) -> tuple[str, int] | None:
        return addresses.get(peer)

    def log_note(note: Note) -> None:
        log.info("%s %s: %s", note.agent, note.kind, note.text)

    journal = Journal(kernel.now, on_note=on_note or log_note)
    # `an-agent serve` gives the server its default 8 task workers.
    behaviour, _ = make_behaviour(
        topology, spec, kernel, network, journal, address_of, task_capacity=8, a2a_url_of=urls.get
    )
    return StandaloneAgent(build_profile(spec), behaviour, kernel, network, journal)


def standalone_agent(topology: Topology, name: str) -> tuple[AgentProfile, LabBehaviour]:
    """One agent for ``an-agent serve --topology``: its own idle copy of the network, peers at topology ports.

    The scenario is not played (another process's copy of the network would not see this one's
    repairs); use ``an-agent lab up`` to run a whole topology with its scenario.
    """
    agent = assemble_agent(topology, name)
    agent.start_clock()
    return agent.profile, agent.behaviour


def load_agent(path: Path, name: str, schemas: SchemaMode | None = None) -> tuple[AgentProfile, LabBehaviour]:
    """One agent of a topology, to serve on its own (``an-agent serve --topology FILE --agent NAME``).

    The agent gets its own copy of the simulated network and a scheduler that plays simulated time as
    fast as its work allows; it reaches the agents it may talk to at the ports the topology gives them.
    ``schemas`` overrides the agent's setting in the topology (``serve --schemas``); the server must be
    given the same (``behaviour.env.schemas``).
    """
    topology = load_topology(path)
    if topology.agent(name).role == RoleName.DIRECTORY:
        raise ConfigError(f"{name} is the topology's directory: it has no behaviour (serve plays it as a registry)")
    if schemas is not None:
        spec = replace(topology.agent(name), schemas=schemas)
        topology = replace(topology, agents=tuple(spec if a.name == name else a for a in topology.agents))
    return standalone_agent(topology, name)


def plugin_agent(
    profile: AgentProfile, build: Callable[[AgentEnvironment, Peers], LabBehaviour], schemas: SchemaMode
) -> LabBehaviour:
    """A `LabBehaviour` (``build(env, peers)``, e.g. its class) served with a profile and no topology
    (``serve --behaviour --profile``, ``--behaviour-command``).

    It gets what a lab agent gets, empty: a simulated clock that plays as fast as its work allows
    (from now), a network with no element, no peers. Time it waits (``env.scheduler.sleep``) passes at
    once; for a network and peers, name it in a topology (``behaviour:``).
    """
    import time

    kernel = SimKernel(time.time(), peers_elsewhere=True)
    network = SimNetwork(NetworkSpec((), (), (), ()), 0, kernel.now, kernel.call_at)
    journal = Journal(kernel.now, on_note=lambda note: log.info("%s %s: %s", note.agent, note.kind, note.text))
    peers = Peers(profile.name, kernel, lambda name: None, (), journal.record)
    env = AgentEnvironment(
        name=profile.name,
        role=profile.type or "plugin",
        regions=(),
        scheduler=kernel,
        network=network,
        journal=journal,
        directory=(),
        task_capacity=TASK_CAPACITY,  # more than the server's workers: the extra tasks wait for one, none refused
        schemas=schemas,
    )
    behaviour = build(env, peers)
    threading.Thread(target=kernel.run, kwargs={"forever": True}, name=f"clock:{profile.name}", daemon=True).start()
    return behaviour
