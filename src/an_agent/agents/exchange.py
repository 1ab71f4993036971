"""What every link between agents shares, over NETCONF (`an_agent.agents.peers`) or A2A
(`an_agent.agents.a2a_peer`): the recorded `Exchange`, its ordering, the `TaskHandle` of an assigned
task, and the structured payload of a data-param.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from an_agent.agents.environment import SimFuture
from an_agent.errors import SessionsClosed
from an_agent.model import ConditionNotification, DataParam, DataType, Task, TaskStatus, parse_prompt

_ORDER = itertools.count(1)


def next_order() -> int:
    """A process-wide sequence number: what happened first at the same simulated instant comes first."""
    return next(_ORDER)


NOTIFICATIONS = frozenset({"notification", "TaskStatusUpdateEvent"})
"""The operations that are status changes sent to the assigner (over NETCONF, over A2A)."""


@dataclass(frozen=True)
class Exchange:
    """One exchange between two agents, as the sender saw it (or a notification it received)."""

    time: float
    sender: str
    receiver: str
    operation: str
    """The NETCONF operation: ``get``, ``edit-config``, ``task-negotiate``, ``create-subscription``,
    ``notification``; or the A2A one: ``GET agent-card``, ``SendStreamingMessage``,
    ``TaskStatusUpdateEvent``, ``GetTask``."""
    commu_type: str
    """The draft's commuType: CapabilityRequest, taskAssign, FeasibilityNegotiate, taskResultNotify, ..."""
    task_id: str | None = None
    summary: str = ""
    status: str | None = None
    payload: dict[str, Any] | None = None
    ok: bool = True
    error: str | None = None
    order: int = 0
    """`next_order` when the operation started (a notification: when it was received)."""
    trace_id: str | None = None
    """The trace the exchange belongs to (`an_agent.tracing`), when known."""

    @property
    def is_notification(self) -> bool:
        """A status change the receiver was told of (a NETCONF notification or an A2A status update)."""
        return self.operation in NOTIFICATIONS

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "from": self.sender,
            "to": self.receiver,
            "operation": self.operation,
            "commuType": self.commu_type,
            "task_id": self.task_id,
            "summary": self.summary,
            "status": self.status,
            "payload": self.payload,
            "ok": self.ok,
            "error": self.error,
            "order": self.order,
            "trace_id": self.trace_id,
        }


Recorder = Callable[[Exchange], None]


class TaskReader(Protocol):
    """A link that reads a task back (taskResultQuery)."""

    def get_task(self, task_id: str) -> Task: ...


@dataclass
class TaskHandle:
    """A task assigned to a peer; `result` waits (in simulated time) for its end and reads it."""

    peer: TaskReader
    task_id: str
    _ended: SimFuture[ConditionNotification]
    _task: Task | None = field(default=None, init=False)

    def result(self) -> Task:
        """The task as the peer holds it after its end (status, reason, result)."""
        if self._task is None:
            self._ended.wait()
            self._task = self.peer.get_task(self.task_id)
        return self._task


def link_closed(me: str, peer: str, link: str) -> SessionsClosed:
    """The error of a request to ``peer`` after ``me`` closed its ``link`` (``the sessions to ip-fault``)."""
    return SessionsClosed(
        f"{me} -> {peer}: {link} closed ({me} is stopping): nothing is sent to {peer} any more; "
        f"start {me} again to reach it"
    )


def join_threads(threads: Iterable[threading.Thread]) -> None:
    """Wait until each of ``threads`` (a closed link's, from its ``close_nowait``) has ended; the calling
    thread is skipped (a link closed from one of its own threads cannot wait for itself)."""
    for thread in threads:
        if thread is not threading.current_thread():
            thread.join()


def param_payload(param: DataParam) -> dict[str, Any] | None:
    """The envelope ``{"schema_id", "payload"}`` of a structured data-param, else None."""
    if not param.format or "schema=" not in param.format or param.data is None:
        return None
    try:
        value = json.loads(param.data)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


InputAnswer = Callable[[ConditionNotification], "dict[str, str] | None"]
"""An assigner's answer to its executor's ``input-required`` (draft-wang 5.2): given the notification (its
``input-required`` list says what is missing), the values to send (``{item: value}``), or None to leave it
unanswered (the executor's own time limit then decides)."""


def status_summary(event: ConditionNotification, previous: bool = True) -> str:
    """A status notification in words for the timeline: ``processing->input-required: reason (asks for: X)``."""
    before = f"{event.previous_status}->" if previous and event.previous_status else ""
    summary = f"{before}{event.status}" + (f": {event.reason}" if event.reason else "")
    if event.status == TaskStatus.INPUT_REQUIRED and event.input_required:
        asked = [parse_prompt(i.required).target_object or i.required for i in event.input_required]
        summary += f" (asks for: {', '.join(asked)})"
    return summary


def input_text(values: dict[str, str]) -> str:
    """The answer to an input request as text: one ``item: value`` line each (read back by `read_input`)."""
    return "\n".join(f"{key}: {value}" for key, value in values.items())


def read_input(texts: list[str]) -> dict[str, str]:
    """The ``item: value`` lines of answers sent with `input_text` (over NETCONF or A2A)."""
    values: dict[str, str] = {}
    for text in texts:
        for line in text.splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() and value.strip():
                values[key.strip()] = value.strip()
    return values


def input_param(task_id: str, values: dict[str, str], order: int) -> DataParam:
    """The text data-param that carries an answer over NETCONF (added to the task's ``msg-data``)."""
    return DataParam(
        id=f"{task_id}.input.{order}",
        data_type=DataType.TEXT,
        description=f"answer to the input-required of {task_id}",
        format="text/plain",
        data=input_text(values),
    )
