"""The behaviour an agent has when nothing more specific is plugged in.

It exercises the whole task lifecycle with honest, explainable decisions so a
lab can see the protocol work before real behaviours exist:

- assignment: accepted when the prompt has a task description (YANG already
  checks that) — nothing else is refused;
- execution: ``created`` -> ``processing`` -> ``finished``, the result echoing
  the parsed prompt sections as JSON. When the prompt names no target object
  the task goes ``input-required`` (asking for one) and resumes when the
  assigner edits the task: a new content with a ``## target object`` section,
  or a text data-param (added to ``msg-data``) naming the object; ``failed``
  when none comes within ``input_seconds``;
- FEASIBILITY: feasible when the prompt has a target object and its task
  description mentions one of the agent's skills (name or tag); otherwise not,
  with the reason and a counter-proposal rewritten for the closest skill;
- FULFILLMENT: fulfilled when the task exists and finished, and the result meets the criteria the
  requester sent (`an_agent.schemas.fulfilment`: in the request, or as JSON in the expected-response),
  or else every term of its expected-response appears in the result; otherwise not, saying what is
  missing. (The requester judges for itself anyway: `AgentClient.fulfilment`.)
  A FULFILLMENT about a task this agent does not hold is an executor's proposal
  about a task this agent assigned (draft-wang 5.3 (2)): accepted when it
  carries a proposal, refused when it carries none.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

from an_agent.agents.sdk import Behaviour, TaskRun
from an_agent.model import (
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Skill,
    Task,
    TaskResult,
    TaskStatus,
    build_prompt,
    parse_prompt,
)
from an_agent.schemas.fulfilment import Expectation, request_expectation

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class DefaultBehaviour(Behaviour):
    """Echo-style executor with skill-based feasibility; see the module docstring for the rules.

    ``work_seconds`` is how long a task stays ``processing`` (real time,
    interrupted by cancellation), so that watchers can see the transition.
    """

    def __init__(self, work_seconds: float = 0.05, input_seconds: float = 300.0) -> None:
        self.work_seconds = work_seconds
        self.input_seconds = input_seconds

    def execute(self, task: Task, run: TaskRun) -> None:
        run.set_status(TaskStatus.PROCESSING)
        sections = parse_prompt(task.content or "")
        if run.wait_cancelled(self.work_seconds):
            return
        if not sections.target_object:
            target = self._ask_target(task, run)
            if target is None:
                return
            sections = replace(sections, target_object=target)
        summary = f"{self.agent.profile.name} executed: {sections.task_description or '(no description)'}"
        data = {
            "target_object": sections.target_object,
            "task_description": sections.task_description,
            "environmental_information": sections.environment,
            "executed_by": self.agent.profile.name,
        }
        run.finish(TaskResult(summary=summary, format="application/json", data=json.dumps(data, sort_keys=True)))

    def _ask_target(self, task: Task, run: TaskRun) -> str | None:
        """input-required: ask the assigner for the target object; None (task ended) when none comes."""
        provided = run.request_input(
            [
                build_prompt(
                    f"the target object of task {task.task_id}",
                    "name the object to act on: edit the task's content to add a '## target object' section, "
                    "or add a text data-param naming it to the task's msg-data",
                )
            ],
            reason="the prompt names no target object: there is nothing to act on yet",
            timeout=self.input_seconds,
        )
        if provided is None:
            if not run.cancelled:
                run.fail(f"no target object was provided within {self.input_seconds:g} s: there is nothing to act on")
            return None
        target = parse_prompt(provided.task.content or "").target_object
        if not target:
            target = next((p.data.strip() for p in provided.data_params if p.data and p.data.strip()), None)
        if not target:
            run.fail(f"the input {provided.provided_by} provided names no target object either")
            return None
        return target

    def negotiate(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        if request.type == NegotiationType.FEASIBILITY:
            return self._feasibility(request)
        return self._fulfillment(request, task)

    def _feasibility(self, request: NegotiationRequest) -> NegotiationResult:
        content = "\n".join(request.content)
        sections = parse_prompt(content)
        skills = self.agent.profile.skills
        if not sections.target_object:
            return NegotiationResult(
                type=NegotiationType.FEASIBILITY,
                feasible=False,
                reason="the request names no target object; add a '## target object' section",
            )
        description = _words(sections.task_description or "")
        matched = [s for s in skills if _skill_words(s) & description]
        if matched or not skills:
            names = ", ".join(s.name for s in matched) or "general execution"
            return NegotiationResult(
                type=NegotiationType.FEASIBILITY, feasible=True, reason=f"covered by skill(s): {names}"
            )
        closest = max(skills, key=lambda s: len(_skill_words(s) & _words(content)))
        proposal = build_prompt(
            target_object=sections.target_object,
            task_description=f"{closest.name}: {closest.description or closest.name}",
            environment=sections.environment,
        )
        return NegotiationResult(
            type=NegotiationType.FEASIBILITY,
            feasible=False,
            reason=(
                f"{self.agent.profile.name} has no skill for this task description; "
                f"its skills are: {', '.join(s.name for s in skills)}"
            ),
            counter_proposal=proposal,
        )

    def _fulfillment(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        if task is None and request.send_from and request.send_from != self.agent.profile.name:
            return self._evaluate_proposal(request)
        if task is None:
            return NegotiationResult(
                type=NegotiationType.FULFILLMENT,
                fulfilled=False,
                reason=f"there is no task {request.task_id!r} on {self.agent.profile.name}",
            )
        if task.status != TaskStatus.FINISHED:
            return NegotiationResult(
                type=NegotiationType.FULFILLMENT,
                fulfilled=False,
                reason=f"task {task.task_id} is {task.status or 'unknown'}, not finished",
            )
        criteria = request_expectation(request.content)
        if criteria is None and (task.expected_response or "").lstrip().startswith("{"):
            criteria = Expectation.parse(task.expected_response)
        if criteria is not None and not criteria.empty:
            judgement = criteria.judge(task)
            return NegotiationResult(
                type=NegotiationType.FULFILLMENT, fulfilled=judgement.fulfilled, reason=judgement.reason
            )
        result_text = " ".join(filter(None, [task.result.summary, task.result.data])) if task.result else ""
        missing = sorted(_words(task.expected_response or "") - _words(result_text) - _STOP_WORDS)
        if missing:
            return NegotiationResult(
                type=NegotiationType.FULFILLMENT,
                fulfilled=False,
                reason=f"the result does not address the expected response: missing {', '.join(missing)}",
            )
        return NegotiationResult(
            type=NegotiationType.FULFILLMENT,
            fulfilled=True,
            reason=f"task {task.task_id} finished and its result covers the expected response",
        )

    def _evaluate_proposal(self, request: NegotiationRequest) -> NegotiationResult:
        """An executor asks this agent, its assigner, to evaluate what it can deliver for ``request.task_id``."""
        proposals = [parse_prompt(c) for c in request.content]
        if not any(p.complete for p in proposals):
            return NegotiationResult(
                type=NegotiationType.FULFILLMENT,
                fulfilled=False,
                reason=f"{request.send_from} sent no proposal for task {request.task_id}: say what you can deliver",
            )
        offered = next(p for p in proposals if p.complete)
        return NegotiationResult(
            type=NegotiationType.FULFILLMENT,
            fulfilled=True,
            reason=(
                f"{self.agent.profile.name} accepts the proposal of {request.send_from} for task {request.task_id}: "
                f"{offered.task_description} on {offered.target_object}"
            ),
        )


_STOP_WORDS = {"a", "an", "the", "of", "and", "or", "to", "in", "on", "for", "with", "is", "be"}


def _skill_words(skill: Skill) -> set[str]:
    words = _words(skill.name.replace("-", " "))
    for tag in skill.tags:
        words |= _words(tag.replace("-", " "))
    return words - _STOP_WORDS
