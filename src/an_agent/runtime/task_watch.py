"""What the task engine tells the outside about its tasks: metrics and trace events (`TaskWatch`).

`an_agent.runtime.tasks.TaskEngine` calls `assigned` when a task starts (or resumes after a restart)
and `recorded` after each status transition it committed; while the behaviour works on the task it
runs in `span` (`an_agent.tracing.use`), so whatever the behaviour assigns to peers carries the trace.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from an_agent import metrics, tracing
from an_agent.model import Task, TaskStatus


class TaskWatch:
    """The executor side of the task metrics (`an_agent.metrics`) and the tasks' spans; thread-safe."""

    def __init__(self, agent_name: str) -> None:
        self.agent_name = agent_name
        self.skill_of: Callable[[str], str] = lambda task_id: "none"
        """The profile skill a task's payload goes to (the duration's label); set by the operation layer."""
        self._lock = threading.Lock()
        self._opened: dict[str, float] = {}  # created tasks of this process -> monotonic start
        self._spans: dict[str, tracing.Span] = {}  # running tasks' spans

    def assigned(self, task: Task, resumed: bool) -> None:
        """A task starts: its span is the assigner's child, or a new trace (a request from outside)."""
        span = tracing.received(task.traceparent)
        with self._lock:
            self._spans[task.task_id] = span
        note = f"task {task.task_id} from {task.send_from or '?'}" + (" (resumed)" if resumed else "")
        tracing.event(self.agent_name, "task.received", note, span, task_id=task.task_id, peer=task.send_from)

    def span(self, task_id: str) -> tracing.Span | None:
        with self._lock:
            return self._spans.get(task_id)

    def recorded(self, task: Task, status: TaskStatus) -> None:
        """``task`` entered ``status`` (a transition the engine committed)."""
        task_id = task.task_id
        if status.terminal:
            with self._lock:
                span = self._spans.pop(task_id, None)
            tracing.event(
                self.agent_name, "task.ended", f"task {task_id} {status.value}", span,
                task_id=task_id, peer=task.send_from, status=status.value,
            )  # fmt: skip
        if not metrics.enabled():
            return
        metrics.task_status("executor", status.value)
        with self._lock:
            if status == TaskStatus.CREATED:
                self._opened[task_id] = time.monotonic()
                started = None
            else:
                started = self._opened.pop(task_id, None) if status.terminal else None
        if status == TaskStatus.CREATED:
            metrics.task_open("executor", 1)
        elif started is not None:
            metrics.task_open("executor", -1)
            metrics.task_duration(self.skill_of(task_id), status.value, time.monotonic() - started)
