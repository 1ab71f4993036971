"""A task whose end comes while the agent's state directory is full ends once space returns: its status
change waits to be stored, then is announced (found by lab soak: the refused write ended the task's
thread, the task stayed ``processing`` for ever and its assigner waited for ever)."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.agents.default import DefaultBehaviour
from an_agent.lab.chaos import fill, free
from an_agent.lab.soak.resources import sqlite_integrity
from an_agent.model import AgentProfile, Task, TaskStatus, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig


@pytest.fixture
def agent_on_small_disk(small_disk: Path, profile: AgentProfile) -> Iterator[tuple[AgentServer, Path]]:
    behaviour = DefaultBehaviour(work_seconds=1.0)
    server = AgentServer(ServerConfig(state_dir=small_disk, port=0, profile=profile, behaviour=behaviour))
    server.start()
    try:
        yield server, small_disk
    finally:
        server.stop()


def test_a_task_ending_on_a_full_disk_ends_once_space_returns(agent_on_small_disk: tuple[AgentServer, Path]) -> None:
    server, state = agent_on_small_disk
    task = Task("t-full", send_from="admin", content=build_prompt("SITE-07", "diagnose the outage"), task_async=True)
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client:
        client.assign_task(task)
        with contextlib.closing(sqlite3.connect(state / "agent.db")) as db:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the next write has to grow the write-ahead log
        full = threading.Event()
        topping = threading.Thread(target=lambda: [fill(state) for _ in iter(lambda: full.wait(0.05), True)])
        fill(state)  # the task is processing: its end (in 1 s) cannot be stored
        topping.start()  # what the agent's databases give back is taken again at once
        try:
            assert client.get_task("t-full").status == TaskStatus.PROCESSING
            time.sleep(3.0)
            assert client.get_task("t-full").status == TaskStatus.PROCESSING
        finally:
            full.set()
            topping.join()
        free(state)
        deadline = time.monotonic() + 15
        while client.get_task("t-full").status == TaskStatus.PROCESSING and time.monotonic() < deadline:
            time.sleep(0.2)
        assert client.get_task("t-full").status == TaskStatus.FINISHED
    assert sqlite_integrity(state)["agent.db"] == "ok"
