"""What an admission takes is given back on every way a task ends (`Behaviour.released`), and a task that
waits for its assigner holds no worker: no caller can use up an agent by asking and walking away."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from lxml import etree
from runtimesupport import ALICE, PROMPT, OpsFactory, wait_status
from test_runtime_operations import IRTF, edit_xml

from an_agent.errors import RpcError
from an_agent.model import CommuType, Task, TaskResult, TaskStatus, build_prompt
from an_agent.runtime.behaviour import Behaviour, TaskRun
from an_agent.runtime.requests import AssignTask, CancelTask, EditConfig
from an_agent.runtime.workers import TaskWorkers

NETCONF = "urn:ietf:params:xml:ns:netconf:base:1.0"

ASK_MARK = " (waits for input)"
NEEDED = build_prompt("CELL-0401 neighbours", "send the neighbour list as a data-param")


class Slots(Behaviour):
    """Takes a slot per accepted task (at most ``capacity``), as the lab roles do; asks for input when the
    task's content says so; counts every `released` call."""

    def __init__(self, capacity: int = 2, input_timeout: float | None = 10) -> None:
        self.capacity = capacity
        self.input_timeout = input_timeout
        self.held: set[str] = set()
        self.released_calls: Counter[str] = Counter()
        self.refuse: set[str] = set()
        self._lock = threading.Lock()

    def check_assignment(self, task: Task) -> None:
        with self._lock:
            if task.task_id in self.refuse:
                raise RpcError.invalid_value(f"{task.task_id} refused by the test")
            if len(self.held) >= self.capacity:
                raise RpcError("application", "resource-denied", f"{len(self.held)} tasks in progress (its limit)")
            self.held.add(task.task_id)

    def released(self, task: Task) -> None:
        with self._lock:
            self.held.discard(task.task_id)
            self.released_calls[task.task_id] += 1

    def execute(self, task: Task, run: TaskRun) -> None:
        if ASK_MARK in (task.content or ""):
            got = run.request_input([NEEDED], "the neighbour list is missing", timeout=self.input_timeout)
            if got is None:
                if not run.cancelled:
                    run.fail("no neighbour list came")
                return
        run.finish(TaskResult(summary="done"))

    def negotiate(self, request, task):  # type: ignore[no-untyped-def]
        raise NotImplementedError


ASK = PROMPT + ASK_MARK


