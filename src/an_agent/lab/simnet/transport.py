"""The transport part of the simulated network: routers' links, the sites' backhaul, IP actions.

A link is owned by the region of its ``a`` router (the IP agent responsible for that region sees it
and its alarms). A link fault raises a critical ``link_down`` alarm; every site whose backhaul crosses
the link goes out of service (`backhaul_up`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from an_agent.agents.environment import FaultLocation, LinkView
from an_agent.lab.simnet.state import NetState, Pending

LINK_FAULTS = {"link_cut": "loss_of_light", "router_port_fault": "port_error_disabled"}
"""Fault type -> the evidence an IP diagnosis finds."""


def otdr_location(seed: int, link_id: str, a_router: str, occurrence: int) -> FaultLocation:
    """Where a cut fibre breaks, as an OTDR shot from its ``a`` router reads it.

    The span length is a property of the link (fixed by seed and link), the break point of each cut
    (seed, link, occurrence): two runs of a topology find the break at the same place.
    """
    span = round(random.Random(f"{seed}:span:{link_id}").uniform(2.0, 18.0), 2)
    distance = round(span * random.Random(f"{seed}:break:{link_id}:{occurrence}").uniform(0.05, 0.95), 2)
    return FaultLocation(link_id, a_router, span, distance)


class Transport:
    """Links and backhaul over a `NetState`; the caller of `refresh` holds the lock."""

    def __init__(self, state: NetState) -> None:
        self._s = state

    def link(self, link_id: str) -> LinkView:
        with self._s.lock:
            link = self._s.link(link_id)
            return LinkView(
                link.link_id, link.a, link.b, link.region, link.fault is None, LINK_FAULTS.get(link.fault or "")
            )

    def links(self, regions: Sequence[str] | None = None) -> list[LinkView]:
        links = self._s.links
        return [self.link(k) for k in sorted(links) if regions is None or links[k].region in regions]

    def sites_behind(self, link_id: str) -> list[str]:
        self._s.link(link_id)
        return sorted(s.site_id for s in self._s.sites.values() if link_id in s.backhaul)

    def backhaul_up(self, backhaul: Sequence[str]) -> bool:
        """True when every link of a site's backhaul is up (links the network does not have are ignored)."""
        links = self._s.links
        return all(links[k].fault is None for k in backhaul if k in links)

    def reset_port(self, link_id: str, by: str, pending: Pending) -> bool:
        """Reset both ports of a link: clears a port fault (True), not a cut. Caller holds the lock."""
        link = self._s.link(link_id)
        self._s.log(by, link_id, "port_reset", f"reset of the ports of {link.a} and {link.b}")
        if link.fault != "router_port_fault":
            return False
        link.fault = None
        self._s.repaired(link_id, by, "remote")
        return True

    def refresh(self, pending: Pending) -> None:
        """Raise ``link_down`` for faulty links, clear it for repaired ones."""
        for link in sorted(self._s.links.values(), key=lambda item: item.link_id):
            key = (link.link_id, "link_down")
            if link.fault is not None and key not in self._s.alarms:
                evidence = LINK_FAULTS[link.fault].replace("_", " ")
                self._s.raise_alarm(
                    pending,
                    "ip_transport",
                    link.link_id,
                    "link_down",
                    "critical",
                    link.region,
                    f"{link.link_id} ({link.a} - {link.b}) down: {evidence}",
                )
            elif link.fault is None and key in self._s.alarms:
                self._s.clear_alarm(pending, key)
