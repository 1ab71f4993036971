"""Input requests through the operation layer: the typed `provide_input`, timeouts, restarts (no sockets)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from runtimesupport import ALICE, GOOD, PROMPT, OpsFactory, Recorder, param, wait_status

from an_agent.errors import RpcError
from an_agent.model import DataParam, DataType, Task, TaskResult, TaskStatus, build_prompt
from an_agent.runtime.behaviour import ProvidedInput, TaskRun
from an_agent.runtime.requests import AssignTask, ProvideInput
from an_agent.store.agent_store import AgentStore

NEEDED = build_prompt("CELL-0401 neighbours", "send the neighbour list as a data-param")


class Asking(Recorder):
    """Asks once for input; finishes with what it got, or fails when nothing came."""

    def __init__(self, timeout: float | None = 10) -> None:
        super().__init__()
        self.timeout = timeout
        self.provided: list[ProvidedInput] = []

    def execute(self, task: Task, run: TaskRun) -> None:
        got = run.request_input([NEEDED], "the neighbour list is missing", timeout=self.timeout)
        if got is None:
            if not run.cancelled:
                run.fail("no neighbour list came")
            return
        self.provided.append(got)
        run.finish(TaskResult(summary=f"got {', '.join(p.id for p in got.data_params)}"))


def test_provide_input_resumes_the_task_through_admission(make_ops: OpsFactory) -> None:
    behaviour = Asking()
    ops = make_ops(behaviour, schemas=True)
    ops.assign_task(ALICE, AssignTask(Task("t1", send_from="noc-1", content=PROMPT)))
    waiting = wait_status(ops, "t1", TaskStatus.INPUT_REQUIRED)
    assert [i.required for i in waiting.input_required] == [NEEDED]
    assert waiting.input_required[0].start_time == ops.clock.now()
    done = ops.provide_input(ALICE, ProvideInput("t1", (param("t1-n", GOOD),)))
    assert done.status in (TaskStatus.PROCESSING, TaskStatus.FINISHED)
    finished = wait_status(ops, "t1", TaskStatus.FINISHED)
    assert finished.msg_data == ["t1-n"] and finished.input_required == []
    (got,) = behaviour.provided
    assert got.provided_by == "alice" and [p.id for p in got.data_params] == ["t1-n"]
    assert got.payloads["t1-n"].values["action"] == "suspend"  # validated once, by admission


def test_provide_input_refuses_a_task_that_asks_for_none_and_an_empty_answer(make_ops: OpsFactory) -> None:
    behaviour = Asking()
    ops = make_ops(behaviour)
    ops.assign_task(ALICE, AssignTask(Task("busy", content=PROMPT)))
    wait_status(ops, "busy", TaskStatus.INPUT_REQUIRED)
    with pytest.raises(RpcError) as caught:
        ops.provide_input(ALICE, ProvideInput("busy"))
    assert caught.value.error_tag == "missing-element"
    behaviour.timeout = 0.1
    ops.assign_task(ALICE, AssignTask(Task("late", content=PROMPT)))
    failed = wait_status(ops, "late", TaskStatus.FAILED)
    assert failed.result is not None and failed.result.reason == "no neighbour list came"
    with pytest.raises(RpcError) as caught:
        ops.provide_input(ALICE, ProvideInput("late", (DataParam("x", DataType.TEXT, data="n1"),)))
    assert caught.value.error_tag == "operation-failed" and caught.value.app_tag == "task-ended"  # it ended
    assert caught.value.path == "/irtf-agent:tasks/task[task-id='late']"
    with pytest.raises(RpcError) as caught:
        ops.provide_input(ALICE, ProvideInput("ghost", (DataParam("x", DataType.TEXT, data="n1"),)))
    assert caught.value.error_tag == "data-missing"


def test_an_invalid_input_is_refused_and_the_task_keeps_waiting(make_ops: OpsFactory) -> None:
    ops = make_ops(Asking(), schemas=True)
    ops.assign_task(ALICE, AssignTask(Task("t1", send_from="noc-1", content=PROMPT)))
    wait_status(ops, "t1", TaskStatus.INPUT_REQUIRED)
    with pytest.raises(RpcError) as caught:
        ops.provide_input(ALICE, ProvideInput("t1", (param("t1-bad", {"cell_ids": "x", "action": "explode"}),)))
    assert caught.value.app_tag == "invalid-structured-payload"
    still = ops.get_task(ALICE, "t1")
    assert still.status == TaskStatus.INPUT_REQUIRED and still.msg_data == []


def test_the_input_request_is_stored_with_the_state(make_ops: OpsFactory, tmp_path: Path) -> None:
    ops = make_ops(Asking())
    ops.assign_task(ALICE, AssignTask(Task("t1", content=PROMPT)))
    wait_status(ops, "t1", TaskStatus.INPUT_REQUIRED)
    reopened = AgentStore(tmp_path / "state")  # a second connection sees what was committed
    try:
        (state,) = reopened.load_task_states().values()
    finally:
        reopened.close()
    assert state.status == "input-required"
    assert json.loads(state.input_required or "[]") == [
        {"required": NEEDED, "task_async": True, "status": "input-required", "start_time": ops.clock.now()}
    ]


def test_a_task_state_table_without_the_new_column_is_upgraded(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "agent.db")
    db.execute(
        "CREATE TABLE task_state (task_id TEXT PRIMARY KEY, status TEXT NOT NULL, reason TEXT, summary TEXT, "
        "result_format TEXT, result_data TEXT, updated REAL NOT NULL)"
    )
    db.execute("INSERT INTO task_state VALUES ('old', 'finished', NULL, 'done', NULL, NULL, 1.0)")
    db.commit()
    db.close()
    store = AgentStore(tmp_path)
    try:
        assert store.load_task_states()["old"].input_required is None
    finally:
        store.close()


def test_request_input_checks_what_it_asks_for(make_ops: OpsFactory) -> None:
    errors: list[str] = []

    class Sloppy(Recorder):
        def execute(self, task: Task, run: TaskRun) -> None:
            for required, reason in (([], "x"), (["just text"], "x"), ([NEEDED], " ")):
                try:
                    run.request_input(required, reason)
                except ValueError as exc:
                    errors.append(str(exc))
            run.finish(TaskResult())

    ops = make_ops(Sloppy())
    ops.assign_task(ALICE, AssignTask(Task("t1", content=PROMPT)))
    wait_status(ops, "t1", TaskStatus.FINISHED)
    assert len(errors) == 3 and "target object" in errors[1] and "say why" in errors[2]
