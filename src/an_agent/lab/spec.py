"""The parts of a lab topology, as `an_agent.lab.topology.load_topology` builds them from a file.

Frozen dataclasses, one per element of the format (``topologies/README.md``); the defaults here are the
defaults a topology author relies on (the README lists them). `Role` and `FaultType` are the format's
vocabularies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

from an_agent.agents.environment import (
    DEFAULT_SCHEMA_MODE,
    AgentDirectoryEntry,
    Layer,
    RoleName,
    SchemaMode,
    Timing,
)
from an_agent.errors import ConfigError
from an_agent.lab.devices import DeviceSpec

Role = RoleName
"""The roles a topology agent may play (`an_agent.agents.environment.RoleName`)."""


class FaultType(StrEnum):
    """The faults a scenario may inject, and the kind of element each one targets."""

    LINK_CUT = "link_cut"
    ROUTER_PORT_FAULT = "router_port_fault"
    SITE_POWER_FAILURE = "site_power_failure"
    SITE_SOFTWARE_FAULT = "site_software_fault"
    CELL_MISCONFIGURATION = "cell_misconfiguration"

    @property
    def target_kind(self) -> str:
        """``link``, ``site`` or ``cell``: what the fault's ``target`` names."""
        if self in (FaultType.LINK_CUT, FaultType.ROUTER_PORT_FAULT):
            return "link"
        if self in (FaultType.SITE_POWER_FAILURE, FaultType.SITE_SOFTWARE_FAULT):
            return "site"
        return "cell"


DEFAULT_REPAIR_MINUTES = 90.0
"""A fault's ``repair_minutes`` when not given: nominal field-repair time (each visit varies +-15 %)."""
DEFAULT_COVERAGE_LOSS = 0.6
"""A cell misconfiguration's ``coverage_loss`` when not given."""
DEFAULT_NEIGHBOR_RADIUS_KM = 1.5
DEFAULT_MAX_DURATION_MINUTES = 24 * 60


SchemaApproval = Literal["auto", "manual"]


@dataclass(frozen=True)
class SkillSpec:
    name: str
    description: str | None = None
    tags: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()


@dataclass(frozen=True)
class UpstreamAuth:
    """How a gateway logs in to its A2A upstream: HTTP Basic with the ``user:password`` of a file, or the
    bearer token of a file (its first line). The secret stays in the file, never in the topology."""

    kind: Literal["basic", "bearer"]
    file: Path


@dataclass(frozen=True)
class ExternalSpec:
    """An agent the lab does not start (``external``): where it answers, and how to log in to it."""

    netconf: tuple[str, int] | None = None
    a2a: str | None = None
    credentials: Path | None = None
    """A file holding ``user:password`` (one line) our agents log in to it with; None: admin/admin."""
    trust: Path | None = None
    """The certificate (PEM) its A2A face's HTTPS is verified against."""


@dataclass(frozen=True)
class ServiceSpec:
    """An outside program the lab starts before its agents and stops after them (``services``)."""

    name: str
    argv: tuple[str, ...]
    """Run from the topology's directory; ``{python}`` and ``{here}`` already put in (`an_agent.lab.outsiders`)."""
    port: int
    ready_http: str | None = None
    """Ready when an HTTP GET of this path on 127.0.0.1:port answers 2xx; None: when the port accepts."""
    ready_seconds: float = 30.0


