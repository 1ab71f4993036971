"""`SimNetwork`: the deterministic mobile + transport network behind a lab's agents.

Sites with cells (users, transmit power, antenna tilt, energy-saving state), transport routers and
links, the backhaul path of every site, alarms, and the KPIs the agents are judged by. It implements
`an_agent.agents.environment.ManagedNetwork` (what the agents' element managers offer) and adds what
the lab itself needs: fault injection, the change log, KPI samples, the end-of-run checks.

The coverage model is deliberately small but has the couplings the use cases are about:

- a site is in service when it has no fault of its own and every link of its backhaul is up;
- the users of an out-of-service site lose coverage, except the share its in-service neighbour cells
  recover: on average ``0.10`` per dB of extra power and ``0.06`` per degree of uptilt (scaled down
  when fewer than ``FULL_NEIGHBOURHOOD`` neighbour cells are in service), up to ``RECOVERY_CAP``;
- a neighbour cell still in energy saving transmits ``ES_POWER_PENALTY_DB`` below its setting, which is
  why the optimization agent asks the energy-saving agent to suspend saving before compensating;
- a misconfigured cell (wrong tilt, no alarm) leaves ``coverage_loss`` of its users without coverage;
- energy: ``0.8 kW + 0.03 kW per W`` of transmit power per cell in service, less the saving share while
  energy saving is enabled; an out-of-service cell still idles at ``0.8 kW`` unless its site lost power.

Randomness (users per cell when not given, field repair durations) comes from ``random.Random`` seeded
with the topology seed and the element, never from a shared stream, so thread order cannot change it.
"""

from __future__ import annotations

import functools
import math
import random
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from an_agent.agents.environment import (
    Alarm,
    CellView,
    LinkView,
    NetworkEvent,
    Place,
    RadioDiagnostics,
    SiteView,
    Timer,
)
from an_agent.lab.topology import FaultSpec, NetworkSpec

RECOVERY_CAP = 0.85
POWER_GAIN_PER_DB = 0.10
TILT_GAIN_PER_DEG = 0.06
FULL_NEIGHBOURHOOD = 6
"""Neighbour cells needed for the full effect; fewer recover proportionally less."""
ES_POWER_PENALTY_DB = 3.0
BASE_CELL_KW = 0.8
KW_PER_TX_WATT = 0.03

LINK_FAULTS = {"link_cut": "loss_of_light", "router_port_fault": "port_error_disabled"}
SITE_FAULTS = {"site_power_failure": "mains_power_lost", "site_software_fault": "software_hang"}


@dataclass
class _Cell:
    cell_id: str
    site_id: str
    users: int
    base_power: float
    max_power: float
    base_tilt: float
    min_tilt: float
    max_tilt: float
    es_configured: bool
    base_saving: float
    power: float = 0.0
    tilt: float = 0.0
    es_state: str = "enabled"
    saving: float = 0.0
    coverage_loss: float = 0.0
    """Share of users without coverage because of a misconfiguration (0 when configured as planned)."""


@dataclass
class _Site:
    site_id: str
    region: str
    pos: tuple[float, float]
    backhaul: tuple[str, ...]
    cell_ids: tuple[str, ...]
    neighbours: tuple[str, ...] = ()
    fault: str | None = None
    in_service: bool = True


@dataclass
class _Link:
    link_id: str
    a: str
    b: str
    region: str
    fault: str | None = None


