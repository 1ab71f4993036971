"""OSS trouble-ticket agent (draft section 2.3): a complaint of its domain split into sub-tickets.

The domain's CSS complaint agent (`an_agent.agents.complaint`) localises a ticket and hands it here with
its complaint_ticket_v1 payload; this agent splits it into diagnosis sub-tickets for the transport (IP)
and mobile (RAN) agents of its domain, has the cause repaired and the restoration verified
(`SubTicketing`), and finishes with the resolution.
"""

from __future__ import annotations

from an_agent.agents.base import NotFeasible, TaskFailure
from an_agent.agents.environment import RoleName
from an_agent.agents.subtickets import SubTicketing
from an_agent.model import Task
from an_agent.runtime.behaviour import TaskRun
from an_agent.schemas.validate import ValidatedPayload


class TroubleTicketBehaviour(SubTicketing):
    role = RoleName.TROUBLE_TICKET
    description = "OSS trouble-ticket agent: complaint tickets split into sub-tickets for transport and mobile agents"

    def _sites(self, payload: ValidatedPayload | None) -> list[str]:
        if payload is None or payload.schema_id != "complaint_ticket_v1":
            raise NotFeasible(f"{self.name} takes complaint tickets (complaint_ticket_v1)")
        location = str(payload.values.get("location") or "")
        sites = self.sites_of(location)
        if not sites:
            raise NotFeasible(f"{location or 'the location'} is not a known place of the network")
        region = self.env.network.site(sites[0]).region
        if not self.env.in_scope(region):
            raise NotFeasible(f"{location} is in {region}, not a domain of {self.name}")
        return sites

    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        sites = self._sites(payload)
        return f"{len(sites)} site(s) at the location: sub-tickets for the transport and mobile agents"

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        try:
            sites = self._sites(payload)
        except NotFeasible as exc:
            raise TaskFailure(str(exc)) from None
        assert payload is not None
        values = dict(payload.values)
        if payload.other.fragments:
            values["other"] = list(payload.other.fragments)
        resolution = self.investigate(values, sites)
        self.finish(run, str(resolution["summary"]), resolution)
