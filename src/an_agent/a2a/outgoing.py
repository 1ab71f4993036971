"""The messages our A2A client sends: data parts and the ``SendMessage`` request around them.

A user message with a fresh ``messageId``, the parts, the task it continues
and our metadata keys (`an_agent.a2a.states`, the trace context), asking the
agent to answer at once or when the task ends. Built here, once, for every
message `an_agent.a2a.client.A2AAgentClient` sends; what goes in the parts
(negotiated, validated) is the client's business.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from an_agent.a2a.sdk import SendMessageRequest, json_to_protobuf


def data_part(data: dict[str, Any], mime_type: str | None = None) -> dict[str, Any]:
    """A JSON data part; with ``mime_type`` (e.g. ``application/json;schema=<id>``) in its metadata."""
    part: dict[str, Any] = {"data": data, "mediaType": "application/json"}
    if mime_type is not None:
        part["metadata"] = {"mimeType": mime_type}
    return part


def message_request(
    parts: list[dict[str, Any]],
    *,
    wait: bool,
    task_id: str | None = None,
    metadata: Mapping[str, str | None] | None = None,
) -> SendMessageRequest:
    """A ``SendMessage`` request of a user message of ``parts``.

    ``task_id`` addresses an existing task; ``metadata`` entries without a
    value are left out; ``wait`` False asks the agent to answer at once
    (``returnImmediately``).
    """
    message: dict[str, Any] = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": parts}
    if task_id:
        message["taskId"] = task_id
    kept = {k: v for k, v in (metadata or {}).items() if v}
    if kept:
        message["metadata"] = kept
    request = {"message": message, "configuration": {"returnImmediately": not wait}}
    return json_to_protobuf(request, SendMessageRequest())
