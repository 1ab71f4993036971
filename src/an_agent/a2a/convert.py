"""Our tasks and status events as A2A v1 objects, in ProtoJSON form (no SDK import; `an_agent.a2a.face`
parses them into the SDK's protobuf types).

- A task keeps its id (the A2A task id IS the NETCONF task-id) and uses it as its ``contextId``, since
  the draft's task has no conversation context; its state comes from `an_agent.a2a.states`, the exact
  draft status rides in ``metadata`` under `DRAFT_STATUS_KEY`; a failure or cancellation reason is the
  status message. An ``input-required`` status message says what is missing: the reason, one text part
  per required item, and a data part ``{"input-required": [{"required", "target-object", "task-async",
  "start-time"}]}`` (``target-object``: the prompt's target object, e.g. the payload key a task asks for).
- A finished task's result becomes one artifact ``result``: a data part when the result is JSON (its
  ``metadata.mimeType`` is the result's format, e.g. ``application/json;schema=<result schema>``, as
  the schemas extension's section 4 asks), else a text part; its summary is the artifact description.

The other direction, for our A2A client (`an_agent.a2a.client`): `task_from_json` and
`status_from_json` read an A2A ``Task`` / ``TaskStatusUpdateEvent`` of any agent back into our model,
the exact draft status when the metadata carries it (an agent of ours), else the table's
(`an_agent.a2a.states.draft_status`); a task in a state the draft has no word for has no status.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from an_agent.a2a.states import DRAFT_STATUS_KEY, a2a_state, draft_status
from an_agent.clock import from_rfc3339, to_rfc3339
from an_agent.model import ConditionNotification, InputRequired, Task, TaskResult, TaskStatus, parse_prompt

ARTIFACT_ID = "result"
INPUT_REQUIRED_KEY = "input-required"
"""Key of the data part of an ``input-required`` status message: the task's ``input-required`` list."""


def _status(
    status: TaskStatus,
    reason: str | None,
    when: float | None,
    task_id: str,
    required: Sequence[InputRequired] = (),
) -> dict[str, Any]:
    out: dict[str, Any] = {"state": a2a_state(status)}
    parts: list[dict[str, Any]] = [{"text": reason}] if reason else []
    if status == TaskStatus.INPUT_REQUIRED and required:
        # What is missing, for people (one text part per item) and programs (one data part, the YANG's names).
        parts.extend({"text": item.required} for item in required)
        parts.append({"data": {INPUT_REQUIRED_KEY: [_required_json(item) for item in required]}})
    if parts:
        out["message"] = {
            "messageId": f"{task_id}-{status.value}",
            "role": "ROLE_AGENT",
            "taskId": task_id,
            "contextId": task_id,
            "parts": parts,
        }
    if when is not None:
        out["timestamp"] = to_rfc3339(when)
    return out


def _required_json(item: InputRequired) -> dict[str, Any]:
    out: dict[str, Any] = {"required": item.required}
    target = parse_prompt(item.required).target_object
    if target:
        out["target-object"] = target  # what is asked for, by name (a payload key when keys are missing)
    if item.task_async is not None:
        out["task-async"] = item.task_async
    if item.start_time is not None:
        out["start-time"] = to_rfc3339(item.start_time)
    return out


def task_json(task: Task) -> dict[str, Any]:
    """The A2A ``Task`` of one of our tasks (module docstring)."""
    status = task.status or TaskStatus.CREATED
    result = task.result
    out: dict[str, Any] = {
        "id": task.task_id,
        "contextId": task.task_id,
        "status": _status(
            status,
            result.reason if result and status != TaskStatus.FINISHED else None,
            result.updated_time if result else None,
            task.task_id,
            task.input_required,
        ),
        "metadata": {DRAFT_STATUS_KEY: status.value},
    }
    artifact = artifact_json(task)
    if artifact is not None:
        out["artifacts"] = [artifact]
    return out


def task_json_at(task: Task, event: ConditionNotification) -> dict[str, Any]:
    """The A2A ``Task`` of ``task`` as it was at ``event`` (one of its logged status changes): the event's
    status, and the result artifact only when that event is the finish."""
    out = task_json(task)
    out["status"] = status_event_json(event)["status"]
    out["metadata"] = {DRAFT_STATUS_KEY: event.status.value}
    if event.status != TaskStatus.FINISHED:
        out.pop("artifacts", None)
    return out


