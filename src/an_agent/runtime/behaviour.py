"""The contract between the agent runtime and an agent's behaviour.

A behaviour decides what an agent *does*; the operation layer does the rest:
storing tasks, moving statuses, notifying subscribers, answering requests. Real
behaviours (RAN fault, energy saving, ...) live in ``an_agent.agents``.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from an_agent.clock import Clock
from an_agent.model import (
    AgentProfile,
    DataParam,
    NegotiationRequest,
    NegotiationResult,
    Task,
    TaskResult,
    TaskStatus,
)
from an_agent.schemas.validate import ValidatedPayload


def _no_data_params(ids: Sequence[str]) -> list[DataParam]:
    return []


def _no_payload(task_id: str) -> ValidatedPayload | None:
    return None


@dataclass(frozen=True)
class AgentInfo:
    """What a behaviour may know of the agent it runs in.

    ``data_params`` returns the agent's ``data-params`` entries with the given
    ids (those that exist, in the order asked), e.g. a task's ``msg_data``, so
    a behaviour can read the structured payload its task carries. During
    `Behaviour.check_assignment` it already sees the entries sent in the same
    ``<edit-config>`` as the task.

    ``payload`` returns the structured payload of a task as the operation
    layer validated it, once, on assignment against the template in force for
    its client (None when the task carries none, when structured payloads are
    off, or after a restart): a behaviour need not validate it again.
    """

    profile: AgentProfile
    clock: Clock
    data_params: Callable[[Sequence[str]], list[DataParam]] = _no_data_params
    payload: Callable[[str], ValidatedPayload | None] = _no_payload


class TaskRun:
    """A behaviour's handle on one task while `Behaviour.execute` runs.

    Every method records the change durably and notifies subscribers before it
    returns. Calls after the task reached an end state (e.g. it was cancelled
    meanwhile) are ignored and return False, so a behaviour need not race the
    canceller: it checks `cancelled` at convenient points and returns.
    """

    def __init__(
        self,
        task: Task,
        transition: Callable[[str, TaskStatus, str | None, TaskResult | None], bool],
        cancelled: threading.Event,
    ) -> None:
        self.task = task
        self._transition = transition
        self._cancelled = cancelled

    @property
    def cancelled(self) -> bool:
        """True once the assigner cancelled the task (taskCancel)."""
        return self._cancelled.is_set()

    def wait_cancelled(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds of real time, waking early on cancellation; returns `cancelled`."""
        return self._cancelled.wait(timeout)

    def set_status(self, status: TaskStatus, reason: str | None = None) -> bool:
        """Move to a non-final status (processing, blocked, suspended, input-required)."""
        if status.terminal:
            raise ValueError("use finish() or fail() for end states")
        return self._transition(self.task.task_id, status, reason, None)

    def finish(self, result: TaskResult) -> bool:
        """End the task as finished with ``result``."""
        return self._transition(self.task.task_id, TaskStatus.FINISHED, result.reason, result)

    def fail(self, reason: str, result: TaskResult | None = None) -> bool:
        """End the task as failed; ``reason`` says why in words an operator can act on."""
        final = result or TaskResult()
        final.reason = reason
        return self._transition(self.task.task_id, TaskStatus.FAILED, reason, final)


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

    @abstractmethod
    def execute(self, task: Task, run: TaskRun) -> None:
        """Carry out ``task``; report progress and the end state through ``run``."""

    @abstractmethod
    def negotiate(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        """Answer a ``task-negotiate``: FEASIBILITY before assignment, FULFILLMENT of a result.

        ``task`` is the stored task with ``request.task_id`` when there is one
        (with its status and result), else None.
        """
