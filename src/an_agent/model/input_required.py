"""``input-required[required]``: what an executing agent needs from its assigner (draft section 5.4, Figure 9).

The same list appears in a ``condition-notifications`` event (the transition
to ``input-required``) and, as state, in the task entry itself, so that a
``<get>`` (taskResultQuery) shows what a task waits for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lxml import etree

from an_agent.model import _xml as x


@dataclass
class InputRequired:
    """One ``input-required[required]`` entry: what the executor needs from the assigner to go on."""

    required: str
    """A prompt with ``## target object`` and ``## task description`` sections saying what is needed (the key)."""
    task_async: bool | None = None
    """True when the input may be given asynchronously (an edit of the task at any time)."""
    status: str | None = None
    """The task's status while it waits (``input-required``)."""
    start_time: float | None = None
    """When the input became required (seconds since the epoch); mandatory in the YANG."""


def input_required_to_xml(parent: etree._Element, items: Iterable[InputRequired]) -> None:
    """Append one ``<input-required>`` entry per item to ``parent`` (key first)."""
    for item in items:
        entry = x.child(parent, "input-required")
        x.leaf(entry, "required", item.required)
        x.leaf(entry, "task-async", item.task_async)
        x.leaf(entry, "status", item.status)
        x.time_leaf(entry, "start-time", item.start_time)


def input_required_from_xml(parent: etree._Element) -> list[InputRequired]:
    """The ``<input-required>`` entries under ``parent``, in document order."""
    return [
        InputRequired(
            required=x.required_text(item, "required"),
            task_async=x.bool_text(item, "task-async"),
            status=x.text(item, "status"),
            start_time=x.time_text(item, "start-time"),
        )
        for item in x.children(parent, "input-required")
    ]
