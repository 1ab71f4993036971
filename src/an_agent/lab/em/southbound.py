"""`NetconfNetwork`: what an agent on ``southbound: netconf`` sees of the network — the transport element
manager over NETCONF, in place of the simulator's Python interface.

It implements `ManagedNetwork` for the IP/transport fault role: alarms (`active_alarms`) come from
``/al:alarms`` (RFC 8632), links and their state (`links`, `link`) from the ``transport`` network and the
sites behind a link and a site's backhaul (`sites_behind`, `site`) from the ``backhaul`` network of
``ietf-network-topology`` (RFC 8345), and a port reset (`reset_port`) is the ``restart-element`` RPC —
the contract of ``docs/element-managers.md``, nothing else. The rest of the interface (radio, field work,
inventory the transport domain does not have) is the lab's, as for every agent.

Notifications: the lab still rings the agent's bell (`subscribe`: the lab's event push) so that simulated
time holds while an alarm is on its way (lock-step stays exact); what the agent then reads about it, it
reads over NETCONF. A `<get>` is made per question, on one session the adapter keeps (reopened when lost).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lxml import etree

from an_agent.agents.environment import (
    Alarm,
    AreaKpis,
    CellView,
    FaultLocation,
    LinkView,
    ManagedNetwork,
    NetworkEvent,
    Place,
    RadioDiagnostics,
    SiteView,
)
from an_agent.clock import from_rfc3339
from an_agent.errors import AnAgentError
from an_agent.lab.em.render import AL_NS, ANNET_NS, BACKHAUL_NETWORK, NT_NS, NW_NS, TRANSPORT_NETWORK, nsmap
from an_agent.nc.client import NetconfClient

_NS = {"al": AL_NS, "an": ANNET_NS, "nw": NW_NS, "nt": NT_NS}
_EVIDENCE = {"loss-of-light": "loss_of_light", "port-error-disabled": "port_error_disabled"}
_FILTER = f'<alarms xmlns="{AL_NS}"><alarm-list/></alarms><networks xmlns="{NW_NS}"/>'

Where = Callable[[], tuple[str, int] | None]


@dataclass(frozen=True)
class _Snapshot:
    """One ``<get>`` of the element manager, parsed."""

    alarms: list[Alarm]
    links: dict[str, LinkView]
    backhaul: dict[str, tuple[str, bool, tuple[str, ...]]]
    """site -> (region, in service, the transport links it rides on, nearest first)."""


class NetconfNetwork:
    """`ManagedNetwork` over a transport element manager (module docstring); thread-safe."""

    def __init__(self, lab: ManagedNetwork, where: Where, credentials: tuple[str, str], device: str) -> None:
        """``lab``: the lab's interface (events and what the transport domain does not serve); ``where``: the
        element manager's address (None until it serves); ``credentials``: the agent's own login."""
        self._lab = lab
        self._where = where
        self._credentials = credentials
        self.device = device
        self._lock = threading.Lock()
        self._client: NetconfClient | None = None

    # ---- the session ---------------------------------------------------------------------------------
    def _session(self) -> NetconfClient:
        if self._client is not None and self._client.connected:
            return self._client
        where = self._where()
        if where is None:
            raise AnAgentError(f"element manager {self.device} does not serve (yet)")
        user, password = self._credentials
        self._client = NetconfClient.connect(where[0], where[1], username=user, password=password)
        return self._client

    def _snapshot(self) -> _Snapshot:
        with self._lock:
            data = self._session().get()  # all of it: alarms and networks are most of what it serves
        return _parse(data)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    # ---- read over NETCONF -----------------------------------------------------------------------------
    def active_alarms(self, regions: Sequence[str] | None = None, domain: str | None = None) -> list[Alarm]:
        if domain not in (None, "ip_transport"):
            return []  # a transport element manager has transport alarms only
        alarms = [a for a in self._snapshot().alarms if a.cleared_at is None]
        return sorted(
            (a for a in alarms if regions is None or a.region in regions),
            key=lambda a: (a.raised_at, a.element, a.alarm_id),
        )

    def links(self, regions: Sequence[str] | None = None) -> list[LinkView]:
        links = self._snapshot().links
        return [links[k] for k in sorted(links) if regions is None or links[k].region in regions]

    def link(self, link_id: str) -> LinkView:
        found = self._snapshot().links.get(link_id)
        if found is None:
            raise ValueError(f"there is no link {link_id!r} in {self.device}")
        return found

    def sites_behind(self, link_id: str) -> list[str]:
        snapshot = self._snapshot()
        if link_id not in snapshot.links:
            raise ValueError(f"there is no link {link_id!r} in {self.device}")
        return sorted(site for site, (_, _, path) in snapshot.backhaul.items() if link_id in path)

    def site(self, site_id: str) -> SiteView:
        """What the transport domain knows of a site: its region, service and backhaul (no cells, no users)."""
        found = self._snapshot().backhaul.get(site_id)
        if found is None:
            raise ValueError(f"there is no site {site_id!r} behind the links of {self.device}")
        region, in_service, path = found
        return SiteView(site_id, region, in_service, (), path, 0)

    # ---- act over NETCONF -------------------------------------------------------------------------------
    def reset_port(self, link_id: str, by: str) -> bool:
        """``restart-element`` of the link (``by`` is who logs in: the agent's own login)."""
        rpc = etree.Element(f"{{{ANNET_NS}}}restart-element", nsmap=nsmap(ANNET_NS))
        etree.SubElement(rpc, f"{{{ANNET_NS}}}element-id").text = link_id
        with self._lock:
            reply = self._session().call(rpc)
        return reply.findtext(".//an:fault-cleared", namespaces=_NS) == "true"

    # ---- the lab's, as for every agent ---------------------------------------------------------------
    def subscribe(
        self, listener: Callable[[NetworkEvent], None], domain: str | None = None, regions: Sequence[str] | None = None
    ) -> None:
        self._lab.subscribe(listener, domain, regions)

    def regions(self) -> list[str]:
        return self._lab.regions()

    def region_aliases(self) -> dict[str, tuple[str, ...]]:
        return self._lab.region_aliases()

    def sites(self, regions: Sequence[str] | None = None) -> list[SiteView]:
        return self._lab.sites(regions)

    def cell(self, cell_id: str) -> CellView:
        return self._lab.cell(cell_id)

    def neighbour_cells(self, cell_ids: Sequence[str]) -> list[str]:
        return self._lab.neighbour_cells(cell_ids)

    def places(self) -> list[Place]:
        return self._lab.places()

    def area_kpis(self, regions: Sequence[str]) -> AreaKpis:
        return self._lab.area_kpis(regions)

    def saving_cost_kw(self, cell_ids: Sequence[str]) -> float:
        return self._lab.saving_cost_kw(cell_ids)

    def radio_diagnostics(self, site_id: str) -> RadioDiagnostics:
        return self._lab.radio_diagnostics(site_id)

    def set_cell_radio(self, cell_id: str, power_dbm: float, tilt_deg: float, by: str) -> None:
        self._lab.set_cell_radio(cell_id, power_dbm, tilt_deg, by)

    def set_energy_saving(self, cell_id: str, state: str, by: str, saving_percent: float | None = None) -> None:
        self._lab.set_energy_saving(cell_id, state, by, saving_percent)

    def reset_site(self, site_id: str, by: str) -> bool:
        return self._lab.reset_site(site_id, by)

    def restore_cell_config(self, cell_id: str, by: str) -> bool:
        return self._lab.restore_cell_config(cell_id, by)

    def dispatch_field_repair(self, element: str, ticket_id: str, by: str, note: str) -> float:
        return self._lab.dispatch_field_repair(element, ticket_id, by, note)

    def open_trouble_ticket(self, element: str, ticket_id: str, by: str, note: str) -> float:
        return self._lab.open_trouble_ticket(element, ticket_id, by, note)

    def repair_on_site(self, element: str, by: str, note: str) -> bool:
        return self._lab.repair_on_site(element, by, note)

    def alarm_log(self) -> list[Alarm]:
        return self._lab.alarm_log()

    def fault_location(self, link_id: str) -> FaultLocation | None:
        return self._lab.fault_location(link_id)

    def fault_on_site(self, element: str) -> str | None:
        return self._lab.fault_on_site(element)


def _parse(data: etree._Element) -> _Snapshot:
    def text(node: etree._Element, path: str) -> str:
        return node.findtext(path, namespaces=_NS) or ""

    alarms = []
    for entry in data.iterfind("al:alarms/al:alarm-list/al:alarm", _NS):
        resource = text(entry, "al:resource")
        element = resource.rsplit("-id='", 1)[-1].rstrip("']")
        cleared = text(entry, "al:is-cleared") == "true"
        alarms.append(
            Alarm(
                alarm_id=text(entry, "an:alarm-id"),
                domain="ip_transport",
                element=element,
                kind="link_down",
                severity=text(entry, "al:perceived-severity"),
                region=text(entry, "an:region"),
                raised_at=from_rfc3339(text(entry, "al:last-raised")),
                text=text(entry, "al:alarm-text"),
                cleared_at=from_rfc3339(text(entry, "al:last-changed")) if cleared else None,
            )
        )
    links: dict[str, LinkView] = {}
    backhaul: dict[str, tuple[str, bool, tuple[str, ...]]] = {}
    for network in data.iterfind("nw:networks/nw:network", _NS):
        network_id = text(network, "nw:network-id")
        if network_id == TRANSPORT_NETWORK:
            for link in network.iterfind("nt:link", _NS):
                link_id = text(link, "nt:link-id")
                evidence = _EVIDENCE.get(text(link, "an:evidence"))
                up = text(link, "an:oper-status") == "up"
                a, b = text(link, "nt:source/nt:source-node"), text(link, "nt:destination/nt:dest-node")
                links[link_id] = LinkView(link_id, a, b, text(link, "an:region"), up, evidence)
        elif network_id == BACKHAUL_NETWORK:
            nodes = {text(n, "nw:node-id"): n for n in network.iterfind("nw:node", _NS)}
            for link in network.iterfind("nt:link", _NS):
                site = text(link, "nt:source/nt:source-node")
                node = nodes.get(site)
                path = tuple(text(s, "nt:link-ref") for s in link.iterfind("nt:supporting-link", _NS))
                region = text(node, "an:region") if node is not None else ""
                in_service = node is not None and text(node, "an:oper-status") == "up"
                backhaul[site] = (region, in_service, path)
    return _Snapshot(alarms, links, backhaul)
