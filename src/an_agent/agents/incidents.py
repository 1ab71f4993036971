"""The cross-domain fault agent's incidents (`an_agent.agents.service`) and what it asks about them.

A `Report` is what reached the agent (an incident report of a domain agent, a complaint, or a second look
of its own); an `Incident` is what correlation made of reports: a cross-domain fault (a transport link
down explains the sites), a radio-side fault (one site), or a complaint no alarm explains. The requests
are the ``fault_diagnosis_v1`` payloads it sends the domain agents about an incident: diagnose it (the
IP agent for a cross-domain fault, else the RAN agent), diagnose the backhaul of its sites, repair the
root cause remotely, verify the restoration. Pure: built from the incident and the finding alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from an_agent.agents import payloads
from an_agent.agents.base import stamp
from an_agent.agents.environment import SimFuture
from an_agent.agents.findings import FAULT_TEMPLATE_TYPE, Finding


@dataclass
class Report:
    sender: str
    task_id: str
    sites: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    complaint: dict[str, Any] | None = None
    resolution: SimFuture[dict[str, Any]] | None = None
    second_look: bool = False
    """Sites investigated again on their own (`CrossDomainFaultBehaviour._second_look`): they do not join
    the incident of the link on their backhaul (that link is up again)."""


@dataclass
class Incident:
    kind: str
    """``cross-domain`` (a transport link explains the sites), ``radio`` (one site), ``complaint`` (no alarm)."""
    key: str
    sites: list[str]
    link: str | None = None
    complaints: list[Report] = field(default_factory=list)
    reports: list[str] = field(default_factory=list)


def diagnosis_request(incident: Incident, started: float) -> dict[str, Any]:
    """Diagnose ``incident`` (which began at ``started``): its link, or its sites (with the complaint's words)."""
    if incident.kind == "cross-domain":
        return payloads.envelope(
            "fault_diagnosis_v1",
            {
                "fault_type": "transmission_failure",
                "affected_site_ids": incident.sites,
                "domain": "cross_domain",
                "severity": "critical",
                "suspected_root_cause": f"transport link {incident.link} down",
                "occurred_at": stamp(started),
            },
        )
    complaint = incident.complaints[0].complaint if incident.complaints else {}
    return payloads.envelope(
        "fault_diagnosis_v1",
        {
            "fault_type": "base_station_outage" if incident.kind == "radio" else "cell_degradation",
            "affected_site_ids": incident.sites,
            "domain": "wireless",
            "occurred_at": stamp(started),
            **(
                {"other": f"customer complaint: {complaint.get('complaint_category')} at {complaint.get('location')}"}
                if complaint
                else {}
            ),
        },
    )


def backhaul_request(incident: Incident, started: float) -> dict[str, Any]:
    """Diagnose the backhaul of ``incident``'s sites (the radio side found nothing)."""
    return payloads.envelope(
        "fault_diagnosis_v1",
        {
            "fault_type": "base_station_outage",
            "affected_site_ids": incident.sites,
            "domain": "cross_domain",
            "suspected_root_cause": "backhaul transport of the sites",
            "occurred_at": stamp(started),
        },
    )


def repair_request(finding: Finding) -> dict[str, Any]:
    """Repair ``finding.element`` remotely, as the finding recommends."""
    return payloads.envelope(
        "fault_diagnosis_v1",
        {
            "fault_type": FAULT_TEMPLATE_TYPE.get(finding.fault_type, "unknown"),
            "affected_site_ids": finding.explained_site_ids,
            "affected_cell_ids": finding.explained_cell_ids,
            "suspected_root_cause": finding.root_cause,
            "other": f"repair: {'; '.join(finding.recommendations)} ({finding.element})",
        },
    )


def verification_request(finding: Finding, sites: list[str], cells: list[str]) -> dict[str, Any]:
    """Verify that ``sites`` and ``cells`` are back in service after the repair of ``finding.element``."""
    return payloads.envelope(
        "fault_diagnosis_v1",
        {
            "fault_type": FAULT_TEMPLATE_TYPE.get(finding.fault_type, "unknown"),
            "affected_site_ids": sites,
            "affected_cell_ids": cells,
            "domain": "wireless",
            "other": f"verify restoration after the repair of {finding.element}",
        },
    )
