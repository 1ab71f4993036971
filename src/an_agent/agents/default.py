"""The behaviour an agent has when nothing more specific is plugged in.

It exercises the whole task lifecycle with honest, explainable decisions so a
lab can see the protocol work before real behaviours exist:

- assignment: accepted when the prompt has a task description (YANG already
  checks that) — nothing else is refused;
- execution: ``created`` -> ``processing`` -> ``finished``, the result echoing
  the parsed prompt sections as JSON; ``failed`` when the prompt names no
  target object (there is nothing to act on);
- FEASIBILITY: feasible when the prompt has a target object and its task
  description mentions one of the agent's skills (name or tag); otherwise not,
  with the reason and a counter-proposal rewritten for the closest skill;
- FULFILLMENT: fulfilled when the task exists and finished, and every term of
  its expected-response appears in the result; otherwise not, saying what is missing.
"""

from __future__ import annotations

import json
import re

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
from an_agent.runtime.behaviour import Behaviour, TaskRun

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class DefaultBehaviour(Behaviour):
    """Echo-style executor with skill-based feasibility; see the module docstring for the rules.

    ``work_seconds`` is how long a task stays ``processing`` (real time,
    interrupted by cancellation), so that watchers can see the transition.
    """

    def __init__(self, work_seconds: float = 0.05) -> None:
        self.work_seconds = work_seconds

    def execute(self, task: Task, run: TaskRun) -> None:
        run.set_status(TaskStatus.PROCESSING)
        sections = parse_prompt(task.content or "")
        if run.wait_cancelled(self.work_seconds):
            return
        if not sections.target_object:
            run.fail("the prompt has no '## target object' section: there is nothing to act on")
            return
        summary = f"{self.agent.profile.name} executed: {sections.task_description or '(no description)'}"
        data = {
            "target_object": sections.target_object,
            "task_description": sections.task_description,
            "environmental_information": sections.environment,
            "executed_by": self.agent.profile.name,
        }
        run.finish(TaskResult(summary=summary, format="application/json", data=json.dumps(data, sort_keys=True)))

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


_STOP_WORDS = {"a", "an", "the", "of", "and", "or", "to", "in", "on", "for", "with", "is", "be"}


def _skill_words(skill: Skill) -> set[str]:
    words = _words(skill.name.replace("-", " "))
    for tag in skill.tags:
        words |= _words(tag.replace("-", " "))
    return words - _STOP_WORDS
