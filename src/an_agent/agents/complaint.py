"""Complaint agent (draft section 2.3, IoV complaints): trouble tickets in natural language -> sub-tasks.

A ticket arrives as a task whose description is the customer's text (from the operator's BSS ticket
system). The agent parses it into a complaint_ticket_v1 payload (`complaint_text`) and localises the
boundary with the network's places and regions:

- a ticket about another management domain is forwarded, with its structured payload, to the complaint
  agent of that domain (FEASIBILITY first), and answered with that agent's resolution;
- in its own domain it hands the complaint to the OSS trouble-ticket agent of the domain when it may
  talk to one (`an_agent.agents.trouble_ticket`), else to the service-layer cross-domain agent (use
  case 2.1, step 3c); with neither it splits the ticket into sub-tickets itself (`SubTicketing`).

The ticket task finishes with the resolution the customer gets.
"""

from __future__ import annotations

from typing import Any

from an_agent.agents import payloads
from an_agent.agents.complaint_text import parse_ticket
from an_agent.agents.environment import RoleName
from an_agent.agents.sdk import NotFeasible, Outcome, TaskFailure, TaskRun
from an_agent.agents.subtickets import SubTicketing
from an_agent.clock import to_rfc3339
from an_agent.model import ConditionNotification, Task, parse_prompt
from an_agent.schemas.validate import ValidatedPayload


class ComplaintBehaviour(SubTicketing):
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
        received = self.env.scheduler.now()  # when the ticket reached this agent: what it can tell of its time
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
        resolution = self._process(values, received)
        self.finish(run, str(resolution["summary"]), resolution)

    def _process(self, values: dict[str, Any], received: float) -> dict[str, Any]:
        ticket = str(values["ticket_id"])
        region = values.get("region")
        location = str(values.get("location") or "")
        value = payloads.envelope("complaint_ticket_v1", values)
        if region and not self.env.in_scope(str(region)):
            peers = self.env.peers_with_role(RoleName.COMPLAINT, str(region))
            if not peers:
                why = self.env.why_no_peer(RoleName.COMPLAINT)
                raise TaskFailure(
                    f"ticket {ticket} concerns {region}, and {self.name} knows no agent there"
                    + (f": {why}" if why else "")
                )
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
        sites = self.sites_of(location)
        self.note(
            "boundary", f"ticket {ticket}: {location or 'the location'} is in this management domain", region=region
        )
        local = str(region) if region else (self.env.network.site(sites[0]).region if sites else None)
        oss = self.env.peers_with_role(RoleName.TROUBLE_TICKET, local)
        if oss:
            # CSS -> OSS: the domain's trouble-ticket agent splits the ticket into sub-tickets.
            outcome = self.ask(
                oss[0],
                f"ticket.{ticket}",
                location or ticket,
                f"Resolve complaint ticket {ticket}: {values.get('complaint_category')} at {location}",
                value,
                expected_response="the resolution of the complaint",
                on_input=lambda event: self._answer(ticket, received, event),
            )
            return self._relay(ticket, oss[0], outcome)
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
        return self.investigate(values, sites)

    def _answer(self, ticket: str, received: float, event: ConditionNotification) -> dict[str, str] | None:
        """What this agent, which took the ticket from the BSS, can tell the OSS agent that asks: when it
        was raised (an upper bound of when the trouble began: the ticket said no time)."""
        asked = [parse_prompt(item.required).target_object or "" for item in event.input_required]
        known = {"occurred_at": to_rfc3339(received)}
        answer = {key: known[key] for key in asked if key in known}
        self.note(
            "input_answered" if answer else "input_unanswered",
            f"ticket {ticket}: {event.task_id} asks for {', '.join(asked) or 'nothing named'}; "
            + (
                "answering " + ", ".join(f"{k} {v} (when the BSS raised the ticket)" for k, v in answer.items())
                if answer
                else f"{self.name} knows none of it"
            ),
            task_id=event.task_id,
        )
        return answer or None

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
