"""Sub-ticketing (draft section 2.3): a localised complaint split into sub-tickets for the domain's agents.

`SubTicketing` is what the OSS trouble-ticket agent does with a complaint of its own domain (and what a
complaint agent does itself when its domain has no trouble-ticket agent): diagnosis sub-tickets
(fault_diagnosis_v1) for the RAN (mobile) and IP (transport) agents of the domain, assigned together
and awaited together, each result checked by FULFILLMENT negotiation; then the repair (remotely by the
agent that found the cause, else a trouble ticket for field maintenance) and the RAN agent's
verification. The result is the resolution the customer gets.
"""

from __future__ import annotations

from typing import Any

from an_agent.agents import payloads
from an_agent.agents.base import short
from an_agent.agents.environment import RoleName
from an_agent.agents.field import FieldRepair, ticket_id
from an_agent.agents.findings import FAULT_TEMPLATE_TYPE, Finding
from an_agent.agents.sdk import Outcome, TaskFailure

_CATEGORY_FAULT = {
    "no_coverage": "base_station_outage",
    "call_drop": "cell_degradation",
    "slow_data": "cell_degradation",
    "high_latency": "transmission_failure",
    "intermittent_connectivity": "cell_degradation",
}


class SubTicketing(FieldRepair):
    """Splitting a localised complaint into sub-tickets, deciding the repair, verifying (module docstring)."""

    def sites_of(self, location: str) -> list[str]:
        """The sites of the network place named ``location`` ([] when it names none)."""
        place = next((p for p in self.env.network.places() if p.name == location), None)
        return list(place.site_ids) if place else []

    def investigate(self, values: dict[str, Any], sites: list[str]) -> dict[str, Any]:
        """Split the ticket into RAN and IP sub-tasks, decide, repair, verify."""
        ticket = str(values["ticket_id"])
        region = self.env.network.site(sites[0]).region
        rans = self.env.peers_with_role(RoleName.RAN_FAULT, region)
        ips = self.env.peers_with_role(RoleName.IP_FAULT, region)
        if not rans:
            raise TaskFailure(f"no RAN fault agent for {region}")
        common = {
            "fault_type": _CATEGORY_FAULT.get(str(values.get("complaint_category")), "unknown"),
            "affected_site_ids": sites,
            "other": f"IoV complaint {ticket}: {values.get('complaint_category')} at {values.get('location')}"
            + (f", {values['affected_vehicle_count']} vehicles" if values.get("affected_vehicle_count") else ""),
        }
        if values.get("occurred_at"):
            common["occurred_at"] = values["occurred_at"]
        plans = [(rans[0], "wireless", "radio side")] + ([(ips[0], "ip_transport", "transport path")] if ips else [])
        handles = []
        for peer, domain, what in plans:
            value = payloads.envelope("fault_diagnosis_v1", {**common, "domain": domain})
            target = ", ".join(sites)
            description = f"Diagnose the {what} of {short(sites)} for complaint {ticket}"
            agreed = self.propose(peer, f"diagnose.{ticket}.{domain}", target, description, value)
            if agreed.task_id is None:
                raise TaskFailure(f"{peer} refused the diagnosis: {'; '.join(agreed.refusals)}")
            handles.append(
                (
                    peer,
                    self.assign(
                        peer, agreed.task_id, target, description, agreed.value, "root_cause, fault_type, element"
                    ),
                )
            )
        self.note(
            "sub_tasks",
            f"ticket {ticket} split into {len(handles)} diagnosis sub-tickets: "
            + ", ".join(peer for peer, _ in handles),
            region=region,
            sites=sites,
            peers=[peer for peer, _ in handles],
        )
        findings: list[tuple[str, Finding]] = []
        for peer, handle in handles:
            outcome = Outcome(handle.result(), None)
            if not outcome.finished:
                raise TaskFailure(f"diagnosis by {peer} failed: {outcome.reason}")
            self.evaluate(peer, outcome, ["root_cause", "fault_type"], {})
            findings.append((peer, Finding.from_dict(outcome.result())))
        faults = [(p, f) for p, f in findings if f.is_fault and f.element]
        faults.sort(key=lambda pf: 0 if pf[1].fault_type in ("link_cut", "router_port_fault") else 1)
        if not faults:
            summary = f"no network fault found at {values.get('location')}: " + "; ".join(
                f.root_cause for _, f in findings
            )
            self.note("no_fault", f"ticket {ticket}: {summary}")
            return {"ticket_id": ticket, "resolved": True, "handled_by": self.name, "summary": summary}
        owner, finding = faults[0]
        assert finding.element is not None
        self.note_root_cause(finding, owner)
        actions = self._repair(owner, finding, ticket)
        verify = payloads.envelope(
            "fault_diagnosis_v1",
            {
                "fault_type": FAULT_TEMPLATE_TYPE.get(finding.fault_type, "unknown"),
                "affected_site_ids": [
                    s for s in finding.explained_site_ids if finding.fault_type != "cell_misconfiguration"
                ],
                "affected_cell_ids": finding.explained_cell_ids,
                "domain": "wireless",
                "other": f"verify restoration for complaint {ticket}",
            },
        )
        outcome = self.ask(
            rans[0],
            f"verify.{ticket}",
            finding.element,
            f"Verify that service is restored at {values.get('location')}",
            verify,
        )
        if not outcome.finished:
            raise TaskFailure(f"ticket {ticket}: restoration not confirmed: {outcome.reason}")
        self.note("restored", f"ticket {ticket}: service restored at {values.get('location')}")
        return {
            "ticket_id": ticket,
            "resolved": True,
            "handled_by": self.name,
            "root_cause": finding.root_cause,
            "summary": f"root cause: {finding.root_cause}; {actions}; service restored at {values.get('location')}",
        }

    def _repair(self, owner: str, finding: Finding, ticket: str) -> str:
        assert finding.element is not None
        if finding.remote_repair_possible:
            value = payloads.envelope(
                "fault_diagnosis_v1",
                {
                    "fault_type": FAULT_TEMPLATE_TYPE.get(finding.fault_type, "unknown"),
                    "affected_site_ids": [
                        s for s in finding.explained_site_ids if finding.fault_type != "cell_misconfiguration"
                    ],
                    "affected_cell_ids": finding.explained_cell_ids,
                    "suspected_root_cause": finding.root_cause,
                    "other": f"repair for complaint {ticket}: {'; '.join(finding.recommendations)} ({finding.element})",
                },
            )
            outcome = self.ask(
                owner,
                f"repair.{finding.element}",
                finding.element,
                f"Repair {finding.element} remotely: {'; '.join(finding.recommendations)}",
                value,
            )
            if outcome.finished:
                self.note("decision", f"ticket {ticket}: {finding.element} repaired remotely by {owner}")
                return f"repaired remotely by {owner}"
        return self.field_repair(finding, ticket_id(finding.element, self.env.scheduler.now()))
