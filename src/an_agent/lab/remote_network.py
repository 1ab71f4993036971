"""An agent process's network and journal: the lab's `ManagedNetwork` and journal, by request over its control
channel (`an_agent.lab.remote` joins the lab; `an_agent.lab.conductor` serves these requests)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
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
)
from an_agent.agents.exchange import Exchange
from an_agent.lab.control import ControlClient
from an_agent.lab.wire import NETWORK_METHODS, decode, decode_event, encode


class RemoteNetwork:
    """The lab's `ManagedNetwork`, by request over the control channel (same methods, same errors)."""

    def __init__(self, name: str, channel: ControlClient) -> None:
        self._name = name
        self._channel = channel
        self._listeners: list[Callable[[NetworkEvent], None]] = []
        self._interest: list[dict[str, Any]] | None = []
        """What the listeners need (`subscribe`); None: every event."""
        self._lock = threading.Lock()

    def _call(self, method: str, *args: Any) -> Any:
        reply = self._channel.call("network", agent=self._name, op=method, args=list(args))
        if "refused" in reply:
            if reply.get("key_error"):
                raise KeyError(reply["refused"])
            raise ValueError(reply["refused"])
        return decode(NETWORK_METHODS[method], reply["value"])

    def deliver(self, events: list[Any]) -> None:
        """Network events pushed by the lab: to every listener, in order."""
        with self._lock:
            listeners = list(self._listeners)
        for value in events:
            event = decode_event(value)
            for listener in listeners:
                listener(event)

    def subscribe(
        self, listener: Callable[[NetworkEvent], None], domain: str | None = None, regions: Sequence[str] | None = None
    ) -> None:
        """Also tells the lab which events this process needs: those of any listener's ``domain`` and
        ``regions`` (all events once one listener names neither), so that it sends no others."""
        with self._lock:
            self._listeners.append(listener)
            wanted = {"domain": domain, "regions": None if regions is None else sorted(regions)}
            if self._interest is not None and (domain is not None or regions is not None):
                self._interest.append(wanted)
            else:
                self._interest = None
            interest = None if self._interest is None else list(self._interest)
        self._channel.call("subscribe", agent=self._name, interest=interest)

    def regions(self) -> list[str]:
        result: list[str] = self._call("regions")
        return result

    def region_aliases(self) -> dict[str, tuple[str, ...]]:
        result: dict[str, tuple[str, ...]] = self._call("region_aliases")
        return result

    def site(self, site_id: str) -> SiteView:
        result: SiteView = self._call("site", site_id)
        return result

    def sites(self, regions: Sequence[str] | None = None) -> list[SiteView]:
        result: list[SiteView] = self._call("sites", None if regions is None else list(regions))
        return result

    def cell(self, cell_id: str) -> CellView:
        result: CellView = self._call("cell", cell_id)
        return result

    def link(self, link_id: str) -> LinkView:
        result: LinkView = self._call("link", link_id)
        return result

    def links(self, regions: Sequence[str] | None = None) -> list[LinkView]:
        result: list[LinkView] = self._call("links", None if regions is None else list(regions))
        return result

    def sites_behind(self, link_id: str) -> list[str]:
        result: list[str] = self._call("sites_behind", link_id)
        return result

    def neighbour_cells(self, cell_ids: Sequence[str]) -> list[str]:
        result: list[str] = self._call("neighbour_cells", list(cell_ids))
        return result

    def places(self) -> list[Place]:
        result: list[Place] = self._call("places")
        return result

    def active_alarms(self, regions: Sequence[str] | None = None, domain: str | None = None) -> list[Alarm]:
        result: list[Alarm] = self._call("active_alarms", None if regions is None else list(regions), domain)
        return result

    def area_kpis(self, regions: Sequence[str]) -> AreaKpis:
        result: AreaKpis = self._call("area_kpis", list(regions))
        return result

    def saving_cost_kw(self, cell_ids: Sequence[str]) -> float:
        return float(self._call("saving_cost_kw", list(cell_ids)))

    def radio_diagnostics(self, site_id: str) -> RadioDiagnostics:
        result: RadioDiagnostics = self._call("radio_diagnostics", site_id)
        return result

    def set_cell_radio(self, cell_id: str, power_dbm: float, tilt_deg: float, by: str) -> None:
        self._call("set_cell_radio", cell_id, power_dbm, tilt_deg, by)

    def set_energy_saving(self, cell_id: str, state: str, by: str, saving_percent: float | None = None) -> None:
        self._call("set_energy_saving", cell_id, state, by, saving_percent)

    def reset_site(self, site_id: str, by: str) -> bool:
        return bool(self._call("reset_site", site_id, by))

    def restore_cell_config(self, cell_id: str, by: str) -> bool:
        return bool(self._call("restore_cell_config", cell_id, by))

    def reset_port(self, link_id: str, by: str) -> bool:
        return bool(self._call("reset_port", link_id, by))

    def dispatch_field_repair(self, element: str, ticket_id: str, by: str, note: str) -> float:
        return float(self._call("dispatch_field_repair", element, ticket_id, by, note))

    def open_trouble_ticket(self, element: str, ticket_id: str, by: str, note: str) -> float:
        return float(self._call("open_trouble_ticket", element, ticket_id, by, note))

    def repair_on_site(self, element: str, by: str, note: str) -> bool:
        return bool(self._call("repair_on_site", element, by, note))

    def alarm_log(self) -> list[Alarm]:
        result: list[Alarm] = self._call("alarm_log")
        return result

    def fault_location(self, link_id: str) -> FaultLocation | None:
        result: FaultLocation | None = self._call("fault_location", link_id)
        return result

    def fault_on_site(self, element: str) -> str | None:
        result: str | None = self._call("fault_on_site", element)
        return result


class RemoteJournal:
    """The lab's journal: notes and exchanges sent to it as they happen."""

    def __init__(self, name: str, channel: ControlClient) -> None:
        self._name = name
        self._channel = channel

    def note(self, agent: str, kind: str, text: str, **details: Any) -> None:
        self._channel.call("note", agent=self._name, who=agent, kind=kind, text=text, details=encode(details))

    def record(self, exchange: Exchange) -> None:
        self._channel.call("exchange", agent=self._name, exchange=encode(exchange))
