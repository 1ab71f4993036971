"""OSS trouble-ticket agent (draft section 2.3): a complaint of its domain split into sub-tickets.

The domain's CSS complaint agent (`an_agent.agents.complaint`) localises a ticket and hands it here with
its complaint_ticket_v1 payload; this agent splits it into diagnosis sub-tickets for the transport (IP)
and mobile (RAN) agents of its domain, has the cause repaired and the restoration verified
(`SubTicketing`), and finishes with the resolution.

Option ``ask_assigner_for`` (a list of complaint_ticket_v1 keys, e.g. ``[occurred_at]``): when the
complaint carries none of a listed key, the task goes ``input-required`` listing what is missing (draft-wang
5.2) and waits for its assigner to edit the task (or, over A2A, to send a message on it) with ``key: value``
lines; it resumes with them, or fails saying what never came (``input_seconds``, real seconds, default 120).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from an_agent.agents.environment import RoleName
from an_agent.agents.sdk import NotFeasible, TaskFailure, TaskRun
from an_agent.agents.subtickets import SubTicketing
from an_agent.model import Task
from an_agent.schemas.validate import ValidatedPayload


class TroubleTicketBehaviour(SubTicketing):
    role = RoleName.TROUBLE_TICKET
    option_defaults: ClassVar[Mapping[str, Any]] = {"ask_assigner_for": [], "input_seconds": 120.0}
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
        options = {**self.option_defaults, **self.env.options}
        missing = [str(k) for k in options["ask_assigner_for"] if not values.get(str(k))]
        if missing:
            values.update(self._ask_assigner(task, run, str(values["ticket_id"]), missing))
        resolution = self.investigate(values, sites)
        for key in missing:
            resolution[key] = values[key]
        self.finish(run, str(resolution["summary"]), resolution)

    def _ask_assigner(self, task: Task, run: TaskRun, ticket: str, missing: list[str]) -> dict[str, str]:
        """``input-required`` towards the assigner for the ``missing`` keys; its answers, or `TaskFailure`."""
        assigner = task.send_from or "the assigner"
        self.note(
            "input_required", f"ticket {ticket}: asks {assigner} for {', '.join(missing)}", task_id=task.task_id,
            missing=missing,
        )  # fmt: skip
        seconds = float({**self.option_defaults, **self.env.options}["input_seconds"])
        try:
            answers = self.ask_input(
                run, missing, f"complaint ticket {ticket} does not say {', '.join(missing)}", seconds
            )
        except TaskFailure as exc:
            raise TaskFailure(f"ticket {ticket}: {exc}") from None
        if answers is None:
            raise TaskFailure(f"ticket {ticket}: {assigner} gave no {', '.join(missing)} within {seconds:g} s")
        self.note(
            "input_provided",
            f"ticket {ticket}: {assigner} provided "
            + ", ".join(f"{key} {answers[key]}" for key in missing)
            + "; resuming",
            task_id=task.task_id,
        )
        return {key: answers[key] for key in missing}
