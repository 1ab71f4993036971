"""ListTasks (A2A spec 3.1.4) over the tasks a caller may read, already in their A2A form.

The operation layer decides which tasks the caller sees (its read view, NACM); this module only applies
the request's A2A parameters to them, as the spec words them:

- filters: ``contextId`` (ours is the task id, so at most one task), ``status`` (an A2A ``TaskState``;
  unspecified: any), ``statusTimestampAfter`` (status timestamp at or after it; a task without one is
  left out);
- order: status timestamp, most recent first, then task id (descending), so that the order is total and
  a cursor is a position in it; tasks without a timestamp come last;
- paging: ``pageSize`` 1..100 (default 50; out of range: ``InvalidParamsError``), ``pageToken`` the
  ``nextPageToken`` of the previous page (the SDK's cursor: the position of that page's last task, so it
  stays valid when that task changes or goes); ``nextPageToken`` is "" on the last page; ``totalSize``
  counts the tasks that pass the filters, before paging;
- ``historyLength`` must not be negative; the tasks carry no history (the draft's task keeps none), so a
  valid value changes nothing; artifacts only with ``includeArtifacts``.
"""

from __future__ import annotations

from collections.abc import Iterable

from an_agent.a2a.sdk import (
    DEFAULT_LIST_TASKS_PAGE_SIZE,
    InvalidParamsError,
    ListTasksCursor,
    ListTasksRequest,
    ListTasksResponse,
    Task,
    decode_list_tasks_cursor,
    encode_list_tasks_cursor,
    validate_history_length,
    validate_page_size,
)


def list_tasks(tasks: Iterable[Task], params: ListTasksRequest) -> ListTasksResponse:
    """The page of ``tasks`` that ``params`` asks for (module docstring); raises `InvalidParamsError`."""
    validate_history_length(params)
    size = DEFAULT_LIST_TASKS_PAGE_SIZE
    if params.HasField("page_size"):
        validate_page_size(params.page_size)
        size = params.page_size
    selected = sorted((t for t in tasks if _wanted(t, params)), key=_sort_key, reverse=True)
    start = 0
    if params.page_token:
        cursor = decode_list_tasks_cursor(params.page_token)
        if cursor is None:
            raise InvalidParamsError(
                message=f"invalid pageToken {params.page_token!r}: pass the nextPageToken of the previous page"
            )
        after = cursor.sort_key()
        start = next((i for i, task in enumerate(selected) if _sort_key(task) < after), len(selected))
    page = selected[start : start + size]
    more = start + size < len(selected)
    out = ListTasksResponse(
        tasks=page,
        total_size=len(selected),
        page_size=size,
        next_page_token=encode_list_tasks_cursor(_cursor(page[-1])) if more else "",
    )
    if not params.include_artifacts:
        for task in out.tasks:
            task.ClearField("artifacts")
    return out


def _wanted(task: Task, params: ListTasksRequest) -> bool:
    if params.context_id and task.context_id != params.context_id:
        return False
    if params.status and task.status.state != params.status:
        return False
    if params.HasField("status_timestamp_after"):
        if not task.status.HasField("timestamp"):
            return False
        after: int = params.status_timestamp_after.ToNanoseconds()
        return bool(task.status.timestamp.ToNanoseconds() >= after)
    return True


def _sort_key(task: Task) -> tuple[bool, int, str]:
    """``(has a timestamp, timestamp, id)``, the key the SDK's cursors are positions in."""
    stamped = task.status.HasField("timestamp")
    return stamped, task.status.timestamp.ToNanoseconds() if stamped else 0, task.id


def _cursor(task: Task) -> ListTasksCursor:
    stamped = task.status.HasField("timestamp")
    return ListTasksCursor(timestamp_ns=task.status.timestamp.ToNanoseconds() if stamped else None, task_id=task.id)
