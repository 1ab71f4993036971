"""What the task commands print about a task, whichever face carried it (NETCONF or A2A)."""

from __future__ import annotations

import sys
from typing import Any

from an_agent.cli._common import print_json, print_table
from an_agent.clock import to_rfc3339
from an_agent.model import Task, TaskStatus


def task_dict(task: Task) -> dict[str, Any]:
    result = task.result
    return {
        "task-id": task.task_id,
        "task-sendFrom": task.send_from,
        "task-sendTo": task.send_to,
        "commuType": task.commu_type,
        "task-status": task.status,
        "content": task.content,
        "expected-response": task.expected_response,
        "msg-data": task.msg_data,
        "result": None
        if result is None
        else {
            "summary": result.summary,
            "reason": result.reason,
            "format": result.format,
            "data": result.data,
            "updated-time": to_rfc3339(result.updated_time) if result.updated_time else None,
        },
    }


def print_task(task: Task) -> None:
    result = task.result
    print_table(
        ["field", "value"],
        [
            ["task-id", task.task_id],
            ["status", task.status],
            ["from", task.send_from],
            ["to", task.send_to],
            ["commuType", task.commu_type],
            ["summary", result.summary if result else None],
            ["reason", result.reason if result else None],
            ["result format", result.format if result else None],
            ["result data", result.data if result else None],
            ["updated", to_rfc3339(result.updated_time) if result and result.updated_time else None],
        ],
    )


def print_result(stored: Task, as_json: bool) -> int:
    """Print an assigned task as it is now, with any ``schema_update_suggestion``; the exit code (1: failed)."""
    from an_agent.schemas.suggestion import schema_update_suggestions

    suggestions = schema_update_suggestions(stored)
    if as_json:
        print_json({**task_dict(stored), "schema_update_suggestion": suggestions})
    else:
        print_task(stored)
        for suggestion in suggestions:
            patches = ", ".join(p.get("patch_id", "?") for p in suggestion.get("patches", []))
            print(
                f"schema update suggested for {suggestion['schema_id']}: patches {patches} "
                f"(an-agent schema get {suggestion['schema_id']} shows the keys)",
                file=sys.stderr,
            )
    return 0 if stored.status != TaskStatus.FAILED else 1


def print_cancelled(task: Task, as_json: bool) -> int:
    """Print a task after taskCancel / CancelTask (its status and why); exit code 0."""
    if as_json:
        print_json(task_dict(task))
    else:
        reason = f" ({task.result.reason})" if task.result and task.result.reason else ""
        print(f"{task.task_id}: {task.status}{reason}")
    return 0
