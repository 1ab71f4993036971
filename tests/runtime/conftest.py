"""The operation layer without sockets: real SQLite store, real libyang, a recording behaviour."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from an_agent.clock import ManualClock, from_rfc3339
from an_agent.model import AgentProfile, NegotiationRequest, NegotiationResult, NegotiationType, Task, TaskResult
from an_agent.runtime.access import Authorizer
from an_agent.runtime.behaviour import Behaviour, TaskRun
from an_agent.runtime.operations import Operations
from an_agent.runtime.schemas import SchemaService
from an_agent.schemas.validate import ValidatedPayload
from an_agent.store.agent_store import AgentStore
from an_agent.yang.context import YangContext
from fake_embedder import FakeEmbedder


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


@pytest.fixture(scope="session")
def yang() -> YangContext:
    return YangContext.default()


OpsFactory = Callable[..., Operations]


@pytest.fixture
def make_ops(tmp_path: Path, profile: AgentProfile, yang: YangContext) -> Iterator[OpsFactory]:
    """Build `Operations` over ``tmp_path/state`` (optionally with schemas and an authorizer); closes them all."""
    opened: list[tuple[Operations, AgentStore]] = []

    def make(
        behaviour: Behaviour | None = None, schemas: bool = False, authorizer: Authorizer | None = None
    ) -> Operations:
        clock = ManualClock(from_rfc3339("2026-10-05T00:00:00Z"))
        store = AgentStore(tmp_path / "state")
        ops = Operations(profile, behaviour or Recorder(), store, clock, yang, task_workers=2, authorizer=authorizer)
        if schemas:
            ops.attach_schemas(
                SchemaService.open(
                    tmp_path / "state", clock, ops.publish_notification, embedder=FakeEmbedder(), learn=False
                )
            )
        ops.start()
        opened.append((ops, store))
        return ops

    yield make
    for ops, store in opened:
        ops.close()
        store.close()