def artifact_json(task: Task) -> dict[str, Any] | None:
    """The ``result`` artifact of a finished task, or None when it has no result data."""
    result = task.result
    if task.status != TaskStatus.FINISHED or result is None or result.data is None:
        return None
    media = result.format or "text/plain"
    part: dict[str, Any]
    if media.lower().startswith("application/json"):
        try:
            part = {"data": json.loads(result.data)}
        except json.JSONDecodeError:
            part = {"text": result.data}
    else:
        part = {"text": result.data}
    part["mediaType"] = media
    part["metadata"] = {"mimeType": media}
    artifact: dict[str, Any] = {"artifactId": ARTIFACT_ID, "name": "result", "parts": [part]}
    if result.summary:
        artifact["description"] = result.summary
    return artifact


def status_event_json(event: ConditionNotification) -> dict[str, Any]:
    """The A2A ``TaskStatusUpdateEvent`` of a ``condition-notifications`` event."""
    return {
        "taskId": event.task_id,
        "contextId": event.task_id,
        "status": _status(event.status, event.reason, event.event_time, event.task_id, event.input_required),
        "metadata": {DRAFT_STATUS_KEY: event.status.value},
    }


def _status_parts(status: dict[str, Any]) -> list[dict[str, Any]]:
    message = status.get("message")
    parts = message.get("parts", []) if isinstance(message, dict) else []
    return [p for p in parts if isinstance(p, dict)]


def _required_from(status: dict[str, Any]) -> list[InputRequired]:
    """The ``input-required`` list of a status message (module docstring); empty when it has none."""
    out: list[InputRequired] = []
    for part in _status_parts(status):
        data = part.get("data")
        items = data.get(INPUT_REQUIRED_KEY) if isinstance(data, dict) else None
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and isinstance(item.get("required"), str):
                start = item.get("start-time")
                out.append(
                    InputRequired(
                        item["required"],
                        task_async=item.get("task-async") if isinstance(item.get("task-async"), bool) else None,
                        status=TaskStatus.INPUT_REQUIRED.value,
                        start_time=_stamp(start),
                    )
                )
    return out


def _status_text(status: dict[str, Any], required: Sequence[InputRequired] = ()) -> str | None:
    asked = {item.required for item in required}
    texts = [p["text"] for p in _status_parts(status) if isinstance(p.get("text"), str) and p["text"] not in asked]
    return "\n".join(texts) or None


def _stamp(stamp: object) -> float | None:
    try:
        return from_rfc3339(stamp) if isinstance(stamp, str) else None
    except ValueError:
        return None


def _time(status: dict[str, Any]) -> float | None:
    return _stamp(status.get("timestamp"))


def _artifact_result(artifact: dict[str, Any]) -> TaskResult | None:
    for part in artifact.get("parts", []):
        if not isinstance(part, dict):
            continue
        metadata = part.get("metadata")
        media = (metadata.get("mimeType") if isinstance(metadata, dict) else None) or part.get("mediaType")
        if "data" in part:
            return TaskResult(
                summary=artifact.get("description"),
                format=media or "application/json",
                data=json.dumps(part["data"], sort_keys=True),
            )
        if isinstance(part.get("text"), str):
            return TaskResult(summary=artifact.get("description"), format=media or "text/plain", data=part["text"])
    return None


def task_from_json(value: dict[str, Any]) -> Task:
    """Our `Task` for an A2A ``Task`` in ProtoJSON form (module docstring); the result from its artifacts."""
    status_json = value.get("status") or {}
    metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else None
    status = draft_status(str(status_json.get("state", "")), metadata)
    result: TaskResult | None = None
    for artifact in value.get("artifacts") or []:
        if isinstance(artifact, dict) and (result := _artifact_result(artifact)) is not None:
            break
    required = _required_from(status_json)
    reason = _status_text(status_json, required)
    if reason or result is not None:
        result = result or TaskResult()
        result.reason = reason if status != TaskStatus.FINISHED else result.reason
        result.updated_time = _time(status_json)
    return Task(str(value.get("id", "")), status=status, result=result, input_required=required)


def status_from_json(value: dict[str, Any]) -> ConditionNotification | None:
    """A ``condition-notifications`` equivalent of an A2A ``TaskStatusUpdateEvent`` (None: no draft status)."""
    status_json = value.get("status") or {}
    metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else None
    status = draft_status(str(status_json.get("state", "")), metadata)
    if status is None:
        return None
    required = _required_from(status_json)
    return ConditionNotification(
        task_id=str(value.get("taskId", "")),
        status=status,
        reason=_status_text(status_json, required),
        event_time=_time(status_json),
        input_required=required,
    )
