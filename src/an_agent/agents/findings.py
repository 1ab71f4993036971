"""The shape of a diagnosis result, shared by the fault agents and the agents that read their results.

A diagnosis task finishes with JSON of this shape (`Finding.to_dict`); FULFILLMENT negotiation checks
its keys (``root_cause``, ``fault_type``, ``element``) and that ``explained_site_ids`` covers the sites
the requester asked about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from an_agent.agents.environment import ManagedNetwork

FAULT_TEMPLATE_TYPE = {
    "link_cut": "transmission_failure",
    "router_port_fault": "transmission_failure",
    "site_power_failure": "power_failure",
    "site_software_fault": "base_station_outage",
    "cell_misconfiguration": "cell_degradation",
}
"""Our precise fault types -> the ``fault_type`` enumeration of fault_diagnosis_v1."""

REMOTE_REPAIRABLE = {"router_port_fault", "site_software_fault", "cell_misconfiguration"}


@dataclass
class Finding:
    """A diagnosed cause (``fault_type`` ``none`` when the element is healthy, ``unknown`` when unexplained)."""

    fault_type: str
    element: str | None
    root_cause: str
    remote_repair_possible: bool = False
    recommendations: list[str] = field(default_factory=list)
    explained_site_ids: list[str] = field(default_factory=list)
    explained_cell_ids: list[str] = field(default_factory=list)
    diagnosed_by: str = ""

    @property
    def is_fault(self) -> bool:
        return self.fault_type not in ("none", "unknown")

    def to_dict(self) -> dict[str, Any]:
        return {
            "root_cause": self.root_cause,
            "fault_type": self.fault_type,
            "element": self.element,
            "remote_repair_possible": self.remote_repair_possible,
            "recommendations": list(self.recommendations),
            "explained_site_ids": sorted(self.explained_site_ids),
            "explained_cell_ids": sorted(self.explained_cell_ids),
            "diagnosed_by": self.diagnosed_by,
        }

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> Finding:
        return cls(
            fault_type=str(value.get("fault_type") or "unknown"),
            element=value.get("element"),
            root_cause=str(value.get("root_cause") or ""),
            remote_repair_possible=bool(value.get("remote_repair_possible")),
            recommendations=[str(r) for r in value.get("recommendations") or []],
            explained_site_ids=[str(s) for s in value.get("explained_site_ids") or []],
            explained_cell_ids=[str(c) for c in value.get("explained_cell_ids") or []],
            diagnosed_by=str(value.get("diagnosed_by") or ""),
        )


_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*[A-Za-z0-9]")


def elements_in(text: str, known: set[str]) -> list[str]:
    """Inventory ids (links, sites, cells) named in free text such as an ``other`` fragment, in order."""
    out: list[str] = []
    for token in _TOKEN.findall(text):
        if token in known and token not in out:
            out.append(token)
    return out


def link_ids(network: ManagedNetwork) -> set[str]:
    return {link.link_id for link in network.links()}
