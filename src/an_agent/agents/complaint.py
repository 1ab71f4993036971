"""Complaint agent (draft section 2.3, IoV complaints): trouble tickets in natural language -> sub-tasks.

A ticket arrives as a task whose description is the customer's text (from the operator's BSS ticket
system). The agent parses it into a complaint_ticket_v1 payload (`complaint_text`) and localises the
boundary with the network's places and regions:

- a ticket about another management domain is forwarded, with its structured payload, to the complaint
  agent of that domain (FEASIBILITY first), and answered with that agent's resolution;
- in its own domain it hands the complaint to the service-layer cross-domain agent when it may talk to
  one (use case 2.1, step 3c); otherwise it splits the ticket into sub-tasks for the RAN and IP agents
  of the domain (fault_diagnosis_v1, assigned together, awaited together), decides on the repair
  (remote by the agent that found the cause, or a trouble ticket for field maintenance) and has the
  RAN agent verify the restoration.

The ticket task finishes with the resolution the customer gets.
"""

from __future__ import annotations

from typing import Any

from an_agent.agents import payloads
from an_agent.agents.base import LabBehaviour, NotFeasible, Outcome, TaskFailure, short
from an_agent.agents.complaint_text import parse_ticket
from an_agent.agents.environment import RoleName
from an_agent.agents.findings import FAULT_TEMPLATE_TYPE, Finding
from an_agent.agents.ran import ticket_id
from an_agent.model import Task, parse_prompt
from an_agent.runtime.behaviour import TaskRun
from an_agent.schemas.validate import ValidatedPayload

_CATEGORY_FAULT = {
    "no_coverage": "base_station_outage",
    "call_drop": "cell_degradation",
    "slow_data": "cell_degradation",
    "high_latency": "transmission_failure",
    "intermittent_connectivity": "cell_degradation",
}


class ComplaintBehaviour(LabBehaviour):
    role = RoleName.COMPLAINT
    description = "Complaint-handling agent: natural-language trouble tickets to structured sub-tasks"

    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        if payload is None:
            return "the ticket text will be parsed into a complaint_ticket_v1 payload"
        if payload.schema_id != "complaint_ticket_v1":
            raise NotFeasible(f"{self.name} takes trouble tickets (text or complaint_ticket_v1)")
        region = payload.values.get("region")
        if (
            region
            and not self.env.in_scope(str(region))
            and not self.env.peers_with_role(RoleName.COMPLAINT, str(region))
        ):
            raise NotFeasible(f"{region} is not a domain of {self.name} and it knows no complaint agent there")
        return f"{self.name} handles complaints of {', '.join(self.env.regions) or 'every region'}"

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        if payload is None:
            text = parse_prompt(task.content or "").task_description or ""
            if not text:
                raise TaskFailure("the ticket has no text")
            self.env.scheduler.sleep(self.env.timing.ticket_parse)
            network = self.env.network
            parsed = parse_ticket(
                text, network.places(), network.region_aliases(), self.env.regions, self.env.scheduler.now()
            )
            value = payloads.envelope("complaint_ticket_v1", parsed.payload)
            self.note(
                "complaint_parsed",
                f"ticket {parsed.payload['ticket_id']}: "
                f"{parsed.payload['complaint_category']} at {parsed.payload.get('location', '?')} "
                f"(region {parsed.payload.get('region', '?')})",
                payload=parsed.payload,
            )
            payload = payloads.validate(value)
        elif payload.schema_id != "complaint_ticket_v1":
            raise TaskFailure(f"{self.name} takes complaint_ticket_v1 payloads, not {payload.schema_id}")
        values = dict(payload.values)
        if payload.other.fragments:
            values["other"] = list(payload.other.fragments)
        resolution = self._process(values)
        self.finish(run, str(resolution["summary"]), resolution)

    def _process(self, values: dict[str, Any]) -> dict[str, Any]:
        ticket = str(values["ticket_id"])
        region = values.get("region")
        location = str(values.get("location") or "")
        value = payloads.envelope("complaint_ticket_v1", values)
        if region and not self.env.in_scope(str(region)):
            peers = self.env.peers_with_role(RoleName.COMPLAINT, str(region))
            if not peers:
                raise TaskFailure(f"ticket {ticket} concerns {region}, and {self.name} knows no agent there")
            self.note(
                "boundary",
                f"ticket {ticket}: {location or 'the location'} is in {region}, another "
                f"management domain: forwarding to {peers[0]}",
                region=region,
            )
            outcome = self.ask(
                peers[0],
                f"forward.{ticket}",
                location or ticket,
                f"Handle complaint ticket {ticket} forwarded from {self.name}: "
                f"{values.get('complaint_category')} at {location or region}",
                value,
            )
            return self._relay(ticket, peers[0], outcome)
        place = next((p for p in self.env.network.places() if p.name == location), None)
        sites = list(place.site_ids) if place else []
        self.note(
            "boundary", f"ticket {ticket}: {location or 'the location'} is in this management domain", region=region
        )
        services = self.env.peers_with_role(RoleName.CROSS_DOMAIN_FAULT)
        if services:
            outcome = self.ask(
                services[0],
                f"complaint.{ticket}",
                location or ticket,
                f"Complaint ticket {ticket}: {values.get('complaint_category')} at {location}",
                value,
            )
            return self._relay(ticket, services[0], outcome)
        if not sites:
            raise TaskFailure(f"ticket {ticket}: the location {location!r} is not a known place of the network")
        return self._investigate(values, sites)

    def _relay(self, ticket: str, peer: str, outcome: Outcome) -> dict[str, Any]:
        if not outcome.finished:
            raise TaskFailure(f"ticket {ticket}: {peer} could not resolve it: {outcome.reason}")
        result = outcome.result()
        return {
            "ticket_id": ticket,
            "resolved": True,
            "handled_by": result.get("handled_by", peer),
            "summary": str(result.get("summary", outcome.reason)),
        }

    def _investigate(self, values: dict[str, Any], sites: list[str]) -> dict[str, Any]:
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
            f"ticket {ticket} split into {len(handles)} diagnosis sub-tasks: " + ", ".join(peer for peer, _ in handles),
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
        tt = ticket_id(finding.element, self.env.scheduler.now())
        eta = self.env.network.dispatch_field_repair(finding.element, tt, self.name, finding.root_cause)
        self.note(
            "trouble_ticket",
            f"trouble ticket {tt} for field maintenance on {finding.element}",
            element=finding.element,
            eta=eta,
        )
        return f"repaired by field maintenance (ticket {tt})"
