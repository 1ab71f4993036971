"""`SimNetwork`: the deterministic mobile + transport network behind a lab's agents (a facade).

Sites with cells (users, transmit power, antenna tilt, energy-saving state), transport routers and
links, the backhaul path of every site, alarms, and the KPIs the agents are judged by. It implements
`an_agent.agents.environment.ManagedNetwork` (what the agents' element managers offer) and adds what
the lab itself needs: fault injection, field repairs, the change log, KPI samples, the end-of-run
checks. The model lives in `an_agent.lab.simnet`: `radio` (sites, cells, coverage), `transport`
(links, backhaul), `energy` (energy saving, power draw), `state` (what they share).

Randomness (users per cell when not given, field repair durations) comes from ``random.Random`` seeded
with the topology seed and the element, never from a shared stream, so thread order cannot change it.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from an_agent.agents.environment import (
    Alarm,
    AreaKpis,
    CellView,
    FaultLocation,
    LinkView,
    NetworkEvent,
    Place,
    RadioDiagnostics,
    SiteView,
    Timer,
)
from an_agent.lab.simnet.energy import Energy
from an_agent.lab.simnet.radio import SITE_FAULTS, Radio
from an_agent.lab.simnet.state import Cell, Change, FaultRecord, Link, NetState, Pending, Site
from an_agent.lab.simnet.transport import LINK_FAULTS, Transport, otdr_location
from an_agent.lab.spec import FaultSpec, FaultType, NetworkSpec

__all__ = ["LINK_FAULTS", "SITE_FAULTS", "Change", "FaultRecord", "Kpis", "SimNetwork", "field_repair_seconds"]

CallAt = Callable[[float, str, Callable[[], None]], Timer]
DEFAULT_FIELD_REPAIR_MINUTES = 60.0
"""Field work on an element without an open fault (the technician finds nothing)."""


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


def _record(samples: list[tuple[float, Any]], now: float, value: Any) -> None:
    """Append ``value`` at ``now`` to a step series (replace a sample of the same instant; skip no change)."""
    if samples and samples[-1][0] == now:
        samples[-1] = (now, value)
    elif not samples or samples[-1][1] != value:
        samples.append((now, value))


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
        self._s = NetState(now)
        self.radio = Radio(self._s)
        self.transport = Transport(self._s)
        self.energy = Energy(self._s)
        router_region = {r.id: r.region for r in spec.routers}
        for link in spec.links:
            self._s.links[link.id] = Link(link.id, link.a, link.b, router_region.get(link.a, ""))
        for site in spec.sites:
            for cell in site.cells:
                users = cell.users
                if users is None:  # not given: the default, varied per cell by the seed
                    rng = random.Random(f"{seed}:users:{cell.id}")
                    users = round(spec.cell_defaults.users * rng.uniform(0.7, 1.3))
                self._s.cells[cell.id] = Cell(
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
            self._s.sites[site.id] = Site(
                site.id, site.region, site.pos, site.backhaul, tuple(c.id for c in site.cells)
            )
        for site in spec.sites:
            self._s.sites[site.id].neighbours = site.neighbors if site.neighbors is not None else self._near(site.id)
        self._places = [Place(p.name, self._s.sites[p.sites[0]].region, p.aliases, p.sites) for p in spec.places]
        self._samples: list[tuple[float, Kpis]] = []
        self._area_samples: dict[str, list[tuple[float, AreaKpis]]] = {}
        self._tickets: list[dict[str, Any]] = []

    def _near(self, site_id: str) -> tuple[str, ...]:
        me = self._s.sites[site_id]
        radius = self._spec.neighbor_radius_km
        return tuple(
            s.site_id for s in self._s.sites.values() if s.site_id != site_id and math.dist(me.pos, s.pos) <= radius
        )

    # ---- ManagedNetwork: inventory, state, diagnostics -------------------------------------------------
    def regions(self) -> list[str]:
        return [r.name for r in self._spec.regions]

    def region_aliases(self) -> dict[str, tuple[str, ...]]:
        return {r.name: r.aliases for r in self._spec.regions}

    def site(self, site_id: str) -> SiteView:
        return self.radio.site(site_id)

    def sites(self, regions: Sequence[str] | None = None) -> list[SiteView]:
        return self.radio.sites(regions)

    def cell(self, cell_id: str) -> CellView:
        return self.radio.cell(cell_id)

    def link(self, link_id: str) -> LinkView:
        return self.transport.link(link_id)

    def links(self, regions: Sequence[str] | None = None) -> list[LinkView]:
        return self.transport.links(regions)

    def sites_behind(self, link_id: str) -> list[str]:
        return self.transport.sites_behind(link_id)

    def neighbour_cells(self, cell_ids: Sequence[str]) -> list[str]:
        return self.radio.neighbour_cells(cell_ids)

    def places(self) -> list[Place]:
        return list(self._places)

    def active_alarms(self, regions: Sequence[str] | None = None, domain: str | None = None) -> list[Alarm]:
        with self._s.lock:
            return sorted(
                (
                    a
                    for a in self._s.alarms.values()
                    if (regions is None or a.region in regions) and (domain is None or a.domain == domain)
                ),
                key=lambda a: (a.raised_at, a.element, a.alarm_id),
            )

    def subscribe(
        self, listener: Callable[[NetworkEvent], None], domain: str | None = None, regions: Sequence[str] | None = None
    ) -> None:
        self._s.subscribe(listener)  # every event: in one process a call the listener ignores costs nothing

    def area_kpis(self, regions: Sequence[str]) -> AreaKpis:
        with self._s.lock:
            sites = self._s.sites
            cells = [c for c in self._s.cells.values() if sites[c.site_id].region in regions]
            return AreaKpis(
                users_total=sum(c.users for c in cells),
                users_without_service=self.radio.users_without_coverage(regions),
                energy_kw=sum(self.energy.cell_kw(c, sites[c.site_id]) for c in cells),
            )

    def saving_cost_kw(self, cell_ids: Sequence[str]) -> float:
        with self._s.lock:
            return sum(
                self.energy.saving_cost_kw(self._s.cell(c), self._s.sites[self._s.cell(c).site_id]) for c in cell_ids
            )

    def radio_diagnostics(self, site_id: str) -> RadioDiagnostics:
        return self.radio.diagnostics(site_id)

    # ---- ManagedNetwork: actions ----------------------------------------------------------------------
    def set_cell_radio(self, cell_id: str, power_dbm: float, tilt_deg: float, by: str) -> None:
        self.radio.set_cell_radio(cell_id, power_dbm, tilt_deg, by)

    def set_energy_saving(self, cell_id: str, state: str, by: str, saving_percent: float | None = None) -> None:
        self.energy.set_energy_saving(cell_id, state, by, saving_percent)

    def check_cell_radio(self, cell_id: str, power_dbm: float, tilt_deg: float, by: str) -> None:
        """What `set_cell_radio` refuses, without changing anything (ValueError naming the limit)."""
        self.radio.check_cell_radio(cell_id, power_dbm, tilt_deg, by)

    def set_cell_locked(self, cell_id: str, locked: bool, by: str) -> None:
        """Lock or unlock a cell (an element manager's ``admin-state``; not an agent action)."""
        self.radio.set_cell_locked(cell_id, locked, by)

    def cell_kw(self, cell_id: str) -> float:
        """What the cell draws now."""
        with self._s.lock:
            cell = self._s.cell(cell_id)
            return self.energy.cell_kw(cell, self._s.sites[cell.site_id])

    @property
    def spec(self) -> NetworkSpec:
        """The network as the topology describes it (routers, links, sites, regions)."""
        return self._spec

    def reset_site(self, site_id: str, by: str) -> bool:
        return self._change(lambda pending: self.radio.reset_site(site_id, by))

    def restore_cell_config(self, cell_id: str, by: str) -> bool:
        return self._change(lambda pending: self.radio.restore_cell_config(cell_id, by))

    def reset_port(self, link_id: str, by: str) -> bool:
        return self._change(lambda pending: self.transport.reset_port(link_id, by, pending))

    def dispatch_field_repair(self, element: str, ticket_id: str, by: str, note: str) -> float:
        eta = self.open_trouble_ticket(element, ticket_id, by, note)
        self._call_at(eta, f"field repair {element}", functools.partial(self._field_visit, element, ticket_id))
        return eta

    def open_trouble_ticket(self, element: str, ticket_id: str, by: str, note: str) -> float:
        with self._s.lock:
            record = self._s.open_fault(element)
            # One field job per ticket and per fault: a ticket opened again (a copilot resuming it after a
            # restart), or another for a fault that already has one (a restarted copilot's tickets joined under
            # the other number), is the job already under way, its engineer on the way (lab soak counted two);
            # with no fault open, the job of the element's last fault (done: a ticket resumed after its
            # repair; lab soak counted a ticket for a repaired site).
            last = record if record is not None else self._s.last_fault(element)
            since = last.injected_at if last is not None else None
            for ticket in self._tickets:
                if ticket["element"] == element and (
                    ticket["ticket_id"] == ticket_id or (since is not None and ticket["opened_at"] >= since)
                ):
                    return float(ticket["eta"])
            minutes = record.spec.repair_minutes if record is not None else DEFAULT_FIELD_REPAIR_MINUTES
            occurrence = sum(1 for f in self._s.faults if f.spec.target == element)
            eta = self._now() + field_repair_seconds(self._seed, element, occurrence, minutes)
            opened = {"ticket_id": ticket_id, "element": element, "by": by, "opened_at": self._now()}
            self._tickets.append({**opened, "eta": eta, "note": note})
            self._s.log(by, element, "trouble_ticket", f"trouble ticket {ticket_id} for field maintenance: {note}")
        return eta

    def repair_on_site(self, element: str, by: str, note: str) -> bool:
        return self.repair_now(element, by, "field", note)

    def fault_location(self, link_id: str) -> FaultLocation | None:
        with self._s.lock:
            link = self._s.link(link_id)
            if link.fault != "link_cut":
                return None
            occurrence = sum(1 for f in self._s.faults if f.spec.target == link_id)
        return otdr_location(self._seed, link.link_id, link.a, occurrence)

    def fault_on_site(self, element: str) -> str | None:
        with self._s.lock:
            record = self._s.open_fault(element)
            return None if record is None else record.spec.type

    def _field_visit(self, element: str, ticket_id: str) -> None:
        self.repair_now(element, "field-maintenance", "field", f"ticket {ticket_id}")

    def repair_now(self, element: str, by: str, kind: str, note: str = "") -> bool:
        """Clear the open fault on ``element`` as field maintenance does; False when there was none."""
        prefix = f"{note}: " if note else ""

        def repair(pending: Pending) -> bool:
            record = self._s.open_fault(element)
            if record is None:
                self._s.log(by, element, "field_visit", f"{prefix}no fault found on site")
                return False
            if element in self._s.links:
                self._s.links[element].fault = None
            elif element in self._s.sites:
                self._s.sites[element].fault = None
            elif element in self._s.cells:
                cell = self._s.cells[element]
                cell.tilt, cell.coverage_loss = cell.base_tilt, 0.0
            action = "field_repair" if kind == "field" else "repair"
            self._s.log(by, element, action, f"{prefix}{record.spec.type} repaired")
            self._s.repaired(element, by, kind)
            return True

        return self._change(repair)

    # ---- the lab's side ---------------------------------------------------------------------------
    def inject(self, fault: FaultSpec) -> FaultRecord:
        """Make ``fault`` happen now; alarms follow from the new state."""
        record = FaultRecord(fault, self._now())

        def inject(pending: Pending) -> bool:
            if fault.type in LINK_FAULTS:
                self._s.link(fault.target).fault = fault.type
            elif fault.type in SITE_FAULTS:
                self._s.site(fault.target).fault = fault.type
            elif fault.type == FaultType.CELL_MISCONFIGURATION:
                self.radio.misconfigure(fault.target, fault.tilt_deg, fault.coverage_loss)
                record.affected_cells = (fault.target,)
            self._s.faults.append(record)
            self._s.log("scenario", fault.target, "fault", f"{fault.type} injected")
            before = self._down_sites()
            self._refresh(pending)
            if fault.type != "cell_misconfiguration":
                record.affected_sites = tuple(sorted(self._down_sites() - before))
                record.affected_cells = tuple(c for s in record.affected_sites for c in self._s.sites[s].cell_ids)
            return False  # `_change` refreshes again: nothing changed since

        self._change(inject)
        return record

    def kpis(self) -> Kpis:
        with self._s.lock:
            cells = self._s.cells.values()
            sites = self._s.sites
            return Kpis(
                cells_in_service=sum(1 for c in cells if sites[c.site_id].in_service and not c.locked),
                cells_total=len(cells),
                sites_out_of_service=len(self._down_sites()),
                users_total=sum(c.users for c in cells),
                users_without_coverage=self.radio.users_without_coverage(),
                energy_kw=sum(self.energy.cell_kw(c, sites[c.site_id]) for c in cells),
                compensating_cells=sum(1 for c in cells if self.radio.compensating(c)),
                energy_saving_suspended=sum(1 for c in cells if self.energy.adjusted(c)),
            )

    def sample(self, now: float) -> None:
        """Record the KPIs as they are at ``now`` (one sample per instant: a later call replaces it).

        The service KPIs of each region are recorded beside them (`area_samples`).
        """
        kpis = self.kpis()
        areas = {r.name: self.area_kpis([r.name]) for r in self._spec.regions}
        with self._s.lock:
            _record(self._samples, now, kpis)
            for region, area in areas.items():
                _record(self._area_samples.setdefault(region, []), now, area)

    def samples(self) -> list[tuple[float, Kpis]]:
        with self._s.lock:
            return list(self._samples)

    def area_samples(self, region: str) -> list[tuple[float, AreaKpis]]:
        """The service KPIs of ``region`` as `sample` recorded them (time-ordered step samples)."""
        with self._s.lock:
            return list(self._area_samples.get(region, []))

    def faults(self) -> list[FaultRecord]:
        with self._s.lock:
            return list(self._s.faults)

    def changes(self) -> list[Change]:
        with self._s.lock:
            return sorted(self._s.changes, key=lambda c: (c.time, c.by, c.element, c.action, c.text))

    def tickets(self) -> list[dict[str, Any]]:
        with self._s.lock:
            return sorted(self._tickets, key=lambda t: (t["opened_at"], t["ticket_id"]))

    def alarm_log(self) -> list[Alarm]:
        with self._s.lock:
            return sorted(self._s.alarm_log, key=lambda a: (a.raised_at, a.alarm_id))

    def radio_limits(self) -> tuple[list[str], list[str]]:
        """The cells whose power or tilt an agent changed, and the settings refused at a cell's limits."""
        with self._s.lock:
            changed = sorted({c.element for c in self._s.changes if c.action == "radio"})
            return changed, list(self._s.limit_refusals)

    def residual_changes(self) -> list[str]:
        """What is not back to its planned state: compensations, energy-saving adjustments, open faults."""
        out: list[str] = []
        with self._s.lock:
            for cell in sorted(self._s.cells.values(), key=lambda c: c.cell_id):
                out += [r for r in (self.radio.residual(cell), self.energy.residual(cell)) if r is not None]
            out += [f"{s}: out of service" for s in sorted(self._down_sites())]
            out += [f"{f.spec.target}: {f.spec.type} not repaired" for f in self._s.faults if f.repaired_at is None]
        return out

    # ---- internals ------------------------------------------------------------------------------------
    def _down_sites(self) -> set[str]:
        return {s for s, site in self._s.sites.items() if not site.in_service}

    def _change(self, change: Callable[[Pending], bool]) -> bool:
        """Run ``change`` under the lock; when it returns True, recompute service and alarms; then emit."""
        pending = Pending()
        with self._s.lock:
            changed = change(pending)
            if changed:
                self._refresh(pending)
        self._s.emit(pending)
        return changed

    def _refresh(self, pending: Pending) -> None:
        """Recompute link alarms, which sites are in service, and which faults are restored."""
        self.transport.refresh(pending)
        self.radio.refresh(pending, self.transport.backhaul_up)
        self._s.restore_check()
