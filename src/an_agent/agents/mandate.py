"""An agent's share of a service intent (``intent_task_v1``): what the intent agent decomposed to it.

The service-intent agent assigns each of the fault, optimization and energy-saving agents an
``assure`` task: the intent, the expectations the agent serves (its ``duty``), the area and the
targets it works to, until when. The agent keeps it as a `Mandate` and finishes the task at once
(the mandate lasts, the task is its acceptance); `Mandates` is that record, shared by the roles.
The energy-saving agent also takes ``relax`` and ``restore`` (its targets loosened for a while to keep
a higher-priority expectation, then put back); the other roles refuse them.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from an_agent.agents.base import short, stamp
from an_agent.agents.intent import Target, parse_targets
from an_agent.agents.sdk import LabBehaviour, NotFeasible, TaskRun
from an_agent.clock import from_rfc3339
from an_agent.errors import SchemaError
from an_agent.model import Task
from an_agent.schemas.validate import ValidatedPayload

INTENT_TASK = "intent_task_v1"


@dataclass(frozen=True)
class Mandate:
    intent_id: str
    duty: str
    expectation_ids: tuple[str, ...]
    area: str
    targets: tuple[Target, ...]
    until: float | None
    requester: str | None


def read_mandate(payload: ValidatedPayload, requester: str | None) -> Mandate:
    """The mandate an ``intent_task_v1`` payload describes; `SchemaError` when its targets are malformed."""
    values = payload.values
    problems: list[str] = []
    targets = parse_targets(values["targets"], "targets", problems)
    until = values.get("until")
    if problems:
        raise SchemaError("the intent task's targets are not valid", problems)
    return Mandate(
        intent_id=str(values["intent_id"]),
        duty=str(values["duty"]),
        expectation_ids=tuple(values["expectation_ids"]),
        area=str(values["area"]),
        targets=targets,
        until=from_rfc3339(until) if isinstance(until, str) else None,
        requester=requester,
    )


class Mandates:
    """The intent shares an agent holds (module docstring); thread-safe."""

    def __init__(self, agent: LabBehaviour, duty: str) -> None:
        self._agent = agent
        self._duty = duty
        self._held: dict[str, Mandate] = {}
        self._lock = threading.Lock()

    def feasibility(self, payload: ValidatedPayload, requester: str | None) -> Mandate:
        """The mandate ``payload`` asks this agent to ``assure``, or `NotFeasible` saying why not."""
        env = self._agent.env
        try:
            mandate = read_mandate(payload, requester)
        except SchemaError as exc:
            raise NotFeasible(f"{exc}: {'; '.join(exc.problems)}") from None
        if mandate.duty != self._duty:
            raise NotFeasible(f"{env.name} serves {self._duty} in an intent, not {mandate.duty}")
        if mandate.area not in env.network.regions() or not env.in_scope(mandate.area):
            raise NotFeasible(f"{mandate.area} is not an area {env.name} manages")
        if payload.values["action"] != "assure":
            raise NotFeasible(f"{env.name} takes 'assure' intent tasks, not {payload.values['action']!r}")
        return mandate

    def accept(self, task: Task, mandate: Mandate, run: TaskRun) -> None:
        """Hold ``mandate`` and finish ``task`` with what was accepted."""
        with self._lock:
            self._held[mandate.intent_id] = mandate
        self.record(task, mandate, run, "intent_mandate", "takes on")

    def record(self, task: Task, mandate: Mandate, run: TaskRun, kind: str, verb: str) -> None:
        """Note and finish an intent task (``verb``: what the agent did with the mandate)."""
        targets = ", ".join(t.describe() for t in mandate.targets)
        text = (
            f"{verb} {mandate.duty.replace('_', ' ')} for intent {mandate.intent_id} "
            f"({short(list(mandate.expectation_ids))}: {targets})"
        )
        self._agent.note(kind, text, intent_id=mandate.intent_id, expectation_ids=list(mandate.expectation_ids))
        self._agent.finish(
            run,
            text,
            {
                "intent_id": mandate.intent_id,
                "duty": mandate.duty,
                "expectation_ids": list(mandate.expectation_ids),
                "targets": [t.to_dict() for t in mandate.targets],
                "until": stamp(mandate.until) if mandate.until is not None else None,
            },
        )

    def replace(self, mandate: Mandate) -> Mandate | None:
        """Hold ``mandate`` in place of the one of the same intent; the one it replaced."""
        with self._lock:
            before = self._held.get(mandate.intent_id)
            self._held[mandate.intent_id] = mandate
        return before

    def get(self, intent_id: str) -> Mandate | None:
        with self._lock:
            return self._held.get(intent_id)

    def in_force(self, area: str, now: float) -> list[Mandate]:
        """The mandates for ``area`` in force at ``now``."""
        with self._lock:
            held = sorted(self._held.values(), key=lambda m: m.intent_id)
        return [m for m in held if m.area == area and (m.until is None or now < m.until)]

    def describe(self, area: str, now: float) -> str:
        """`` for intent INT-..., (EXP-..., EXP-...)`` naming the mandates in force for ``area`` ('' if none)."""
        held = self.in_force(area, now)
        if not held:
            return ""
        return " for " + "; ".join(f"intent {m.intent_id} ({', '.join(m.expectation_ids)})" for m in held)

    def target(self, name: str, now: float) -> tuple[Mandate, Target] | None:
        """The mandate in force at ``now`` with a target on KPI ``name``, and that target."""
        with self._lock:
            held = sorted(self._held.values(), key=lambda m: m.intent_id)
        for mandate in held:
            if mandate.until is not None and now >= mandate.until:
                continue
            for target in mandate.targets:
                if target.name == name:
                    return mandate, target
        return None