@dataclass(frozen=True)
class AgentSpec:
    name: str
    role: Role
    description: str | None = None
    domain: str | None = None
    provider: str = "an-agent lab"
    regions: tuple[str, ...] = ()
    port: int = 0
    address: str | None = None
    """Where its peers reach it (host name or IP); None: 127.0.0.1 (every agent on this machine)."""
    schemas: SchemaMode = DEFAULT_SCHEMA_MODE
    """Structured payloads (the agent's ``schemas``, else the topology's, else validate)."""
    schema_approval: SchemaApproval = "auto"
    """With ``schemas: evolve``: patches published as experimental by evolution (auto) or by an admin (manual)."""
    options: dict[str, Any] = field(default_factory=dict)
    skills: tuple[SkillSpec, ...] = ()
    """Empty: the role's skills."""
    layer: Layer | None = None
    """An ``fme-copilot``'s layer (required for that role, refused for the others); the behaviour also
    finds it in its ``options`` as ``layer``."""
    a2a_port: int | None = None
    """Also serve the A2A v1 face on this port (0: a free one under lab run); None: NETCONF only."""
    templates: tuple[Path, ...] = ()
    """Directories of the operator's own templates, served beside the shipped ones."""
    host: str | None = None
    """The topology host it runs on (``hosts``); its ``address`` is then that host's."""
    behaviour: str | None = None
    """An outsider's behaviour playing the role: ``PACKAGE.MODULE:CLASS`` or an ``an_agent.behaviours``
    entry-point name (a `an_agent.agents.sdk.LabBehaviour` subclass). None: the role's own."""
    command: tuple[str, ...] = ()
    """A program playing the role (argv; docs/behaviour-command.md); empty: none."""
    behaviour_timeout: float = 300.0
    """With ``command``: the longest one task's program may run (wall-clock seconds)."""
    a2a_upstream: str | None = None
    """An A2A agent at this URL does the work (the gateway, `an_agent.agents.gateway`)."""
    a2a_upstream_trust: Path | None = None
    """With ``a2a_upstream`` over HTTPS: the PEM its certificate is verified against."""
    a2a_upstream_auth: UpstreamAuth | None = None
    """With ``a2a_upstream``: how the gateway logs in to it (``basic`` or ``bearer``, from a file)."""
    external: ExternalSpec | None = None
    """The lab does not start this agent: it answers there already (`ExternalSpec`)."""
    southbound: Literal["simulator", "netconf"] = "simulator"
    """How it reaches the network: the simulator's interface, or the lab's element manager over NETCONF."""


@dataclass(frozen=True)
class HostSpec:
    """A machine of a lab that spans several (``hosts``); the first one runs the lab's clock and network."""

    name: str
    address: str
    """Where the host's agents listen and are reached (and, on the first host, the control channel)."""
    control_port: int = 7830
    """The first host's control channel port (agents of the other hosts join the lab there)."""


@dataclass(frozen=True)
class RegionSpec:
    name: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class RouterSpec:
    id: str
    region: str
    role: str = "access"


@dataclass(frozen=True)
class LinkSpec:
    id: str
    a: str
    b: str


@dataclass(frozen=True)
class CellDefaults:
    users: int = 100
    power_dbm: float = 43.0
    max_power_dbm: float = 46.0
    tilt_deg: float = 6.0
    min_tilt_deg: float = 0.0
    max_tilt_deg: float = 12.0
    energy_saving: bool = True
    saving_percent: float = 25.0


@dataclass(frozen=True)
class CellSpec:
    id: str
    users: int | None
    """None: the default, varied per cell by the seed."""
    power_dbm: float
    max_power_dbm: float
    tilt_deg: float
    min_tilt_deg: float
    max_tilt_deg: float
    energy_saving: bool
    saving_percent: float


@dataclass(frozen=True)
class SiteSpec:
    id: str
    region: str
    pos: tuple[float, float]
    backhaul: tuple[str, ...]
    cells: tuple[CellSpec, ...]
    neighbors: tuple[str, ...] | None = None


@dataclass(frozen=True)
class PlaceSpec:
    name: str
    aliases: tuple[str, ...]
    sites: tuple[str, ...]


@dataclass(frozen=True)
class NetworkSpec:
    regions: tuple[RegionSpec, ...]
    routers: tuple[RouterSpec, ...]
    links: tuple[LinkSpec, ...]
    sites: tuple[SiteSpec, ...]
    places: tuple[PlaceSpec, ...] = ()
    neighbor_radius_km: float = DEFAULT_NEIGHBOR_RADIUS_KM
    cell_defaults: CellDefaults = field(default_factory=CellDefaults)