@dataclass
class FaultRecord:
    """One injected fault and what became of it."""

    spec: FaultSpec
    injected_at: float
    affected_sites: tuple[str, ...] = ()
    affected_cells: tuple[str, ...] = ()
    repaired_at: float | None = None
    repaired_by: str | None = None
    repair_kind: str | None = None
    """``remote`` or ``field``."""
    restored_at: float | None = None
    """When every site and cell it took out was back in service (None while one is not)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.spec.type,
            "target": self.spec.target,
            "injected_at": self.injected_at,
            "affected_sites": list(self.affected_sites),
            "affected_cells": list(self.affected_cells),
            "repaired_at": self.repaired_at,
            "repaired_by": self.repaired_by,
            "repair_kind": self.repair_kind,
            "restored_at": self.restored_at,
        }


@dataclass(frozen=True)
class Change:
    """One entry of the change log: who changed what in the network, when."""

    time: float
    by: str
    element: str
    action: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "by": self.by, "element": self.element, "action": self.action, "text": self.text}


@dataclass
class Kpis:
    cells_in_service: int
    cells_total: int
    sites_out_of_service: int
    users_total: int
    users_without_coverage: float
    energy_kw: float
    compensating_cells: int
    energy_saving_suspended: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "cells_in_service": self.cells_in_service,
            "cells_total": self.cells_total,
            "sites_out_of_service": self.sites_out_of_service,
            "users_total": self.users_total,
            "users_without_coverage": round(self.users_without_coverage, 1),
            "energy_kw": round(self.energy_kw, 2),
            "compensating_cells": self.compensating_cells,
            "energy_saving_suspended": self.energy_saving_suspended,
        }


@dataclass
class _Pending:
    events: list[NetworkEvent] = field(default_factory=list)


CallAt = Callable[[float, str, Callable[[], None]], Timer]


def field_repair_seconds(seed: int, element: str, occurrence: int, minutes: float) -> float:
    """How long field maintenance takes for a fault: nominal +-15 %, fixed by seed, element and occurrence.

    The baseline uses the same function, so agents and manual handling face the same field work.
    """
    jitter = random.Random(f"{seed}:field:{element}:{occurrence}").uniform(0.85, 1.15)
    return float(round(minutes * 60.0 * jitter))


class SimNetwork:
    """The simulated network (module docstring). Thread-safe; listeners are called outside its lock."""

    def __init__(self, spec: NetworkSpec, seed: int, now: Callable[[], float], call_at: CallAt) -> None:
        self._spec = spec
        self._seed = seed
        self._now = now
        self._call_at = call_at
        self._lock = threading.RLock()
        self._listeners: list[Callable[[NetworkEvent], None]] = []
        self._cells: dict[str, _Cell] = {}
        self._sites: dict[str, _Site] = {}
        self._links: dict[str, _Link] = {}
        self._router_region = {r.id: r.region for r in spec.routers}
        for link in spec.links:
            self._links[link.id] = _Link(link.id, link.a, link.b, self._router_region.get(link.a, ""))
        for site in spec.sites:
            for cell in site.cells:
                users = cell.users
                if users is None:  # not given: the default, varied per cell by the seed
                    rng = random.Random(f"{seed}:users:{cell.id}")
                    users = round(spec.cell_defaults.users * rng.uniform(0.7, 1.3))
                self._cells[cell.id] = _Cell(
                    cell_id=cell.id,
                    site_id=site.id,
                    users=users,
                    base_power=cell.power_dbm,
                    max_power=cell.max_power_dbm,
                    base_tilt=cell.tilt_deg,
                    min_tilt=cell.min_tilt_deg,
                    max_tilt=cell.max_tilt_deg,
                    es_configured=cell.energy_saving,
                    base_saving=cell.saving_percent,
                    power=cell.power_dbm,
                    tilt=cell.tilt_deg,
                    es_state="enabled" if cell.energy_saving else "disabled",
                    saving=cell.saving_percent,
                )
            self._sites[site.id] = _Site(site.id, site.region, site.pos, site.backhaul, tuple(c.id for c in site.cells))
        for site in spec.sites:
            self._sites[site.id].neighbours = site.neighbors if site.neighbors is not None else self._near(site.id)
        self._places = [Place(p.name, self._sites[p.sites[0]].region, p.aliases, p.sites) for p in spec.places]
        self._alarms: dict[tuple[str, str], Alarm] = {}
        self._alarm_log: list[Alarm] = []
        self._alarm_count: dict[str, int] = {}
        self._faults: list[FaultRecord] = []
        self._changes: list[Change] = []
        self._samples: list[tuple[float, Kpis]] = []
        self._tickets: list[dict[str, Any]] = []

    def _near(self, site_id: str) -> tuple[str, ...]:
        me = self._sites[site_id]
        radius = self._spec.neighbor_radius_km
        return tuple(
            s.site_id for s in self._sites.values() if s.site_id != site_id and math.dist(me.pos, s.pos) <= radius
        )

    # ---- ManagedNetwork: inventory and state -------------------------------------------------------
    def regions(self) -> list[str]:
        return [r.name for r in self._spec.regions]

    def region_aliases(self) -> dict[str, tuple[str, ...]]:
        return {r.name: r.aliases for r in self._spec.regions}

    def site(self, site_id: str) -> SiteView:
        with self._lock:
            site = self._site(site_id)
            return SiteView(
                site.site_id,
                site.region,
                site.in_service,
                site.cell_ids,
                site.backhaul,
                sum(self._cells[c].users for c in site.cell_ids),
            )

    def sites(self, regions: Sequence[str] | None = None) -> list[SiteView]:
        return [self.site(s) for s in sorted(self._sites) if regions is None or self._sites[s].region in regions]

    def cell(self, cell_id: str) -> CellView:
        with self._lock:
            cell = self._cell(cell_id)
            site = self._sites[cell.site_id]
            return CellView(
                cell_id=cell.cell_id,
                site_id=cell.site_id,
                region=site.region,
                in_service=site.in_service,
                users=cell.users,
                power_dbm=cell.power,
                base_power_dbm=cell.base_power,
                max_power_dbm=cell.max_power,
                tilt_deg=cell.tilt,
                base_tilt_deg=cell.base_tilt,
                min_tilt_deg=cell.min_tilt,
                max_tilt_deg=cell.max_tilt,
                energy_saving=cell.es_state,
                saving_percent=cell.saving,
            )

    def link(self, link_id: str) -> LinkView:
        with self._lock:
            link = self._link(link_id)
            return LinkView(
                link.link_id, link.a, link.b, link.region, link.fault is None, LINK_FAULTS.get(link.fault or "")
            )

    def links(self, regions: Sequence[str] | None = None) -> list[LinkView]:
        return [self.link(k) for k in sorted(self._links) if regions is None or self._links[k].region in regions]

    def sites_behind(self, link_id: str) -> list[str]:
        self._link(link_id)
        return sorted(s.site_id for s in self._sites.values() if link_id in s.backhaul)

    def neighbour_cells(self, cell_ids: Sequence[str]) -> list[str]:
        with self._lock:
            own_sites = {self._cell(c).site_id for c in cell_ids}
            out: set[str] = set()
            for site_id in own_sites:
                for neighbour in self._sites[site_id].neighbours:
                    site = self._sites[neighbour]
                    if neighbour not in own_sites and site.in_service:
                        out.update(site.cell_ids)
            return sorted(out)

    def places(self) -> list[Place]:
        return list(self._places)

    def active_alarms(self, regions: Sequence[str] | None = None, domain: str | None = None) -> list[Alarm]:
        with self._lock:
            return sorted(
                (
                    a
                    for a in self._alarms.values()
                    if (regions is None or a.region in regions) and (domain is None or a.domain == domain)
                ),
                key=lambda a: (a.raised_at, a.element, a.alarm_id),
            )

    def subscribe(self, listener: Callable[[NetworkEvent], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    # ---- ManagedNetwork: diagnostics ------------------------------------------------------------
    def radio_diagnostics(self, site_id: str) -> RadioDiagnostics:
        with self._lock:
            site = self._site(site_id)
            misconfigured = {
                c: {"tilt_deg": round(self._cells[c].tilt - self._cells[c].base_tilt, 1)}
                for c in site.cell_ids
                if self._cells[c].coverage_loss > 0
            }
            if site.fault is not None:
                return RadioDiagnostics(site_id, False, SITE_FAULTS[site.fault], misconfigured)
            if not site.in_service:
                return RadioDiagnostics(site_id, False, "unreachable", misconfigured)
            return RadioDiagnostics(site_id, True, "misconfigured" if misconfigured else "healthy", misconfigured)

    # ---- ManagedNetwork: actions ------------------------------------------------------------------
    def set_cell_radio(self, cell_id: str, power_dbm: float, tilt_deg: float, by: str) -> None:
        with self._lock:
            cell = self._cell(cell_id)
            if power_dbm > cell.max_power + 1e-9:
                raise ValueError(f"{cell_id}: {power_dbm:g} dBm is above the cell's limit of {cell.max_power:g} dBm")
            if not cell.min_tilt - 1e-9 <= tilt_deg <= cell.max_tilt + 1e-9:
                raise ValueError(
                    f"{cell_id}: tilt {tilt_deg:g} deg is outside {cell.min_tilt:g}..{cell.max_tilt:g} deg"
                )
            if (cell.power, cell.tilt) == (power_dbm, tilt_deg):
                return
            text = f"power {cell.power:g} -> {power_dbm:g} dBm, tilt {cell.tilt:g} -> {tilt_deg:g} deg"
            cell.power, cell.tilt = power_dbm, tilt_deg
            self._log(by, cell_id, "radio", text)

    def set_energy_saving(self, cell_id: str, state: str, by: str, saving_percent: float | None = None) -> None:
        if state not in ("enabled", "suspended", "reduced"):
            raise ValueError(f"energy-saving state must be enabled, suspended or reduced, not {state!r}")
        with self._lock:
            cell = self._cell(cell_id)
            if not cell.es_configured:
                raise ValueError(f"{cell_id} has no energy-saving function")
            saving = cell.base_saving if state == "enabled" else (saving_percent if state == "reduced" else 0.0)
            assert saving is not None
            if (cell.es_state, cell.saving) == (state, saving):
                return
            text = f"energy saving {cell.es_state} -> {state}" + (f" ({saving:g} %)" if state == "reduced" else "")
            cell.es_state, cell.saving = state, saving
            self._log(by, cell_id, "energy_saving", text)

    def reset_site(self, site_id: str, by: str) -> bool:
        pending = _Pending()
        with self._lock:
            site = self._site(site_id)
            self._log(by, site_id, "reset", "remote restart of the base station")
            if site.fault != "site_software_fault":
                return False
            site.fault = None
            self._repaired(site_id, by, "remote")
            self._refresh(pending)
        self._emit(pending)
        return True

    def restore_cell_config(self, cell_id: str, by: str) -> bool:
        with self._lock:
            cell = self._cell(cell_id)
            self._log(
                by,
                cell_id,
                "reconfigure",
                f"planned configuration restored (tilt {cell.tilt:g} -> {cell.base_tilt:g} deg)",
            )
            if cell.coverage_loss <= 0:
                return False
            cell.tilt = cell.base_tilt
            cell.coverage_loss = 0.0
            self._repaired(cell_id, by, "remote")
            self._restore_check()
            return True

    def reset_port(self, link_id: str, by: str) -> bool:
        pending = _Pending()
        with self._lock:
            link = self._link(link_id)
            self._log(by, link_id, "port_reset", f"reset of the ports of {link.a} and {link.b}")
            if link.fault != "router_port_fault":
                return False
            link.fault = None
            self._repaired(link_id, by, "remote")
            self._refresh(pending)
        self._emit(pending)
        return True

    def dispatch_field_repair(self, element: str, ticket_id: str, by: str, note: str) -> float:
        with self._lock:
            record = self._open_fault(element)
            minutes = record.spec.repair_minutes if record is not None else 60.0
            occurrence = sum(1 for f in self._faults if f.spec.target == element)
            eta = self._now() + field_repair_seconds(self._seed, element, occurrence, minutes)
            self._tickets.append(
                {
                    "ticket_id": ticket_id,
                    "element": element,
                    "by": by,
                    "opened_at": self._now(),
                    "eta": eta,
                    "note": note,
                }
            )
            self._log(by, element, "trouble_ticket", f"trouble ticket {ticket_id} for field maintenance: {note}")
        self._call_at(eta, f"field repair {element}", functools.partial(self._field_visit, element, ticket_id))
        return eta

    def _field_visit(self, element: str, ticket_id: str) -> None:
        self.repair_now(element, "field-maintenance", "field", f"ticket {ticket_id}")

    def repair_now(self, element: str, by: str, kind: str, note: str = "") -> bool:
        """Clear the open fault on ``element`` as field maintenance does; False when there was none."""
        pending = _Pending()
        prefix = f"{note}: " if note else ""
        with self._lock:
            record = self._open_fault(element)
            if record is None:
                self._log(by, element, "field_visit", f"{prefix}no fault found on site")
                return False
            if element in self._links:
                self._links[element].fault = None
            elif element in self._sites:
                self._sites[element].fault = None
            elif element in self._cells:
                cell = self._cells[element]
                cell.tilt, cell.coverage_loss = cell.base_tilt, 0.0
            self._log(
                by, element, "field_repair" if kind == "field" else "repair", f"{prefix}{record.spec.type} repaired"
            )
            self._repaired(element, by, kind)
            self._refresh(pending)
        self._emit(pending)
        return True

    # ---- the lab's side ---------------------------------------------------------------------------
    def inject(self, fault: FaultSpec) -> FaultRecord:
        """Make ``fault`` happen now; alarms follow from the new state."""
        pending = _Pending()
        with self._lock:
            record = FaultRecord(fault, self._now())
            if fault.type in LINK_FAULTS:
                self._link(fault.target).fault = fault.type
            elif fault.type in SITE_FAULTS:
                self._site(fault.target).fault = fault.type
            elif fault.type == "cell_misconfiguration":
                cell = self._cell(fault.target)
                cell.tilt = fault.tilt_deg if fault.tilt_deg is not None else cell.base_tilt + 8
                cell.coverage_loss = fault.coverage_loss
                record.affected_cells = (cell.cell_id,)
            self._faults.append(record)
            self._log("scenario", fault.target, "fault", f"{fault.type} injected")
            before = {s for s, site in self._sites.items() if not site.in_service}
            self._refresh(pending)
            after = {s for s, site in self._sites.items() if not site.in_service}
            if fault.type != "cell_misconfiguration":
                record.affected_sites = tuple(sorted(after - before))
                record.affected_cells = tuple(c for s in record.affected_sites for c in self._sites[s].cell_ids)
        self._emit(pending)
        return record

    def kpis(self) -> Kpis:
        with self._lock:
            cells_total = len(self._cells)
            cells_up = 0
            users_total = 0
            without = 0.0
            energy = 0.0
            compensating = 0
            suspended = 0
            for cell in self._cells.values():
                site = self._sites[cell.site_id]
                users_total += cell.users
                if cell.es_state != "enabled" and cell.es_configured:
                    suspended += 1
                if (cell.power, cell.tilt) != (cell.base_power, cell.base_tilt) and cell.coverage_loss == 0:
                    compensating += 1
                if not site.in_service:
                    # Out of service but powered (no backhaul, hung software): the radio idles.
                    energy += 0.0 if site.fault == "site_power_failure" else BASE_CELL_KW
                    continue
                cells_up += 1
                without += cell.users * cell.coverage_loss
                factor = 1.0 - cell.saving / 100.0 if cell.es_state in ("enabled", "reduced") else 1.0
                energy += (BASE_CELL_KW + KW_PER_TX_WATT * 10 ** ((cell.power - 30.0) / 10.0)) * factor
            down_sites = [s for s in self._sites.values() if not s.in_service]
            for site in down_sites:
                users = sum(self._cells[c].users for c in site.cell_ids)
                without += users * (1.0 - self._recovery(site))
            return Kpis(cells_up, cells_total, len(down_sites), users_total, without, energy, compensating, suspended)

    def _recovery(self, site: _Site) -> float:
        gains: list[float] = []
        for neighbour in site.neighbours:
            other = self._sites[neighbour]
            if not other.in_service:
                continue
            for cell_id in other.cell_ids:
                cell = self._cells[cell_id]
                penalty = ES_POWER_PENALTY_DB if cell.es_state == "enabled" else 0.0
                extra_db = max(0.0, cell.power - cell.base_power - penalty)
                uptilt = max(0.0, cell.base_tilt - cell.tilt) if cell.coverage_loss == 0 else 0.0
                gains.append(POWER_GAIN_PER_DB * extra_db + TILT_GAIN_PER_DEG * uptilt)
        if not gains:
            return 0.0
        scale = min(1.0, len(gains) / FULL_NEIGHBOURHOOD)
        return min(RECOVERY_CAP, sum(gains) / len(gains) * scale)

    def sample(self, now: float) -> None:
        """Record the KPIs as they are at ``now`` (one sample per instant: a later call replaces it)."""
        kpis = self.kpis()
        with self._lock:
            if self._samples and self._samples[-1][0] == now:
                self._samples[-1] = (now, kpis)
            elif not self._samples or self._samples[-1][1] != kpis:
                self._samples.append((now, kpis))

    def samples(self) -> list[tuple[float, Kpis]]:
        with self._lock:
            return list(self._samples)

    def faults(self) -> list[FaultRecord]:
        with self._lock:
            return list(self._faults)

    def changes(self) -> list[Change]:
        with self._lock:
            return sorted(self._changes, key=lambda c: (c.time, c.by, c.element, c.action, c.text))

    def tickets(self) -> list[dict[str, Any]]:
        with self._lock:
            return sorted(self._tickets, key=lambda t: (t["opened_at"], t["ticket_id"]))

    def alarm_log(self) -> list[Alarm]:
        with self._lock:
            return sorted(self._alarm_log, key=lambda a: (a.raised_at, a.alarm_id))

    def residual_changes(self) -> list[str]:
        """What is not back to its planned state: compensations, energy-saving adjustments, open faults."""
        out: list[str] = []
        with self._lock:
            for cell in sorted(self._cells.values(), key=lambda c: c.cell_id):
                if cell.power != cell.base_power or cell.tilt != cell.base_tilt:
                    out.append(
                        f"{cell.cell_id}: power {cell.power:g} dBm (planned {cell.base_power:g}), "
                        f"tilt {cell.tilt:g} deg (planned {cell.base_tilt:g})"
                    )
                expected = "enabled" if cell.es_configured else "disabled"
                if cell.es_state != expected or cell.saving != cell.base_saving:
                    out.append(f"{cell.cell_id}: energy saving {cell.es_state} (planned {expected})")
            for site in sorted(self._sites.values(), key=lambda s: s.site_id):
                if not site.in_service:
                    out.append(f"{site.site_id}: out of service")
            for record in self._faults:
                if record.repaired_at is None:
                    out.append(f"{record.spec.target}: {record.spec.type} not repaired")
        return out

    # ---- internals (callers hold the lock) -----------------------------------------------------------
    def _site(self, site_id: str) -> _Site:
        try:
            return self._sites[site_id]
        except KeyError:
            raise ValueError(f"there is no site {site_id!r}") from None

    def _cell(self, cell_id: str) -> _Cell:
        try:
            return self._cells[cell_id]
        except KeyError:
            raise ValueError(f"there is no cell {cell_id!r}") from None

    def _link(self, link_id: str) -> _Link:
        try:
            return self._links[link_id]
        except KeyError:
            raise ValueError(f"there is no link {link_id!r}") from None

    def _log(self, by: str, element: str, action: str, text: str) -> None:
        self._changes.append(Change(self._now(), by, element, action, text))

    def _open_fault(self, element: str) -> FaultRecord | None:
        return next((f for f in self._faults if f.spec.target == element and f.repaired_at is None), None)

    def _repaired(self, element: str, by: str, kind: str) -> None:
        record = self._open_fault(element)
        if record is not None:
            record.repaired_at = self._now()
            record.repaired_by = by
            record.repair_kind = kind

    def _refresh(self, pending: _Pending) -> None:
        """Recompute which sites are in service; raise and clear alarms accordingly."""
        now = self._now()
        for link in sorted(self._links.values(), key=lambda item: item.link_id):
            key = (link.link_id, "link_down")
            if link.fault is not None and key not in self._alarms:
                evidence = LINK_FAULTS[link.fault].replace("_", " ")
                self._raise(
                    pending,
                    "ip_transport",
                    link.link_id,
                    "link_down",
                    "critical",
                    link.region,
                    f"{link.link_id} ({link.a} - {link.b}) down: {evidence}",
                )
            elif link.fault is None and key in self._alarms:
                self._clear(pending, key, now)
        for site in sorted(self._sites.values(), key=lambda item: item.site_id):
            up = site.fault is None and all(self._links[k].fault is None for k in site.backhaul if k in self._links)
            key = (site.site_id, "site_out_of_service")
            if not up and key not in self._alarms:
                self._raise(
                    pending,
                    "wireless",
                    site.site_id,
                    "site_out_of_service",
                    "critical",
                    site.region,
                    f"{site.site_id} out of service: base station disconnected, {len(site.cell_ids)} cells down",
                )
            elif up and key in self._alarms:
                self._clear(pending, key, now)
            site.in_service = up
        self._restore_check()

    def _restore_check(self) -> None:
        now = self._now()
        for record in self._faults:
            if record.restored_at is not None or record.repaired_at is None:
                continue
            sites_up = all(self._sites[s].in_service for s in record.affected_sites)
            cells_ok = all(self._cells[c].coverage_loss == 0 for c in record.affected_cells)
            if sites_up and cells_ok:
                record.restored_at = now

    def _raise(
        self, pending: _Pending, domain: str, element: str, kind: str, severity: str, region: str, text: str
    ) -> None:
        count = self._alarm_count.get(element, 0) + 1
        self._alarm_count[element] = count
        alarm = Alarm(f"ALM-{element}-{count}", domain, element, kind, severity, region, self._now(), text)
        self._alarms[(element, kind)] = alarm
        self._alarm_log.append(alarm)
        pending.events.append(NetworkEvent("alarm_raised", alarm, self._now()))

    def _clear(self, pending: _Pending, key: tuple[str, str], now: float) -> None:
        alarm = self._alarms.pop(key)
        cleared = Alarm(**{**alarm.__dict__, "cleared_at": now})
        self._alarm_log[self._alarm_log.index(alarm)] = cleared
        pending.events.append(NetworkEvent("alarm_cleared", cleared, now))

    def _emit(self, pending: _Pending) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for event in pending.events:
            for listener in listeners:
                listener(event)
