"""Field repairs: a trouble ticket for field maintenance, through the FME copilots when there are any.

A role that decides a repair cannot be done remotely (draft section 2.1, step 6) calls
`FieldRepair.field_repair`: when it may talk to a service-layer FME copilot of the element's region, the
ticket (trouble_ticket_v1) goes there over NETCONF and the call returns when the field engineer has
repaired the element (steps 7-8, `an_agent.agents.fme`); otherwise field maintenance is dispatched
directly and the call returns at once (the repair comes at the nominal time).
"""

from __future__ import annotations

import zlib

from an_agent.agents import payloads
from an_agent.agents.base import stamp
from an_agent.agents.environment import Layer, RoleName
from an_agent.agents.findings import Finding
from an_agent.agents.guidance import TICKET_FAULT, region_of
from an_agent.agents.sdk import LabBehaviour, TaskFailure


def ticket_id(element: str, when: float) -> str:
    """A trouble-ticket id derived from what and when (the same in every run of a topology)."""
    return f"TT-{zlib.crc32(f'{element}@{when:.0f}'.encode()) % 1_000_000:06d}"


class FieldRepair(LabBehaviour):
    """`field_repair` for the roles that open trouble tickets (module docstring)."""

    def service_copilot(self, element: str) -> str | None:
        """The service-layer FME copilot that takes tickets for ``element``'s region, if it may talk to one."""
        found = self.env.peers_with_role(RoleName.FME_COPILOT, region_of(self.env.network, element), Layer.SERVICE)
        return found[0] if found else None

    def field_repair(self, finding: Finding, ticket: str) -> str:
        """Open trouble ticket ``ticket`` for ``finding.element``; what was done, for summaries.

        Through an FME copilot it blocks until the ticket closes (`TaskFailure` when it does not).
        """
        assert finding.element is not None
        copilot = self.service_copilot(finding.element)
        if copilot is None:
            eta = self.env.network.dispatch_field_repair(finding.element, ticket, self.name, finding.root_cause)
            self.note(
                "trouble_ticket",
                f"trouble ticket {ticket} assigned to field maintenance for {finding.element} "
                f"(repair expected at {stamp(eta)})",
                element=finding.element,
                ticket_id=ticket,
                eta=eta,
            )
            return f"repaired by field maintenance (ticket {ticket})"
        sites = sorted(finding.explained_site_ids)
        value = payloads.envelope(
            "trouble_ticket_v1",
            {
                "ticket_id": ticket,
                "site": sites,
                "device": finding.element,
                "fault": TICKET_FAULT.get(finding.fault_type, "unknown"),
                "recommended_actions": list(finding.recommendations),
                "priority": "urgent" if len(sites) >= 5 else "high" if sites else "normal",
                "deadline": stamp(self.env.scheduler.now() + self.env.timing.restoration_timeout),
                "other": finding.root_cause,
            },
        )
        self.note(
            "trouble_ticket",
            f"trouble ticket {ticket} for {finding.element} to the field engineer through {copilot}",
            element=finding.element,
            ticket_id=ticket,
        )
        outcome = self.ask_surely(
            copilot,
            f"ticket.{finding.element}",
            finding.element,
            f"Repair {finding.element} on site: trouble ticket {ticket}",
            value,
            expected_response="the repair report",
        )
        if not outcome.finished:
            raise TaskFailure(f"trouble ticket {ticket} not closed: {outcome.reason}")
        return f"repaired on site by the field engineer (ticket {ticket}, guided by {copilot})"
