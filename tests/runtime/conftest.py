"""The operation layer without sockets: real SQLite store, real libyang, a recording behaviour."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from runtimesupport import OpsFactory, Recorder

from an_agent.clock import ManualClock, from_rfc3339
from an_agent.model import AgentProfile
from an_agent.runtime.access import Authorizer
from an_agent.runtime.behaviour import Behaviour
from an_agent.runtime.operations import Operations
from an_agent.runtime.schemas import SchemaService
from an_agent.store.agent_store import AgentStore
from an_agent.yang.context import YangContext
from fake_embedder import FakeEmbedder


@pytest.fixture(scope="session")
def yang() -> YangContext:
    return YangContext.default()


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
