"""The contract between the agent runtime and an agent's behaviour.

A behaviour decides what an agent *does*; the operation layer does the rest:
storing tasks, moving statuses, notifying subscribers, answering requests. Real
behaviours (RAN fault, energy saving, ...) live in ``an_agent.agents``.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from an_agent.clock import Clock
from an_agent.model import (
    AgentProfile,
    DataParam,
    InputRequired,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    TaskResult,
    TaskStatus,
    parse_prompt,
)
from an_agent.schemas.validate import ValidatedPayload, validate_payload


def _no_data_params(ids: Sequence[str]) -> list[DataParam]:
    return []


def _no_payload(task_id: str) -> ValidatedPayload | None:
    return None


def _nothing_to_learn() -> None:
    return None


def _any_result(task_id: str, data: dict[str, Any]) -> None:
    return None


def _shipped_only(client_id: str, envelope: dict[str, Any]) -> ValidatedPayload:
    from an_agent.schemas.registry import TemplateRegistry  # the shipped templates, when the agent serves none

    return validate_payload(TemplateRegistry.default().get(str(envelope.get("schema_id"))), envelope)


@dataclass(frozen=True)
class AgentInfo:
    """What a behaviour may know of the agent it runs in.

    ``data_params`` returns the agent's ``data-params`` entries with the given
    ids (those that exist, in the order asked), e.g. a task's ``msg_data``, so
    a behaviour can read the structured payload its task carries. During
    `Behaviour.check_assignment` it already sees the entries sent in the same
    ``<edit-config>`` as the task. Large data comes whole: the pieces of a
    chunked data ``D`` (``D#1``, ``D#2``, ...) as one entry ``D``, ``url``
    data fetched (`an_agent.runtime.large_data`; `RpcError` if it cannot be).

    ``payload`` returns the structured payload of a task as the operation
    layer validated it, once, on assignment against the template in force for
    its client (None when the task carries none, when structured payloads are
    off, after a restart, or once the task ended): a behaviour need not
    validate it again.

    ``learned`` blocks until schema evolution has learned from every payload
    accepted so far (patches it triggers are published by then); it returns at
    once when the agent does not learn. A lab behaviour on simulated time calls
    it so that learning, which runs on real time, cannot fall behind the clock.

    ``check_result`` raises `an_agent.errors.SchemaError` (listing each problem) when a JSON result for
    the task is not what the skill that took its payload declares in its output modes
    (``application/json;schema=<response schema>``, checked against the agent's template of it); it
    returns when there is nothing to check.

    ``validate(client_id, envelope)`` validates a structured payload ``{"schema_id", "payload"}`` against
    the template the agent serves that client (its own templates included, e.g. ``--templates`` or a
    gateway's), raising `an_agent.errors.SchemaError` listing each problem: what a behaviour uses for a
    payload that comes another way than an assignment (a FEASIBILITY proposal).
    """

    profile: AgentProfile
    clock: Clock
    data_params: Callable[[Sequence[str]], list[DataParam]] = _no_data_params
    payload: Callable[[str], ValidatedPayload | None] = _no_payload
    learned: Callable[[], None] = _nothing_to_learn
    check_result: Callable[[str, dict[str, Any]], None] = _any_result
    validate: Callable[[str, dict[str, Any]], ValidatedPayload] = _shipped_only


@dataclass(frozen=True)
class ProvidedInput:
    """The assigner's answer to `TaskRun.request_input`: its edit of the task, admitted like an assignment.

    ``task`` is the task entry as edited (new ``content``, ``msg-data``);
    ``data_params`` are the data-params the edit added to ``msg-data`` (in that
    order); ``payloads`` their structured payloads, validated once by the
    operation layer against the template in force for the client (by
    data-param id); ``provided_by`` the authenticated user who edited.
    """

    task: Task
    data_params: tuple[DataParam, ...] = ()
    payloads: dict[str, ValidatedPayload] = field(default_factory=dict)
    provided_by: str = ""


class RunControl(Protocol):
    """What a `TaskRun` needs from the task engine (implemented by `an_agent.runtime.tasks.TaskEngine`)."""

    def report(
        self,
        task_id: str,
        status: TaskStatus,
        reason: str | None,
        result: TaskResult | None,
        inputs: Sequence[InputRequired] = (),
    ) -> bool:
        """Record a status change durably with its notification; False once the task ended."""
        ...

    def expect_input(self, task_id: str) -> None:
        """Open the input slot of a task, before its status becomes ``input-required``."""
        ...

    def await_input(self, task_id: str, timeout: float | None, cancelled: threading.Event) -> ProvidedInput | None:
        """Wait for the input the slot receives; None on cancellation or timeout."""
        ...


class TaskRun:
    """A behaviour's handle on one task while `Behaviour.execute` runs.

    Every status method records the change durably and notifies subscribers
    (``condition-notifications``) before it returns. Calls after the task
    reached an end state (e.g. it was cancelled meanwhile) are ignored and
    return False, so a behaviour need not race the canceller: it checks
    `cancelled` at convenient points and returns.

    Statuses a behaviour reports (draft section 5.4): `set_status` with
    ``processing``; `block` when it waits on another agent or a resource;
    `suspend` for a pause it chose (e.g. a maintenance window); `resume` to go
    back to ``processing``; `request_input` when it needs something from the
    assigner; `finish` / `fail` to end.
    """

    def __init__(self, task: Task, control: RunControl, cancelled: threading.Event, agent_name: str = "") -> None:
        self.task = task
        """The task as assigned; after `request_input` returned, the task as the assigner edited it."""
        self._control = control
        self._cancelled = cancelled
        self._agent_name = agent_name

    @property
    def cancelled(self) -> bool:
        """True once the assigner cancelled the task (taskCancel)."""
        return self._cancelled.is_set()

    def wait_cancelled(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds of real time, waking early on cancellation; returns `cancelled`."""
        return self._cancelled.wait(timeout)

    def set_status(self, status: TaskStatus, reason: str | None = None) -> bool:
        """Move to a non-final status other than input-required (processing, blocked, suspended)."""
        if status.terminal:
            raise ValueError("use finish() or fail() for end states")
        if status == TaskStatus.INPUT_REQUIRED:
            raise ValueError("use request_input() to ask for input: it says what is missing and waits for it")
        return self._control.report(self.task.task_id, status, reason, None)

    def block(self, reason: str) -> bool:
        """``blocked``: waiting on another agent or a resource; ``reason`` says on what (it reaches the assigner)."""
        return self._control.report(self.task.task_id, TaskStatus.BLOCKED, _said(reason), None)

    def suspend(self, reason: str) -> bool:
        """``suspended``: paused by the executor (e.g. until a maintenance window ends); ``reason`` says why."""
        return self._control.report(self.task.task_id, TaskStatus.SUSPENDED, _said(reason), None)

    def resume(self, reason: str | None = None) -> bool:
        """Back to ``processing`` after `block` or `suspend`."""
        return self._control.report(self.task.task_id, TaskStatus.PROCESSING, reason, None)

    def request_input(self, required: Sequence[str], reason: str, timeout: float | None = None) -> ProvidedInput | None:
        """``input-required``: ask the assigner for what is missing, and wait for its answer.

        ``required`` are prompts (`an_agent.model.build_prompt`), each with a
        ``## target object`` and a ``## task description`` section, e.g. target
        "alarm list of SITE-07", description "send the alarms of the last
        hour as a data-param"; the notification and the task's state carry
        them with the time they became required. The assigner answers by
        editing the task (new ``msg-data`` with their data-params, or a new
        ``content``); the edit goes through the same admission as an
        assignment, the status returns to ``processing`` and this call
        returns the input. Returns None when the task was cancelled, or when
        ``timeout`` seconds (real time; None: no limit) passed without an
        answer: the status stays ``input-required`` and the behaviour decides
        (usually `fail`, saying what never came).
        """
        if not required:
            raise ValueError("request_input needs at least one required item")
        for prompt in required:
            if not parse_prompt(prompt).complete:
                raise ValueError(
                    f"each required item needs a '## target object' and a '## task description' section: {prompt!r}"
                )
        task_id = self.task.task_id
        inputs = [InputRequired(prompt, task_async=True, status=TaskStatus.INPUT_REQUIRED.value) for prompt in required]
        self._control.expect_input(task_id)
        if not self._control.report(task_id, TaskStatus.INPUT_REQUIRED, _said(reason), None, inputs):
            return None
        provided = self._control.await_input(task_id, timeout, self._cancelled)
        if provided is not None:
            self.task = provided.task
        return provided

    def negotiate_fulfillment(
        self, proposal: str, via: Callable[[NegotiationRequest], NegotiationResult]
    ) -> NegotiationResult:
        """Open a FULFILLMENT negotiation towards the assigner (draft-wang 5.3 (2)) and return its answer.

        ``proposal`` is a prompt (target object, task description) saying what
        the executor can deliver, when it cannot fully meet the task's
        expected-response; ``via`` sends a ``task-negotiate`` to the assigner
        (``task-sendFrom`` of the task) and returns its output: e.g.
        `an_agent.nc.agent_client.AgentClient.negotiate` on a session to it,
        or the lab's ``Peer.negotiate``. The request names this task, this
        agent as sender and the assigner as receiver. The status is not
        changed: report ``blocked`` meanwhile if the wait can be long.
        """
        if not parse_prompt(proposal).complete:
            raise ValueError("the proposal needs a '## target object' and a '## task description' section")
        request = NegotiationRequest(
            task_id=self.task.task_id,
            type=NegotiationType.FULFILLMENT,
            content=[proposal],
            send_from=self._agent_name or None,
            send_to=self.task.send_from,
        )
        return via(request)

    def finish(self, result: TaskResult) -> bool:
        """End the task as finished with ``result`` (its data travels in the notification too)."""
        return self._control.report(self.task.task_id, TaskStatus.FINISHED, result.reason, result)

    def fail(self, reason: str, result: TaskResult | None = None) -> bool:
        """End the task as failed; ``reason`` says why in words an operator can act on."""
        final = result or TaskResult()
        final.reason = reason
        return self._control.report(self.task.task_id, TaskStatus.FAILED, reason, final)


def _said(reason: str) -> str:
    if not reason or not reason.strip():
        raise ValueError("say why: a blocked, suspended or input-required task needs a reason the assigner can act on")
    return reason


class Behaviour(ABC):
    """What an agent does with the tasks and negotiations it receives.

    Concurrency: `execute` runs on a worker thread, one call per task, several
    tasks at once; `check_assignment` and `negotiate` run on the requesting
    session's thread and must be quick. Implementations must be thread-safe.

    End states: `execute` must leave the task finished or failed (through
    `TaskRun.finish` / `TaskRun.fail`); if it returns without doing so the
    runtime marks the task failed, and if it raises, failed with the error.
    Cancellation is done by the runtime (status canceled, notification sent);
    the behaviour only sees `TaskRun.cancelled` become true and should stop.
    """

    def bind(self, agent: AgentInfo) -> None:
        """Called once before any other method with the agent this behaviour serves."""
        self.agent = agent

    def check_assignment(self, task: Task) -> None:  # noqa: B027 (optional hook: accepting is the default)
        """Refuse a new task by raising `an_agent.errors.RpcError` (nothing is stored then).

        The default accepts every task that passed YANG validation.
        """

    def released(self, task: Task) -> None:  # noqa: B027 (optional hook: nothing to release is the default)
        """``task`` is no longer this behaviour's concern: release what `check_assignment` took for it.

        Called exactly once for every task `check_assignment` accepted or `resumed` announced, after the
        task ended whichever way it ended: finished or failed by `execute`; canceled, also before
        `execute` started or while it waited for input; failed when an input never came; its entry
        deleted; its admission undone after `check_assignment` accepted it (another task of the same
        edit was refused); or the agent stopped before running it. A slot, a clock hold or a memo a
        behaviour keeps per accepted task is given back here, so that no way of ending a task, and no
        caller walking away from a question, can use up the agent's capacity.
        """

    def resumed(self, task: Task) -> None:  # noqa: B027 (optional hook: nothing to do is the default)
        """``task`` did not end before the agent stopped and runs again (`execute` follows, on a worker).

        Called synchronously while the agent starts, before it serves: a behaviour that accounts for
        pending work (a lab's simulated clock) counts the task here, so nobody sees the agent idle
        between its start and the resumed task's first step.
        """

    @abstractmethod
    def execute(self, task: Task, run: TaskRun) -> None:
        """Carry out ``task``; report progress and the end state through ``run``."""

    @abstractmethod
    def negotiate(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        """Answer a ``task-negotiate``: FEASIBILITY before assignment, FULFILLMENT of a result.

        ``task`` is the stored task with ``request.task_id`` when there is one
        (with its status and result), else None.
        """
