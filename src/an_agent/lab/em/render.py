"""The simulated network as an element manager's YANG data: `SimNetwork` -> XML of the served modules.

One `Renderer` per element manager (its `DeviceSpec`: domain and regions). What it renders is read from
the simulator at the moment of the request, never kept: the simulator is the one source of truth.

- ``transport``: ``/nw:networks`` with two networks (RFC 8345): ``transport`` (routers, their termination
  points, links with ``an-agent-network`` oper-status and evidence) and ``backhaul`` (a link per site from
  the site to the core end of its backhaul, whose ``supporting-link`` entries are the transport links it
  rides on, nearest the site first: the sites behind a link are the sources of the backhaul links it
  supports); ``/al:alarms`` with the ``link-down`` alarms.
- ``ran``: ``/annet:sites``, ``/annet:cells``, ``/annet:areas``, ``/annet:energy-saving-windows``;
  ``/al:alarms`` with the ``site-out-of-service`` alarms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lxml import etree

from an_agent.agents.environment import Alarm, LinkView
from an_agent.clock import to_rfc3339
from an_agent.lab.devices import DeviceDomain, DeviceSpec
from an_agent.lab.network import SimNetwork

NW_NS = "urn:ietf:params:xml:ns:yang:ietf-network"
NT_NS = "urn:ietf:params:xml:ns:yang:ietf-network-topology"
AL_NS = "urn:ietf:params:xml:ns:yang:ietf-alarms"
ANNET_NS = "urn:an-agent:params:xml:ns:yang:an-agent-network"
_NW, _NT, _AL, _AN = (f"{{{ns}}}" for ns in (NW_NS, NT_NS, AL_NS, ANNET_NS))
_NSMAP = {"nw": NW_NS, "nt": NT_NS, "al": AL_NS, "annet": ANNET_NS}

TRANSPORT_NETWORK = "transport"
BACKHAUL_NETWORK = "backhaul"
ALARM_TYPES = {
    "link_down": (
        "link-down",
        "ip_transport",
        "A transport link is down; the resource is the link in the transport network. Cleared when it is up.",
    ),
    "site_out_of_service": (
        "site-out-of-service",
        "wireless",
        "A base station is out of service (own fault or backhaul down); the resource is the site in /sites.",
    ),
}
"""Simulator alarm kind -> (an-agent-network identity, simulator domain, inventory description)."""
_DOMAIN_ALARMS = {DeviceDomain.TRANSPORT: "ip_transport", DeviceDomain.RAN: "wireless"}
_EVIDENCE = {"loss_of_light": "loss-of-light", "port_error_disabled": "port-error-disabled"}


def link_resource(link_id: str) -> str:
    """The ietf-alarms resource (an instance-identifier) of a transport link."""
    return f"/nw:networks/nw:network[nw:network-id='{TRANSPORT_NETWORK}']/nt:link[nt:link-id='{link_id}']"


def site_resource(site_id: str) -> str:
    """The ietf-alarms resource (an instance-identifier) of a site."""
    return f"/annet:sites/annet:site[annet:site-id='{site_id}']"


def nsmap(default: str, **prefixed: str) -> Any:
    """An lxml ``nsmap`` with ``default`` as the default namespace and ``prefixed`` declared."""
    return {None: default, **prefixed}


def _leaf(parent: etree._Element, tag: str, value: object) -> etree._Element:
    element = etree.SubElement(parent, tag)
    element.text = str(value).lower() if isinstance(value, bool) else str(value)
    return element


def _dec(value: float, digits: int = 2) -> str:
    return f"{value:.{digits}f}"


def _status(up: bool) -> str:
    return "up" if up else "down"


class Renderer:
    """What one element manager shows of the network (module docstring)."""

    def __init__(self, network: SimNetwork, device: DeviceSpec) -> None:
        self.network = network
        self.device = device
        self.alarm_domain = _DOMAIN_ALARMS[device.domain]

    @property
    def regions(self) -> list[str] | None:
        return list(self.device.regions) or None

    def top_level(self, config_only: bool) -> list[etree._Element]:
        """Every top-level node this element manager serves (config nodes only with ``config_only``)."""
        if self.device.domain == DeviceDomain.TRANSPORT:
            return [] if config_only else [self.alarms(), self.networks()]
        if config_only:
            return [self.cells(config_only=True)]
        return [self.alarms(), self.sites(), self.cells(), self.areas()]

    # ---- ietf-alarms ---------------------------------------------------------------------------------
    def my_alarm(self, alarm: Alarm) -> bool:
        return alarm.domain == self.alarm_domain and self.device.in_scope(alarm.region) and alarm.kind in ALARM_TYPES

    def resource(self, alarm: Alarm) -> str:
        return link_resource(alarm.element) if alarm.kind == "link_down" else site_resource(alarm.element)

    def alarms(self) -> etree._Element:
        """``/al:alarms``: the inventory of alarm types and the alarm list (cleared alarms stay, RFC 8632)."""
        root = etree.Element(_AL + "alarms", nsmap=nsmap(AL_NS, annet=ANNET_NS))
        inventory = etree.SubElement(root, _AL + "alarm-inventory")
        for identity, domain, text in ALARM_TYPES.values():
            if domain != self.alarm_domain:
                continue
            entry = etree.SubElement(inventory, _AL + "alarm-type")
            _leaf(entry, _AL + "alarm-type-id", f"annet:{identity}")
            _leaf(entry, _AL + "alarm-type-qualifier", "")
            _leaf(entry, _AL + "will-clear", True)
            _leaf(entry, _AL + "severity-level", "critical")
            _leaf(entry, _AL + "description", text)
        latest: dict[tuple[str, str], tuple[Alarm, float]] = {}
        for alarm in self.network.alarm_log():  # oldest first: the last of each resource and type wins
            if self.my_alarm(alarm):
                key = (alarm.element, alarm.kind)
                last_change = alarm.cleared_at if alarm.cleared_at is not None else alarm.raised_at
                latest[key] = (alarm, last_change)
        alarm_list = etree.SubElement(root, _AL + "alarm-list")
        _leaf(alarm_list, _AL + "number-of-alarms", len(latest))
        if latest:
            _leaf(alarm_list, _AL + "last-changed", to_rfc3339(max(t for _, t in latest.values())))
        for key in sorted(latest):
            alarm, last_change = latest[key]
            entry = etree.SubElement(alarm_list, _AL + "alarm")
            self._alarm_keys(entry, alarm)
            _leaf(entry, _AL + "is-cleared", alarm.cleared_at is not None)
            _leaf(entry, _AL + "last-raised", to_rfc3339(alarm.raised_at))
            _leaf(entry, _AL + "last-changed", to_rfc3339(last_change))
            _leaf(entry, _AL + "perceived-severity", alarm.severity)
            _leaf(entry, _AL + "alarm-text", alarm.text)
            _origin(entry, alarm)
        return root

    def _alarm_keys(self, entry: etree._Element, alarm: Alarm) -> None:
        resource = etree.SubElement(entry, _AL + "resource", nsmap=_NSMAP)
        resource.text = self.resource(alarm)
        _leaf(entry, _AL + "alarm-type-id", f"annet:{ALARM_TYPES[alarm.kind][0]}")
        _leaf(entry, _AL + "alarm-type-qualifier", "")

    def alarm_notification(self, alarm: Alarm) -> etree._Element:
        """RFC 8632 ``alarm-notification`` for a raised alarm, or its clear when ``alarm.cleared_at`` is set."""
        root = etree.Element(_AL + "alarm-notification", nsmap=nsmap(AL_NS, annet=ANNET_NS))
        self._alarm_keys(root, alarm)
        cleared = alarm.cleared_at is not None
        _leaf(root, _AL + "time", to_rfc3339(alarm.cleared_at if alarm.cleared_at is not None else alarm.raised_at))
        _leaf(root, _AL + "perceived-severity", "cleared" if cleared else alarm.severity)
        _leaf(root, _AL + "alarm-text", alarm.text + (" (cleared)" if cleared else ""))
        _origin(root, alarm)
        return root

    # ---- ietf-network / ietf-network-topology ------------------------------------------------------------
    def networks(self) -> etree._Element:
        root = etree.Element(_NW + "networks", nsmap=nsmap(NW_NS, nt=NT_NS, annet=ANNET_NS))
        links = self.network.links(self.regions)
        self._transport(root, links)
        self._backhaul(root, {link.link_id for link in links})
        return root

    def _transport(self, root: etree._Element, links: Sequence[LinkView]) -> None:
        network = etree.SubElement(root, _NW + "network")
        _leaf(network, _NW + "network-id", TRANSPORT_NETWORK)
        etree.SubElement(network, _NW + "network-types")
        ends: dict[str, list[str]] = {}
        for link in links:
            ends.setdefault(link.a, []).append(link.link_id)
            ends.setdefault(link.b, []).append(link.link_id)
        routers = {r.id: r for r in self.network.spec.routers}
        for router_id in sorted(ends):
            node = etree.SubElement(network, _NW + "node")
            _leaf(node, _NW + "node-id", router_id)
            router = routers.get(router_id)
            if router is not None:
                _leaf(node, _AN + "role", router.role if router.role in ("core", "aggregation") else "access")
                _leaf(node, _AN + "region", router.region)
            _leaf(node, _AN + "oper-status", "up")
            for link_id in sorted(ends[router_id]):
                tp = etree.SubElement(node, _NT + "termination-point")
                _leaf(tp, _NT + "tp-id", link_id)
        for link in links:
            entry = etree.SubElement(network, _NT + "link")
            _leaf(entry, _NT + "link-id", link.link_id)
            source = etree.SubElement(entry, _NT + "source")
            _leaf(source, _NT + "source-node", link.a)
            _leaf(source, _NT + "source-tp", link.link_id)
            destination = etree.SubElement(entry, _NT + "destination")
            _leaf(destination, _NT + "dest-node", link.b)
            _leaf(destination, _NT + "dest-tp", link.link_id)
            _leaf(entry, _AN + "oper-status", _status(link.up))
            if not link.up and link.evidence in _EVIDENCE:
                _leaf(entry, _AN + "evidence", _EVIDENCE[link.evidence])
            _leaf(entry, _AN + "region", link.region)

    def _backhaul(self, root: etree._Element, mine: set[str]) -> None:
        """The ``backhaul`` overlay: a link per site whose backhaul crosses a link of ours (module docstring)."""
        network = etree.SubElement(root, _NW + "network")
        _leaf(network, _NW + "network-id", BACKHAUL_NETWORK)
        etree.SubElement(network, _NW + "network-types")
        supporting = etree.SubElement(network, _NW + "supporting-network")
        _leaf(supporting, _NW + "network-ref", TRANSPORT_NETWORK)
        sites = [s for s in self.network.sites() if mine.intersection(s.backhaul)]
        links = {link.link_id: link for link in self.network.links()}
        cores: dict[str, None] = {}
        paths = []
        for site in sites:
            path = [links[k] for k in site.backhaul if k in links]
            core = _core_end(path)
            cores[core] = None
            paths.append((site, path, core))
        for site, _, _ in paths:
            node = etree.SubElement(network, _NW + "node")
            _leaf(node, _NW + "node-id", site.site_id)
            _leaf(node, _AN + "role", "site")
            _leaf(node, _AN + "region", site.region)
            _leaf(node, _AN + "oper-status", _status(site.in_service))
        for core in sorted(cores):
            node = etree.SubElement(network, _NW + "node")
            _leaf(node, _NW + "node-id", core)
            under = etree.SubElement(node, _NW + "supporting-node")
            _leaf(under, _NW + "network-ref", TRANSPORT_NETWORK)
            _leaf(under, _NW + "node-ref", core)
        for site, path, core in paths:
            entry = etree.SubElement(network, _NT + "link")
            _leaf(entry, _NT + "link-id", f"{site.site_id}-backhaul")
            _leaf(etree.SubElement(entry, _NT + "source"), _NT + "source-node", site.site_id)
            _leaf(etree.SubElement(entry, _NT + "destination"), _NT + "dest-node", core)
            for link in path:
                under = etree.SubElement(entry, _NT + "supporting-link")
                _leaf(under, _NT + "network-ref", TRANSPORT_NETWORK)
                _leaf(under, _NT + "link-ref", link.link_id)
            _leaf(entry, _AN + "oper-status", _status(all(link.up for link in path)))

    # ---- an-agent-network: radio ------------------------------------------------------------------------
    def sites(self) -> etree._Element:
        root = etree.Element(_AN + "sites", nsmap=nsmap(ANNET_NS))
        for site in self.network.sites(self.regions):
            entry = etree.SubElement(root, _AN + "site")
            _leaf(entry, _AN + "site-id", site.site_id)
            _leaf(entry, _AN + "region", site.region)
            _leaf(entry, _AN + "oper-status", _status(site.in_service))
            for cell_id in site.cell_ids:
                _leaf(entry, _AN + "cell-id", cell_id)
            for link_id in site.backhaul:
                _leaf(entry, _AN + "backhaul-link", link_id)
            _leaf(entry, _AN + "users", site.users)
        return root

    def cell_ids(self) -> list[str]:
        return [c for site in self.network.sites(self.regions) for c in site.cell_ids]

    def cells(self, config_only: bool = False) -> etree._Element:
        root = etree.Element(_AN + "cells", nsmap=nsmap(ANNET_NS))
        for cell_id in self.cell_ids():
            cell = self.network.cell(cell_id)
            entry = etree.SubElement(root, _AN + "cell")
            _leaf(entry, _AN + "cell-id", cell.cell_id)
            _leaf(entry, _AN + "tx-power", _dec(cell.power_dbm))
            _leaf(entry, _AN + "tilt", _dec(cell.tilt_deg))
            _leaf(entry, _AN + "admin-state", "locked" if cell.locked else "unlocked")
            saving = etree.SubElement(entry, _AN + "energy-saving")
            _leaf(saving, _AN + "state", cell.energy_saving)
            _leaf(saving, _AN + "saving-percent", _dec(cell.saving_percent))
            if config_only:
                continue
            _leaf(entry, _AN + "site-id", cell.site_id)
            _leaf(entry, _AN + "region", cell.region)
            _leaf(entry, _AN + "oper-status", _status(cell.in_service and not cell.locked))
            _leaf(entry, _AN + "users", cell.users)
            _leaf(entry, _AN + "power-draw", _dec(self.network.cell_kw(cell_id), 3))
            limits = etree.SubElement(entry, _AN + "limits")
            _leaf(limits, _AN + "max-tx-power", _dec(cell.max_power_dbm))
            _leaf(limits, _AN + "min-tilt", _dec(cell.min_tilt_deg))
            _leaf(limits, _AN + "max-tilt", _dec(cell.max_tilt_deg))
            _leaf(limits, _AN + "planned-tx-power", _dec(cell.base_power_dbm))
            _leaf(limits, _AN + "planned-tilt", _dec(cell.base_tilt_deg))
        return root

    def areas(self) -> etree._Element:
        root = etree.Element(_AN + "areas", nsmap=nsmap(ANNET_NS))
        for region in self.network.regions():
            if not self.device.in_scope(region):
                continue
            kpis = self.network.area_kpis([region])
            entry = etree.SubElement(root, _AN + "area")
            _leaf(entry, _AN + "region", region)
            _leaf(entry, _AN + "users-total", kpis.users_total)
            _leaf(entry, _AN + "users-without-service", _dec(kpis.users_without_service, 1))
            _leaf(entry, _AN + "coverage", _dec(kpis.coverage_percent))
            _leaf(entry, _AN + "energy-kw", _dec(kpis.energy_kw, 3))
        return root


def _origin(parent: etree._Element, alarm: Alarm) -> None:
    _leaf(parent, _AN + "alarm-id", alarm.alarm_id)
    _leaf(parent, _AN + "region", alarm.region)


def _core_end(path: Sequence[LinkView]) -> str:
    """The router at the core end of a backhaul path (links nearest the site first)."""
    if not path:
        return ""
    last = path[-1]
    if len(path) == 1:
        return last.a
    before = {path[-2].a, path[-2].b}
    return last.a if last.b in before else last.b
