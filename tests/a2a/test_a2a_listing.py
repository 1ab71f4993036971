"""`an_agent.a2a.listing`: ListTasks' order, timestamp filter and cursor over real SDK protobuf tasks."""

from __future__ import annotations

import pytest
from a2a.types import ListTasksRequest, Task, TaskState
from a2a.utils.errors import InvalidParamsError
from google.protobuf.timestamp_pb2 import Timestamp

from an_agent.a2a.listing import list_tasks


def _task(task_id: str, seconds: int | None, state: int = TaskState.TASK_STATE_WORKING) -> Task:
    task = Task(id=task_id, context_id=task_id)
    task.status.state = state  # type: ignore[assignment]
    if seconds is not None:
        task.status.timestamp.CopyFrom(Timestamp(seconds=seconds))
    task.artifacts.add(artifact_id="result")
    return task


TASKS = [_task("a", 10), _task("b", 30), _task("c", 20), _task("d", None), _task("e", 30)]


def test_most_recent_status_first_then_id_and_untimed_last() -> None:
    listed = list_tasks(TASKS, ListTasksRequest())
    assert [t.id for t in listed.tasks] == ["e", "b", "c", "a", "d"]
    assert listed.total_size == 5 and listed.page_size == 50 and listed.next_page_token == ""
    assert all(not t.artifacts for t in listed.tasks)  # only with includeArtifacts
    assert all(t.artifacts for t in list_tasks(TASKS, ListTasksRequest(include_artifacts=True)).tasks)


def test_pages_follow_the_cursor_even_when_the_last_task_of_a_page_changes() -> None:
    first = list_tasks(TASKS, ListTasksRequest(page_size=2))
    assert [t.id for t in first.tasks] == ["e", "b"] and first.next_page_token
    changed = [_task("b", 99) if t.id == "b" else t for t in TASKS]  # b moved to the top meanwhile
    second = list_tasks(changed, ListTasksRequest(page_size=2, page_token=first.next_page_token))
    assert [t.id for t in second.tasks] == ["c", "a"] and second.total_size == 5
    third = list_tasks(changed, ListTasksRequest(page_size=2, page_token=second.next_page_token))
    assert [t.id for t in third.tasks] == ["d"] and third.next_page_token == ""


def test_filters_and_invalid_parameters() -> None:
    after = ListTasksRequest()
    after.status_timestamp_after.CopyFrom(Timestamp(seconds=20))
    assert [t.id for t in list_tasks(TASKS, after).tasks] == ["e", "b", "c"]  # at or after; untimed left out
    done = [*TASKS, _task("f", 5, TaskState.TASK_STATE_COMPLETED)]
    assert [t.id for t in list_tasks(done, ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED)).tasks] == ["f"]
    assert [t.id for t in list_tasks(TASKS, ListTasksRequest(context_id="c")).tasks] == ["c"]
    for bad in (
        ListTasksRequest(page_size=0),
        ListTasksRequest(page_size=101),
        ListTasksRequest(history_length=-1),
        ListTasksRequest(page_token="%%%"),
    ):
        with pytest.raises(InvalidParamsError):
            list_tasks(TASKS, bad)