def _until(condition, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 10
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never: {what}")
        time.sleep(0.01)


def test_cancel_while_waiting_for_input_gives_the_slot_back(make_ops: OpsFactory) -> None:
    behaviour = Slots(capacity=2)
    ops = make_ops(behaviour)
    for i in range(2):
        ops.assign_task(ALICE, AssignTask(Task(f"w{i}", content=ASK)))
        wait_status(ops, f"w{i}", TaskStatus.INPUT_REQUIRED)
    with pytest.raises(RpcError) as caught:
        ops.assign_task(ALICE, AssignTask(Task("over", content=PROMPT)))
    assert caught.value.error_tag == "resource-denied"
    for i in range(2):
        ops.cancel_task(ALICE, CancelTask(f"w{i}"))
    _until(lambda: not behaviour.held, "both slots given back")
    ops.assign_task(ALICE, AssignTask(Task("after", content=PROMPT)))
    wait_status(ops, "after", TaskStatus.FINISHED)
    _until(lambda: behaviour.released_calls["after"] == 1, "the finished task released")
    assert behaviour.released_calls == Counter({"w0": 1, "w1": 1, "after": 1})  # once each, never twice


def test_an_input_that_never_comes_gives_the_slot_back(make_ops: OpsFactory) -> None:
    behaviour = Slots(capacity=1, input_timeout=0.2)
    ops = make_ops(behaviour)
    ops.assign_task(ALICE, AssignTask(Task("walked-away", content=ASK)))
    wait_status(ops, "walked-away", TaskStatus.FAILED)
    _until(lambda: not behaviour.held, "the slot given back after the timeout")
    ops.assign_task(ALICE, AssignTask(Task("next", content=PROMPT)))
    wait_status(ops, "next", TaskStatus.FINISHED)


def test_deleting_a_waiting_task_and_assigning_one_already_cancelled_release_it(make_ops: OpsFactory) -> None:
    behaviour = Slots(capacity=1)
    ops = make_ops(behaviour)
    ops.assign_task(ALICE, AssignTask(Task("gone", content=ASK)))
    wait_status(ops, "gone", TaskStatus.INPUT_REQUIRED)
    delete = etree.Element("config")
    entry = etree.SubElement(etree.SubElement(delete, f"{{{IRTF}}}tasks"), f"{{{IRTF}}}task")
    entry.set(f"{{{NETCONF}}}operation", "delete")
    etree.SubElement(entry, f"{{{IRTF}}}task-id").text = "gone"
    ops.edit_config(ALICE, 1, EditConfig(delete))
    _until(lambda: behaviour.released_calls["gone"] == 1, "the deleted task released")
    ops.assign_task(ALICE, AssignTask(Task("born-cancelled", content=PROMPT, commu_type=CommuType.TASK_CANCEL)))
    assert ops.get_task(ALICE, "born-cancelled").status == TaskStatus.CANCELED
    assert not behaviour.held
    ops.assign_task(ALICE, AssignTask(Task("next", content=PROMPT)))
    wait_status(ops, "next", TaskStatus.FINISHED)


def test_an_edit_refused_after_one_task_was_accepted_gives_that_task_back(make_ops: OpsFactory) -> None:
    behaviour = Slots(capacity=1)
    behaviour.refuse.add("e2")
    ops = make_ops(behaviour)
    both = edit_xml("e1")
    tasks = both.find(f"{{{IRTF}}}tasks")
    assert tasks is not None
    second = edit_xml("e2").find(f"{{{IRTF}}}tasks")
    assert second is not None
    tasks.extend(list(second))
    with pytest.raises(RpcError):
        ops.edit_config(ALICE, 1, EditConfig(both))
    assert not behaviour.held and behaviour.released_calls == Counter({"e1": 1})
    ops.assign_task(ALICE, AssignTask(Task("next", content=PROMPT)))  # its only slot is free
    wait_status(ops, "next", TaskStatus.FINISHED)


def test_tasks_waiting_for_input_hold_no_worker(make_ops: OpsFactory) -> None:
    behaviour = Slots(capacity=10)
    ops = make_ops(behaviour)  # two workers
    for i in range(4):
        ops.assign_task(ALICE, AssignTask(Task(f"w{i}", content=ASK)))
    for i in range(4):  # all four ask at once: a waiting task is no work
        wait_status(ops, f"w{i}", TaskStatus.INPUT_REQUIRED)
    ops.assign_task(ALICE, AssignTask(Task("runs", content=PROMPT)))
    wait_status(ops, "runs", TaskStatus.FINISHED)


def test_workers_bound_the_tasks_at_work_and_drop_the_queued_on_close() -> None:
    workers = TaskWorkers(1)
    gate, started, dropped = threading.Event(), [], []

    def work(name: str) -> None:
        started.append(name)
        gate.wait(10)

    workers.submit(lambda: work("a"), lambda: dropped.append("a"))
    workers.submit(lambda: work("b"), lambda: dropped.append("b"))
    _until(lambda: started == ["a"], "the first started")
    assert workers.at_work == 1 and workers.queued == 1  # the second waits for the place
    gate.set()
    _until(lambda: started == ["a", "b"], "the second started once the first ended")
    gate.clear()
    workers.submit(lambda: work("c"), lambda: dropped.append("c"))
    workers.submit(lambda: work("d"), lambda: dropped.append("d"))
    _until(lambda: "c" in started, "c started")
    closing = threading.Thread(target=workers.close)
    closing.start()
    gate.set()
    closing.join(10)
    assert dropped == ["d"] and "d" not in started


def test_validating_a_candidate_takes_nothing_a_commit_keeps(make_ops: OpsFactory) -> None:
    from test_runtime_commits import stage

    from an_agent.runtime.requests import Commit

    behaviour = Slots(capacity=1)
    ops = make_ops(behaviour)
    ops.open_session(1, ALICE, lambda: None)
    stage(ops, 1, "c1")
    for _ in range(3):  # a test-only check asks the behaviour, and gives back at once what it took
        ops.config.validate(ALICE, 1, "candidate")
    assert not behaviour.held and behaviour.released_calls == Counter({"c1": 3})
    ops.config.commit(ALICE, 1, Commit())
    wait_status(ops, "c1", TaskStatus.FINISHED)
