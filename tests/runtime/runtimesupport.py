"""Helpers of the operation-layer tests: a recording behaviour and the factory fixture's type."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from an_agent.model import (
    DataParam,
    DataType,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    TaskResult,
    TaskStatus,
)
from an_agent.runtime.behaviour import Behaviour, TaskRun
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.schemas.validate import ValidatedPayload

OpsFactory = Callable[..., Operations]

ALICE = Principal.authenticated("alice")
PROMPT = "## target object\nCELL-0401\n## task description\nadjust energy saving"
GOOD = {"cell_ids": ["CELL-0401"], "action": "suspend", "other": "works at night"}


def envelope(payload: dict[str, object]) -> str:
    return json.dumps({"schema_id": "energy_saving_adjust_v1", "payload": payload})


def param(pid: str, payload: dict[str, object]) -> DataParam:
    return DataParam(
        pid, DataType.TEXT, format="application/json;schema=energy_saving_adjust_v1", data=envelope(payload)
    )


def wait_status(ops: Operations, task_id: str, status: TaskStatus) -> Task:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        task = ops.get_task(ALICE, task_id)
        if task.status == status:
            return task
        time.sleep(0.01)
    raise AssertionError(f"{task_id} never reached {status}")


class Recorder(Behaviour):
    """Finishes every task at once and records what the operation layer handed it.

    ``gate``, when set, makes `check_assignment` wait on it (an edit held in flight).
    """

    def __init__(self) -> None:
        self.checked: list[Task] = []
        self.executed: list[Task] = []
        self.payloads_seen: list[ValidatedPayload | None] = []
        self.negotiated: list[Task | None] = []
        self.gate: threading.Event | None = None
        self.entered = threading.Event()

    def check_assignment(self, task: Task) -> None:
        self.checked.append(task)
        self.payloads_seen.append(self.agent.payload(task.task_id))
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(10)

    def execute(self, task: Task, run: TaskRun) -> None:
        self.executed.append(task)
        run.finish(TaskResult(summary=f"done {task.task_id}"))

    def negotiate(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        self.negotiated.append(task)
        return NegotiationResult(type=NegotiationType.FEASIBILITY, feasible=True, reason="ok")
