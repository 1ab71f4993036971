"""What a lab behaviour sees of the world around its agent: time, the managed network, the inventory.

The behaviours of this package (RAN fault, IP fault, cross-domain fault, optimization, energy saving,
complaint, trouble ticket, FME copilots, service intent) run inside NETCONF agents, and act on a
network. The lab (``an_agent.lab``) provides the network as a deterministic simulation on a simulated
clock; these protocols are the contract, so the behaviours never import the lab (it sits above them)
and could be wired to another implementation.

Talking to *other agents* is not part of the environment: that is NETCONF, through `an_agent.agents.peers`.

Time rule: a behaviour never sleeps or blocks on real time. It waits with `Scheduler.sleep`, on a
`SimFuture` or on a `SimQueue`, so the scheduler knows it is idle and can move simulated time on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")


class RoleName(StrEnum):
    """The lab roles (a topology agent's ``role``); each is played by one behaviour (`an_agent.agents.roles`)."""

    CROSS_DOMAIN_FAULT = "cross-domain-fault"
    RAN_FAULT = "ran-fault"
    IP_FAULT = "ip-fault"
    OPTIMIZATION = "optimization"
    ENERGY_SAVING = "energy-saving"
    COMPLAINT = "complaint"
    FME_COPILOT = "fme-copilot"
    TROUBLE_TICKET = "trouble-ticket"
    SERVICE_INTENT = "service-intent"
    DIRECTORY = "directory"
    """The lab's directory (``an-agent-directory``): the others register with it and find peers there."""


class Layer(StrEnum):
    """Where an FME copilot sits (a topology agent's ``layer``): it talks to the engineer, or knows the network."""

    SERVICE = "service"
    RESOURCE = "resource"


SchemaMode = Literal["evolve", "validate", "off"]
"""An agent's structured-payload setting (``an-agent serve --schemas``, a topology's ``schemas``)."""
DEFAULT_SCHEMA_MODE: SchemaMode = "validate"
"""The setting of a topology agent that names none, under ``lab run``/``lab up`` and ``serve --topology``
alike: validate payloads against the agent's templates without learning from ``other`` (no embedding
model to load, runs stay deterministic)."""


class Shutdown(Exception):
    """Raised in a thread waiting on the scheduler when the lab stops: unwind and return."""


class SimFuture(Protocol[T]):
    """A value that another activity will provide; waiting on it lets simulated time run."""

    def set(self, value: T) -> None:
        """Provide the value and wake the waiters (from an activity, or from a covered hand-off)."""
        ...

    def wait(self) -> T:
        """Block until the value is set (raises `Shutdown` when the lab stops)."""
        ...

    @property
    def done(self) -> bool: ...


class SimQueue(Protocol[T]):
    """A FIFO between activities; `get` lets simulated time run while it is empty."""

    def put(self, item: T) -> None: ...

    def get(self) -> T:
        """The next item, blocking while there is none (raises `Shutdown` when the lab stops)."""
        ...


class Timer(Protocol):
    def cancel(self) -> None:
        """Do not run the callback (no effect once it ran)."""
        ...


class Scheduler(Protocol):
    """Simulated time and the bookkeeping that keeps it deterministic.

    An *activity* is a thread doing work for the lab; the scheduler moves time forward only when every
    activity is waiting (in `sleep`, `SimFuture.wait`, `SimQueue.get`). Work that crosses agents over
    NETCONF is covered by `hold`/`expect`/`arrive` so that nothing is in flight when time moves.
    """

    def now(self) -> float:
        """Simulated seconds since the epoch."""
        ...

    def sleep(self, seconds: float) -> None:
        """Let ``seconds`` of simulated time pass for the calling activity."""
        ...

    def spawn(self, label: str, fn: Callable[[], None]) -> None:
        """Start ``fn`` as a new activity (counted from this call, so nothing is lost in between)."""
        ...

    def call_at(self, when: float, label: str, fn: Callable[[], None]) -> Timer:
        """Run ``fn`` as a new activity when simulated time reaches ``when``."""
        ...

    def future(self, label: str) -> SimFuture[Any]: ...

    def queue(self, label: str) -> SimQueue[Any]: ...

    def hold(self, label: str) -> object:
        """Count one unit of pending work (e.g. a task accepted but not started); give it back with `release`."""
        ...

    def release(self, token: object) -> None: ...

    def adopt(self, token: object) -> None:
        """Make a held unit the calling thread's activity (a task worker starting the accepted task)."""
        ...

    def leave(self) -> None:
        """End the calling thread's activity (the counterpart of `adopt`)."""
        ...

    def expect(self, key: tuple[str, str]) -> SimFuture[Any]:
        """Announce that the caller awaits the end of task ``(agent, task_id)``; returns the future it will get."""
        ...

    def is_expected(self, key: tuple[str, str]) -> bool: ...

    def arrive(self, key: tuple[str, str]) -> None:
        """One side of the end-of-task hand-off: the executor when it returns, the assigner when notified."""
        ...

    def complete(self, key: tuple[str, str], value: Any) -> None:
        """The assigner's side: set the expected future and `arrive`."""
        ...

    def forget(self, key: tuple[str, str]) -> None:
        """Withdraw an `expect` (the assignment was refused)."""
        ...


# ---- the network, as the agents see it ------------------------------------------------------------


@dataclass(frozen=True)
class Alarm:
    """An alarm of the network's element management: raised, later cleared."""

    alarm_id: str
    domain: str
    """``wireless`` or ``ip_transport``."""
    element: str
    kind: str
    """e.g. ``site_out_of_service``, ``link_down``."""
    severity: str
    region: str
    raised_at: float
    text: str
    cleared_at: float | None = None
    traceparent: str | None = None
    """The trace of the fault that raised it (`an_agent.tracing`), None when none is known."""


@dataclass(frozen=True)
class NetworkEvent:
    """What an element manager reports: an alarm raised or cleared, or an element back in service."""

    kind: str
    """``alarm_raised``, ``alarm_cleared``."""
    alarm: Alarm
    time: float


@dataclass(frozen=True)
class CellView:
    cell_id: str
    site_id: str
    region: str
    in_service: bool
    users: int
    power_dbm: float
    base_power_dbm: float
    max_power_dbm: float
    tilt_deg: float
    base_tilt_deg: float
    min_tilt_deg: float
    max_tilt_deg: float
    energy_saving: str
    """``enabled``, ``suspended`` or ``reduced``."""
    saving_percent: float
    locked: bool = False
    """Administratively locked: the cell serves nobody (an element manager's ``admin-state``)."""


@dataclass(frozen=True)
class SiteView:
    site_id: str
    region: str
    in_service: bool
    cell_ids: tuple[str, ...]
    backhaul: tuple[str, ...]
    """Links from the site's access router towards the core, nearest first."""
    users: int


@dataclass(frozen=True)
class LinkView:
    link_id: str
    a: str
    b: str
    region: str
    up: bool
    evidence: str | None
    """What the routers report about a down link: ``loss_of_light`` or ``port_error_disabled``."""


@dataclass(frozen=True)
class RadioDiagnostics:
    """What the RAN element manager can find out about a site, in or out of band."""

    site_id: str
    reachable: bool
    finding: str
    """``healthy``, ``software_hang``, ``mains_power_lost``, ``unreachable`` (no radio-side evidence)."""
    misconfigured_cells: dict[str, dict[str, float]] = field(default_factory=dict)
    """cell -> {parameter: (current - planned)} for cells whose configuration differs from the plan."""


@dataclass(frozen=True)
class FaultLocation:
    """Where on a fibre the light is lost, as an OTDR shot from the link's ``a`` router measures it."""

    link_id: str
    measured_from: str
    """The router the distance is measured from (the link's ``a`` end)."""
    span_km: float
    """Length of the fibre between the two routers."""
    distance_km: float
    """Distance from ``measured_from`` to the break."""


@dataclass(frozen=True)
class AreaKpis:
    """The service KPIs of an area (one or more regions) at one instant, as a service intent watches them."""

    users_total: int
    users_without_service: float
    """Users of the area's cells without coverage (out-of-service sites not recovered by neighbours,
    misconfigured cells)."""
    energy_kw: float
    """What the area's cells draw now."""

    @property
    def coverage_percent(self) -> float:
        """Share of the area's users with coverage, in percent (100 for an area without users)."""
        if self.users_total <= 0:
            return 100.0
        return 100.0 * (1.0 - self.users_without_service / self.users_total)

    @property
    def energy_kwh_per_day(self) -> float:
        """The energy the area would use in a day at the current draw."""
        return self.energy_kw * 24.0


@dataclass(frozen=True)
class Place:
    """A named place of the network (road segment, district) for locating complaints."""

    name: str
    region: str
    aliases: tuple[str, ...]
    site_ids: tuple[str, ...]


class ManagedNetwork(Protocol):
    """The network's element managers: read state, act on elements, hear alarms.

    Every method is thread-safe. Actions raise `ValueError` with a message when refused (e.g. a power
    beyond a cell's limit).
    """

    # inventory and state
    def regions(self) -> list[str]: ...
    def region_aliases(self) -> dict[str, tuple[str, ...]]:
        """Each region with the other names people use for it (``north`` -> ``northern province``)."""
        ...

    def site(self, site_id: str) -> SiteView: ...
    def sites(self, regions: Sequence[str] | None = None) -> list[SiteView]: ...
    def cell(self, cell_id: str) -> CellView: ...
    def link(self, link_id: str) -> LinkView: ...
    def links(self, regions: Sequence[str] | None = None) -> list[LinkView]: ...
    def sites_behind(self, link_id: str) -> list[str]: ...
    def neighbour_cells(self, cell_ids: Sequence[str]) -> list[str]:
        """In-service cells of the sites next to these cells' sites (not the cells themselves)."""
        ...

    def places(self) -> list[Place]: ...
    def active_alarms(self, regions: Sequence[str] | None = None, domain: str | None = None) -> list[Alarm]: ...
    def subscribe(
        self, listener: Callable[[NetworkEvent], None], domain: str | None = None, regions: Sequence[str] | None = None
    ) -> None:
        """Call ``listener`` (quickly: it runs in the acting thread) for every event; with ``domain`` or
        ``regions`` the listener ignores every event of an alarm outside them, so a network may leave those
        out (the lab leaves them out of what it sends an agent process; the listener still checks)."""
        ...

    def area_kpis(self, regions: Sequence[str]) -> AreaKpis:
        """The service KPIs of the cells of ``regions`` now."""
        ...

    def saving_cost_kw(self, cell_ids: Sequence[str]) -> float:
        """How much more the cells would draw with their energy saving suspended (0 for those already so)."""
        ...

    # diagnostics
    def radio_diagnostics(self, site_id: str) -> RadioDiagnostics: ...

    # actions
    def set_cell_radio(self, cell_id: str, power_dbm: float, tilt_deg: float, by: str) -> None: ...
    def set_energy_saving(self, cell_id: str, state: str, by: str, saving_percent: float | None = None) -> None: ...
    def reset_site(self, site_id: str, by: str) -> bool:
        """Restart the base station remotely; True when that cleared its fault."""
        ...

    def restore_cell_config(self, cell_id: str, by: str) -> bool:
        """Put the cell's planned configuration back; True when that cleared a misconfiguration."""
        ...

    def reset_port(self, link_id: str, by: str) -> bool:
        """Reset the router ports of a link; True when that brought it back up."""
        ...

    def dispatch_field_repair(self, element: str, ticket_id: str, by: str, note: str) -> float:
        """Open a trouble ticket for field maintenance; returns the simulated time the repair will be done."""
        ...

    def open_trouble_ticket(self, element: str, ticket_id: str, by: str, note: str) -> float:
        """Record a trouble ticket whose repair a field engineer does (`repair_on_site`), nothing scheduled.

        Returns the simulated time field maintenance nominally needs to be done (travel and work), the
        same as `dispatch_field_repair` would give. One field job per ticket and per fault: opening a ticket
        number already opened on ``element`` (a copilot resuming it after a restart), or another ticket for
        a fault of ``element`` that already has one, is the job under way: its time, nothing recorded again.
        """
        ...

    def repair_on_site(self, element: str, by: str, note: str) -> bool:
        """The field engineer's repair of ``element`` on site; False when it had no open fault."""
        ...

    # field facts
    def alarm_log(self) -> list[Alarm]:
        """Every alarm raised so far (cleared ones with ``cleared_at``), oldest first."""
        ...

    def fault_location(self, link_id: str) -> FaultLocation | None:
        """Where the light is lost on a cut fibre (OTDR), or None when the link has no cut."""
        ...

    def fault_on_site(self, element: str) -> str | None:
        """What a field engineer at ``element`` finds: the type of its open fault (``site_power_failure``,
        ``link_cut``, ...), or None when it has none. Unlike the remote reads it sees the element itself,
        whatever else is down around it (a site without backhaul may have power or not)."""
        ...


class Journal(Protocol):
    """The lab's record of what agents decided and did (the outcome and the report are built from it)."""

    def note(self, agent: str, kind: str, text: str, **details: Any) -> None: ...


@dataclass(frozen=True)
class AgentDirectoryEntry:
    name: str
    role: str
    regions: tuple[str, ...]
    """The regions (management domains) the agent is responsible for; empty means all."""
    layer: str | None = None
    """An FME copilot's `Layer` (None for other roles)."""
    skills: tuple[str, ...] = ()
    """The names of its skills (its profile's)."""


class PeerFinder(Protocol):
    """Peers found through a directory agent (`an_agent.agents.discovery.DirectoryPeers`) rather than wired."""

    def find(self, role: str) -> Sequence[str]:
        """Names of the agents the directory answers for ``role``'s skill, filtered by the ``talks_to`` policy."""
        ...

    def why_none(self, role: str) -> str:
        """Why the last query for ``role`` found no peer (the directory's answer and the policy), or ""."""
        ...


@dataclass(frozen=True)
class Timing:
    """Simulated durations (seconds) of the agents' work; the topology may override each."""

    alarm_detection: float = 30.0
    batch_window: float = 60.0
    correlation_window: float = 120.0
    config_check: float = 180.0
    diagnosis: float = 300.0
    compensation_apply: float = 60.0
    energy_saving_adjust: float = 30.0
    site_reset: float = 600.0
    port_reset: float = 120.0
    cell_reconfigure: float = 120.0
    ticket_parse: float = 60.0
    restoration_timeout: float = 12 * 3600.0


@dataclass
class AgentEnvironment:
    """Everything a lab behaviour is given besides NETCONF."""

    name: str
    role: str
    regions: tuple[str, ...]
    scheduler: Scheduler
    network: ManagedNetwork
    journal: Journal
    directory: tuple[AgentDirectoryEntry, ...]
    """The agents this one may talk to (the topology's ``talks_to``), with their roles and regions."""
    finder: PeerFinder | None = None
    """With a directory agent in the topology: peers are those it answers (filtered by ``directory``,
    the policy); None: ``directory`` is the wiring (a topology without a directory)."""
    senders: frozenset[str] | None = None
    """With a directory agent: who may assign tasks to this agent (``talks_to`` read backwards, and the
    lab's ticket system for complaint agents); a task from anyone else is refused. None: no check."""
    timing: Timing = field(default_factory=Timing)
    options: dict[str, Any] = field(default_factory=dict)
    task_capacity: int = 8
    """How many tasks the agent's server executes at once; a behaviour refuses more (they would queue
    while holding simulated time)."""

    incarnation: int = 1
    """How many times this agent has started on its state (1 the first time): the task ids of a restarted
    agent carry it, so that they never take the id of a task it assigned before it died."""
    schemas: SchemaMode = DEFAULT_SCHEMA_MODE
    """The agent's structured-payload setting: with a schema service (``evolve``, ``validate``) the
    server has already validated each assigned payload against the agent's own templates, evolved keys
    included, so the behaviour accepts keys its base template lacks (and ignores them); with ``off`` it
    is the only check and holds payloads to the base templates."""

    @property
    def accepts_evolved_keys(self) -> bool:
        """True when payload keys outside the base templates are accepted (see ``schemas``)."""
        return self.schemas != "off"

    def in_scope(self, region: str) -> bool:
        return not self.regions or region in self.regions

    def peers_with_role(self, role: RoleName, region: str | None = None, layer: Layer | None = None) -> list[str]:
        """Names of the reachable agents with ``role`` (responsible for ``region``, at ``layer`` when given), sorted.

        With a `finder`, only the agents the directory answered (and the policy allows) are reachable.
        """
        found = None if self.finder is None else set(self.finder.find(role))
        return sorted(
            e.name
            for e in self.directory
            if e.role == role
            and (found is None or e.name in found)
            and (region is None or not e.regions or region in e.regions)
            and (layer is None or e.layer == layer)
        )

    def why_no_peer(self, role: RoleName) -> str:
        """After `peers_with_role` found none: the directory's explanation ("" without a directory)."""
        return "" if self.finder is None else self.finder.why_none(role)