@dataclass(frozen=True)
class FaultSpec:
    type: FaultType
    target: str
    repair_minutes: float = DEFAULT_REPAIR_MINUTES
    tilt_deg: float | None = None
    """A cell misconfiguration's tilt (default: the planned tilt + 8 deg)."""
    coverage_loss: float = DEFAULT_COVERAGE_LOSS


@dataclass(frozen=True)
class TicketSpec:
    to: str
    text: str


@dataclass(frozen=True)
class EventSpec:
    at: float
    """Seconds after the start of the run."""
    fault: FaultSpec | None = None
    ticket: TicketSpec | None = None


@dataclass(frozen=True)
class BaselineTiming:
    """Manual, sequential handling without agents (seconds), for the baseline comparison."""

    detection: float = 900.0
    triage: float = 1800.0
    handover: float = 900.0
    transport_diagnosis: float = 1800.0
    remote_repair: float = 1200.0
    complaint_handling: float = 3600.0


@dataclass(frozen=True)
class Topology:
    name: str
    description: str
    seed: int
    start_time: float
    agents: tuple[AgentSpec, ...]
    talks_to: dict[str, tuple[str, ...]]
    network: NetworkSpec
    events: tuple[EventSpec, ...]
    max_duration: float
    timing: Timing = field(default_factory=Timing)
    baseline: BaselineTiming = field(default_factory=BaselineTiming)
    source: Path | None = None
    peer_login_file: Path | None = None
    """A file holding ``user:password``, the login each agent uses on its peers (None: admin/admin)."""
    a2a_links: frozenset[tuple[str, str]] = frozenset()
    """(sender, receiver) pairs of ``talks_to`` marked ``transport: a2a``: tasks go over the receiver's A2A face."""
    hosts: tuple[HostSpec, ...] = ()
    """The machines the lab spans (empty: all on this one); see `HostSpec`."""
    services: tuple[ServiceSpec, ...] = ()
    """Outside programs the lab starts first and stops last (`ServiceSpec`)."""
    devices: tuple[DeviceSpec, ...] = ()
    """The lab's element managers (`DeviceSpec`)."""
    users_file: Path | None = None
    """Users (the users-file format) who log in to the element managers besides the lab's admin and agents."""

    def agent(self, name: str) -> AgentSpec:
        for agent in self.agents:
            if agent.name == name:
                return agent
        raise ConfigError(
            f"{self.source or self.name}: no agent named {name!r}; agents: {', '.join(a.name for a in self.agents)}"
        )

    def over_a2a(self, sender: str) -> frozenset[str]:
        """The peers ``sender`` sends tasks to over A2A."""
        return frozenset(receiver for who, receiver in self.a2a_links if who == sender)

    def may_talk(self, sender: str, receiver: str) -> bool:
        return receiver in self.talks_to.get(sender, ())

    @property
    def directory_agent(self) -> str | None:
        """The agent of role ``directory`` (at most one per lab), None without: ``talks_to`` is then the wiring."""
        return next((a.name for a in self.agents if a.role == RoleName.DIRECTORY), None)

    def senders_of(self, name: str) -> frozenset[str]:
        """The agents ``talks_to`` lets assign tasks to ``name`` (the policy read backwards)."""
        return frozenset(sender for sender, receivers in self.talks_to.items() if name in receivers)

    def directory_for(self, name: str) -> tuple[AgentDirectoryEntry, ...]:
        """The agents ``name`` may talk to, with role, regions and (FME copilots) layer."""
        from an_agent.agents.roles import ROLES  # the behaviours' registry: only when an agent is assembled

        allowed = set(self.talks_to.get(name, ()))
        return tuple(
            AgentDirectoryEntry(
                a.name,
                a.role,
                a.regions,
                a.layer,
                tuple(s.name for s in a.skills)
                or (tuple(s.name for s in ROLES[a.role].skills) if a.role in ROLES else ()),
            )
            for a in self.agents
            if a.name in allowed
        )
