"""Task lifecycle: assignment, execution by the behaviour, cancellation, status notifications.

Statuses (YANG ``task-status``) move only forward out of the end states:
``created`` on assignment, then whatever the behaviour reports, ending in
``finished``, ``failed`` or ``canceled``. Each transition is stored together
with its ``condition-notifications`` event in one SQLite transaction, then
fanned out to subscribers, so what a subscriber saw is always in the log.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from lxml import etree

from an_agent.clock import Clock
from an_agent.errors import RpcError
from an_agent.model import CommuType, ConditionNotification, Task, TaskResult, TaskStatus
from an_agent.runtime.behaviour import Behaviour, TaskRun
from an_agent.runtime.notifications import NotificationBus
from an_agent.schemas.validate import ValidatedPayload
from an_agent.store.agent_store import AgentStore, TaskState

log = logging.getLogger(__name__)


class TaskEngine:
    """Owns task state (config false) and runs the behaviour on assigned tasks."""

    def __init__(
        self,
        behaviour: Behaviour,
        store: AgentStore,
        bus: NotificationBus,
        clock: Clock,
        agent_name: str,
        workers: int = 8,
    ) -> None:
        self._behaviour = behaviour
        self._store = store
        self._bus = bus
        self._clock = clock
        self._agent_name = agent_name
        self._lock = threading.RLock()
        self._states: dict[str, TaskState] = store.load_task_states()
        self._cancel_events: dict[str, threading.Event] = {}
        self._tasks: dict[str, Task] = {}
        self._payloads: dict[str, ValidatedPayload] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="task")
        self._closed = False
        self._version = 0
        # Set by the runtime: a last look at a finished task's result (schema_update_suggestion).
        self.result_hook: Callable[[str, TaskResult], TaskResult] | None = None

    # -- reading --------------------------------------------------------------
    @property
    def version(self) -> int:
        """Increases after every change of task state (status, result): caches of replies key on it.

        Task state is ``config false`` and changes without a datastore commit,
        so the datastore's version alone does not cover it. Bumped after the
        new state is visible, so a reader that saw version v reads data at
        least as new as v.
        """
        return self._version

    def state(self, task_id: str) -> TaskState | None:
        with self._lock:
            return self._states.get(task_id)

    def states(self) -> dict[str, TaskState]:
        with self._lock:
            return dict(self._states)

    def state_elements(self, task_id: str) -> list[etree._Element]:
        """``task-status`` and ``result`` elements to overlay on a task entry in a ``<get>`` reply."""
        state = self.state(task_id)
        if state is None:
            return []
        overlay = Task(task_id, status=TaskStatus(state.status), result=_result_of(state)).to_xml(include_state=True)
        return [child for child in overlay if etree.QName(child).localname in ("task-status", "result")]

    def set_payload(self, task_id: str, payload: ValidatedPayload | None) -> None:
        """Keep (or, with None, drop) the structured payload admission validated for a task."""
        with self._lock:
            if payload is None:
                self._payloads.pop(task_id, None)
            else:
                self._payloads[task_id] = payload

    def payload(self, task_id: str) -> ValidatedPayload | None:
        """The structured payload validated on assignment (see `AgentInfo.payload`)."""
        with self._lock:
            return self._payloads.get(task_id)

    def with_state(self, task: Task) -> Task:
        """``task`` with its current status and result filled in (in place; returned for convenience)."""
        state = self.state(task.task_id)
        if state is not None:
            task.status = TaskStatus(state.status)
            task.result = _result_of(state)
        return task

    # -- changes admitted by the operation layer (each task parsed once there) ----
    def check_change(self, old: Task, new: Task) -> None:
        """Before commit: refuse a taskCancel of a task that already ended."""
        state = self.state(new.task_id)
        if state is None or not TaskStatus(state.status).terminal:
            return
        if new.commu_type == CommuType.TASK_CANCEL and old.commu_type != CommuType.TASK_CANCEL:
            raise RpcError.operation_failed(
                f"task {new.task_id} already ended as {state.status}; it can no longer be cancelled",
                path=f"/irtf-agent:tasks/task[task-id='{new.task_id}']/commuType",
            )

    def admit(self, task: Task) -> None:
        """After commit: start a new task (``created``), or record it cancelled when assigned as taskCancel."""
        if task.commu_type == CommuType.TASK_CANCEL:
            self._transition(task.task_id, TaskStatus.CANCELED, "assigned already cancelled", None, task)
            return
        self._assign(task)

    def update(self, old: Task, new: Task) -> None:
        """After commit: a changed task entry; a switch to taskCancel cancels it."""
        if new.commu_type == CommuType.TASK_CANCEL and old.commu_type != CommuType.TASK_CANCEL:
            self.cancel(new.task_id, f"cancelled by {new.send_from or 'the assigner'} (taskCancel)")
            return
        with self._lock:
            self._tasks[new.task_id] = new

    def forget(self, task_id: str) -> None:
        """After commit: the task entry was deleted; cancel it if running and drop its state."""
        self.cancel(task_id, "task entry deleted")
        with self._lock:
            self._states.pop(task_id, None)
            self._tasks.pop(task_id, None)
            self._payloads.pop(task_id, None)
            self._version += 1
        self._store.delete_task_state(task_id)

    # -- lifecycle ------------------------------------------------------------
    def resume(self, tasks: list[Task]) -> None:
        """After a restart: tasks stored without a state, or not ended, run again from the start."""
        for task in tasks:
            state = self.state(task.task_id)
            if state is not None and TaskStatus(state.status).terminal:
                with self._lock:
                    self._tasks[task.task_id] = task
                continue
            log.info("resuming task %s after restart (was %s)", task.task_id, state.status if state else "unassigned")
            self._assign(task, resumed=state is not None)

    def cancel(self, task_id: str, reason: str) -> None:
        with self._lock:
            event = self._cancel_events.get(task_id)
        if event is not None:
            event.set()
        self._transition(task_id, TaskStatus.CANCELED, reason, None)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            for event in self._cancel_events.values():
                event.set()
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _assign(self, task: Task, resumed: bool = False) -> None:
        cancelled = threading.Event()
        with self._lock:
            self._tasks[task.task_id] = task
            self._cancel_events[task.task_id] = cancelled
        if not resumed:
            self._transition(task.task_id, TaskStatus.CREATED, None, None, task)
        run = TaskRun(task, self._transition, cancelled)
        self._pool.submit(self._execute, task, run)

    def _execute(self, task: Task, run: TaskRun) -> None:
        try:
            if not run.cancelled:
                self._behaviour.execute(task, run)
        except Exception as exc:
            log.exception("behaviour failed on task %s", task.task_id)
            self._transition(task.task_id, TaskStatus.FAILED, f"the agent's behaviour failed: {exc}", None)
        finally:
            state = self.state(task.task_id)
            if state is not None and not TaskStatus(state.status).terminal and not self._closed:
                self._transition(
                    task.task_id, TaskStatus.FAILED, "the behaviour returned without finishing the task", None
                )
            with self._lock:
                self._cancel_events.pop(task.task_id, None)

    def _transition(
        self,
        task_id: str,
        status: TaskStatus,
        reason: str | None,
        result: TaskResult | None,
        task: Task | None = None,
    ) -> bool:
        """Record a status change and announce it; False when the task already ended or is unknown."""
        with self._lock:
            task = task or self._tasks.get(task_id)
            if task is None:
                return False
            previous = self._states.get(task_id)
            previous_status = TaskStatus(previous.status) if previous is not None else None
            if previous_status is not None and previous_status.terminal:
                return False
            if previous_status == status and result is None and (reason or None) == previous.reason:  # type: ignore[union-attr]
                return True
            now = self._clock.now()
            kept = _result_of(previous) if previous is not None else None
            final = result or kept or TaskResult()
            if status == TaskStatus.FINISHED and self.result_hook is not None:
                final = self.result_hook(task_id, final)
            if reason is not None and result is None:
                final.reason = reason
            final.updated_time = now
            state = TaskState(
                task_id=task_id,
                status=status.value,
                reason=final.reason,
                summary=final.summary,
                result_format=final.format,
                result_data=final.data,
                updated=now,
            )
            notification = ConditionNotification(
                task_id=task_id,
                status=status,
                previous_status=previous_status,
                send_from=self._agent_name,
                send_to=task.send_from,
                commu_type=CommuType.TASK_RESULT_NOTIFY,
                reason=reason,
            )
            xml = etree.tostring(notification.to_xml(), encoding="unicode")

            def log_event() -> tuple[int, float, str]:
                seq = self._store.save_task_state(state, (now, xml))
                assert seq is not None
                return seq, now, xml

            # The bus lock orders events; our lock makes the state and its event one step.
            self._bus.publish(log_event)
            self._states[task_id] = state
            self._version += 1
            return True


def _result_of(state: TaskState) -> TaskResult:
    return TaskResult(
        summary=state.summary,
        reason=state.reason,
        format=state.result_format,
        data=state.result_data,
        updated_time=state.updated,
    )
