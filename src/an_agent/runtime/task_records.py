"""What a task's status change is stored and announced as, and how a stored task state reads back.

`transition_record` turns a status change the `an_agent.runtime.tasks.TaskEngine` accepted into the task's
new stored state (one `TaskState` row) and the XML of its ``condition-notifications`` event, which the
engine stores in one transaction: the event carries what the model defines for it (the previous status,
the reason, the ``input-required`` list with its ``start-time`` when input is asked for, the ``result``
as ``data`` when the task ends). Pure: no lock, no I/O, the time given.

`result_of`, `inputs_of`, `settled` and `state_elements` read a stored state back; the ``input-required``
column is JSON, a list of `InputRequired` fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict

from lxml import etree

from an_agent.model import AnyXml, CommuType, ConditionNotification, InputRequired, Task, TaskResult, TaskStatus
from an_agent.store.agent_store import TaskState

STATE_NODES = ("task-status", "input-required", "result")
"""The state (config false) nodes of a task entry."""


def transition_record(
    task: Task,
    previous: TaskState | None,
    status: TaskStatus,
    reason: str | None,
    result: TaskResult | None,
    inputs: Sequence[InputRequired],
    now: float,
    sender: str,
    finishing: Callable[[TaskResult], TaskResult] | None = None,
) -> tuple[TaskState, str]:
    """The stored state and the event XML of ``task`` moving from ``previous`` to ``status`` at ``now``.

    ``inputs`` (status input-required only) get their ``start-time`` (now) and ``task-async`` (the task's)
    filled in when unset. Without a ``result`` the previous one is kept, with ``reason`` as its reason when
    given; ``finishing`` has a last look at the result of a ``finished`` task. ``sender`` is this agent.
    """
    required = [
        InputRequired(
            item.required,
            item.task_async if item.task_async is not None else bool(task.task_async),
            item.status or status.value,
            item.start_time if item.start_time is not None else now,
        )
        for item in (inputs if status == TaskStatus.INPUT_REQUIRED else ())
    ]
    kept = result_of(previous) if previous is not None else None
    final = result or kept or TaskResult()
    if status == TaskStatus.FINISHED and finishing is not None:
        final = finishing(final)
    if reason is not None and result is None:
        final.reason = reason
    final.updated_time = now
    state = TaskState(
        task_id=task.task_id,
        status=status.value,
        reason=final.reason,
        summary=final.summary,
        result_format=final.format,
        result_data=final.data,
        updated=now,
        input_required=json.dumps([asdict(item) for item in required]) if required else None,
    )
    notification = ConditionNotification(
        task_id=task.task_id,
        status=status,
        previous_status=TaskStatus(previous.status) if previous is not None else None,
        send_from=sender,
        send_to=task.send_from,
        commu_type=CommuType.TASK_RESULT_NOTIFY,
        reason=reason,
        input_required=required,
        data=AnyXml.from_elements(final.to_xml()) if status.terminal else None,
    )
    return state, etree.tostring(notification.to_xml(), encoding="unicode")


def state_elements(task_id: str, state: TaskState) -> list[etree._Element]:
    """``task-status``, ``input-required`` and ``result`` elements to overlay on a task entry."""
    overlay = Task(
        task_id, status=TaskStatus(state.status), result=result_of(state), input_required=inputs_of(state)
    ).to_xml(include_state=True)
    return [child for child in overlay if etree.QName(child).localname in STATE_NODES]


def settled(state: TaskState | None) -> bool:
    """Ended, or waiting for its assigner: a synchronous reply need not wait longer."""
    if state is None:
        return False
    status = TaskStatus(state.status)
    return status.terminal or status == TaskStatus.INPUT_REQUIRED


def inputs_of(state: TaskState) -> list[InputRequired]:
    """What the task waits for, while its status is ``input-required`` (else nothing)."""
    if not state.input_required or state.status != TaskStatus.INPUT_REQUIRED.value:
        return []
    return [InputRequired(**item) for item in json.loads(state.input_required)]


def result_of(state: TaskState) -> TaskResult:
    """The task's result as stored (summary, reason, data, time of the last change)."""
    return TaskResult(
        summary=state.summary,
        reason=state.reason,
        format=state.result_format,
        data=state.result_data,
        updated_time=state.updated,
    )
