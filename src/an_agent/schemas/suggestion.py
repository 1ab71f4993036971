"""``schema_update_suggestion`` in a task's result (draft-zhou section 5): what a client acts on.

An agent that applied schema patches for the client adds them to a finished task's JSON result; a
client reads them with `schema_update_suggestions` whichever face carried the task, and drops the
templates it cached for those schemas.
"""

from __future__ import annotations

import json
from typing import Any

from an_agent.model import Task


def schema_update_suggestions(task: Task) -> list[dict[str, Any]]:
    """The ``schema_update_suggestion`` entries of a task's JSON result (``{"schema_id", "patches"}`` each)."""
    if task.result is None or not task.result.data:
        return []
    try:
        data = json.loads(task.result.data)
    except json.JSONDecodeError:
        return []
    found = data.get("schema_update_suggestion") if isinstance(data, dict) else None
    items = found if isinstance(found, list) else [found] if found else []
    return [s for s in items if isinstance(s, dict) and isinstance(s.get("schema_id"), str)]
