"""What the parts of the simulated network share: elements, fault records, change log, alarms, events.

`NetState` holds every element of one network behind one re-entrant lock; the parts (`radio`,
`transport`, `energy`) and the facade (`an_agent.lab.network`) change it while holding that lock and
collect the events they cause in a `Pending`, emitted to listeners after the lock is released.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from an_agent import tracing
from an_agent.agents.environment import Alarm, NetworkEvent
from an_agent.lab.spec import FaultSpec


@dataclass
class Cell:
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
    locked: bool = False
    """Administratively locked (an element manager's ``admin-state``): it serves nobody."""


@dataclass
class Site:
    site_id: str
    region: str
    pos: tuple[float, float]
    backhaul: tuple[str, ...]
    cell_ids: tuple[str, ...]
    neighbours: tuple[str, ...] = ()
    fault: str | None = None
    in_service: bool = True


@dataclass
class Link:
    link_id: str
    a: str
    b: str
    region: str
    """The region of its ``a`` router: the region whose IP agent owns the link."""
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
class Pending:
    """Events caused while the lock is held, emitted after it is released."""

    events: list[NetworkEvent] = field(default_factory=list)


class NetState:
    """Every element of one network, its faults, changes and alarms; one lock for all (module docstring)."""

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self.lock = threading.RLock()
        self.cells: dict[str, Cell] = {}
        self.sites: dict[str, Site] = {}
        self.links: dict[str, Link] = {}
        self.faults: list[FaultRecord] = []
        self.changes: list[Change] = []
        self.limit_refusals: list[str] = []
        """Radio settings refused at a cell's limits (an agent asked for more than the cell can do)."""
        self.alarms: dict[tuple[str, str], Alarm] = {}
        self.alarm_log: list[Alarm] = []
        self._alarm_count: dict[str, int] = {}
        self._listeners: list[Callable[[NetworkEvent], None]] = []

    # ---- lookups (ValueError names what is missing) ---------------------------------------------------
    def site(self, site_id: str) -> Site:
        try:
            return self.sites[site_id]
        except KeyError:
            raise ValueError(f"there is no site {site_id!r}") from None

    def cell(self, cell_id: str) -> Cell:
        try:
            return self.cells[cell_id]
        except KeyError:
            raise ValueError(f"there is no cell {cell_id!r}") from None

    def link(self, link_id: str) -> Link:
        try:
            return self.links[link_id]
        except KeyError:
            raise ValueError(f"there is no link {link_id!r}") from None

    # ---- change log and fault records (callers hold the lock) --------------------------------------------
    def log(self, by: str, element: str, action: str, text: str) -> None:
        self.changes.append(Change(self.now(), by, element, action, text))

    def open_fault(self, element: str) -> FaultRecord | None:
        return next((f for f in self.faults if f.spec.target == element and f.repaired_at is None), None)

    def last_fault(self, element: str) -> FaultRecord | None:
        """The latest fault of ``element`` (open or repaired), or None when it never had one."""
        return next((f for f in reversed(self.faults) if f.spec.target == element), None)

    def repaired(self, element: str, by: str, kind: str) -> None:
        """``element`` is healthy again: every fault open on it is repaired now.

        An element holds one fault at a time: a second fault on it (a port error-disabled on a cut fibre)
        takes the place of the first, and the repair that clears it clears both. Marking only the oldest
        left the newer record open for ever, the element healthy, and every later repair of that element
        marked the record of the fault before it (found by lab soak: a port fault's loop never closed)."""
        for record in self.faults:
            if record.spec.target == element and record.repaired_at is None:
                record.repaired_at = self.now()
                record.repaired_by = by
                record.repair_kind = kind

    def restore_check(self) -> None:
        """Mark the repaired faults whose sites and cells are all back as restored (now)."""
        now = self.now()
        for record in self.faults:
            if record.restored_at is not None or record.repaired_at is None:
                continue
            sites_up = all(self.sites[s].in_service for s in record.affected_sites)
            cells_ok = all(self.cells[c].coverage_loss == 0 for c in record.affected_cells)
            if sites_up and cells_ok:
                record.restored_at = now

    # ---- alarms and listeners ---------------------------------------------------------------------------
    def raise_alarm(
        self, pending: Pending, domain: str, element: str, kind: str, severity: str, region: str, text: str
    ) -> None:
        count = self._alarm_count.get(element, 0) + 1
        self._alarm_count[element] = count
        alarm = Alarm(
            f"ALM-{element}-{count}", domain, element, kind, severity, region, self.now(), text,
            traceparent=tracing.outgoing(),  # the fault being injected, or the traced work that caused it
        )  # fmt: skip
        self.alarms[(element, kind)] = alarm
        self.alarm_log.append(alarm)
        pending.events.append(NetworkEvent("alarm_raised", alarm, self.now()))

    def clear_alarm(self, pending: Pending, key: tuple[str, str]) -> None:
        now = self.now()
        alarm = self.alarms.pop(key)
        cleared = Alarm(**{**alarm.__dict__, "cleared_at": now})
        self.alarm_log[self.alarm_log.index(alarm)] = cleared
        pending.events.append(NetworkEvent("alarm_cleared", cleared, now))

    def subscribe(self, listener: Callable[[NetworkEvent], None]) -> None:
        with self.lock:
            self._listeners.append(listener)

    def emit(self, pending: Pending) -> None:
        """Call the listeners with ``pending``'s events; the caller must not hold the lock."""
        with self.lock:
            listeners = list(self._listeners)
        for event in pending.events:
            for listener in listeners:
                listener(event)
