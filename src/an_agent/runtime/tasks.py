"""Task lifecycle: assignment, execution by the behaviour, cancellation, status notifications.

Statuses (YANG ``task-status``) move only forward out of the end states:
``created`` on assignment, then whatever the behaviour reports (``processing``,
``blocked``, ``suspended``, ``input-required``), ending in ``finished``,
``failed`` or ``canceled``. Each transition is stored together with its
``condition-notifications`` event in one SQLite transaction, then fanned out
to subscribers, so what a subscriber saw is always in the log. The event
carries what the model defines for it: the previous status, the reason, the
``input-required`` list (with its ``start-time``) when input is asked for, and
the ``result`` as ``data`` when the task ends (`an_agent.runtime.task_records`).

Input requests: a behaviour's `TaskRun.request_input` opens an input slot and
waits; the assigner's edit of the task, admitted by the operation layer
(`an_agent.runtime.admission`), reaches `update` with the `ProvidedInput`,
which moves the task back to ``processing`` and wakes the behaviour.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from lxml import etree

from an_agent import stages, tracing
from an_agent.clock import Clock
from an_agent.errors import RpcError, StateFull
from an_agent.model import CommuType, InputRequired, Task, TaskResult, TaskStatus
from an_agent.runtime.behaviour import Behaviour, ProvidedInput, TaskRun
from an_agent.runtime.notifications import NotificationBus
from an_agent.runtime.task_records import inputs_of, result_of, settled, state_elements, transition_record
from an_agent.runtime.task_watch import TaskWatch
from an_agent.runtime.workers import TaskWorkers
from an_agent.schemas.validate import ValidatedPayload
from an_agent.store.agent_store import AgentStore, TaskState

log = logging.getLogger(__name__)

FULL_RETRY_S = 0.25
"""Wall seconds before a status change refused by a full state directory is stored again (doubling)."""
FULL_RETRY_MAX_S = 5.0


FANOUT_GRACE = 0.1
"""Seconds a new task's first step waits for its ``created`` notification to reach every transport."""


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
        self._changed = threading.Condition(self._lock)  # notified on every status transition
        self._states: dict[str, TaskState] = store.load_task_states()
        self._cancel_events: dict[str, threading.Event] = {}
        self._tasks: dict[str, Task] = {}
        self._payloads: dict[str, ValidatedPayload] = {}
        self._input_slots: dict[str, _InputSlot] = {}
        # Tasks the behaviour accepted and has not been told of their end yet (`Behaviour.released`).
        self._unreleased: dict[str, Task] = {}
        self._created_seq: dict[str, int] = {}  # log position of each running task's "created" event
        self._workers = TaskWorkers(workers)
        self._closed = False
        self._version = 0
        # Set by the runtime: a last look at a finished task's result (schema_update_suggestion).
        self.result_hook: Callable[[str, TaskResult], TaskResult] | None = None
        # Set by the runtime: told (holding no lock of ours) when a task reached an end state.
        self.ended_hook: Callable[[str], None] | None = None
        self.watch = TaskWatch(agent_name)
        """Metrics and trace events of the tasks (`an_agent.runtime.task_watch`)."""

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
        return [] if state is None else state_elements(task_id, state)

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
            task.result = result_of(state)
            task.input_required = inputs_of(state)
        return task

    def settle(self, task_ids: Sequence[str], timeout: float) -> dict[str, TaskState]:
        """Wait up to ``timeout`` seconds until each task ended or asks for input; their states then.

        For ``task-async false``: the caller holds no datastore lock while it
        waits (only this engine's condition, released while waiting).
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                states = {i: s for i in task_ids if (s := self._states.get(i)) is not None}
                if all(settled(states.get(i)) for i in task_ids):
                    return states
                left = deadline - time.monotonic()
                if left <= 0 or self._closed:
                    return states
                self._changed.wait(left)

    def awaiting_input(self, task_id: str) -> bool:
        """True while the task's status is ``input-required`` (an edit of it is then its input)."""
        state = self.state(task_id)
        return state is not None and state.status == TaskStatus.INPUT_REQUIRED.value

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
            with self._lock:
                self._unreleased[task.task_id] = task
            self._transition(task.task_id, TaskStatus.CANCELED, "assigned already cancelled", None, task)
            self._release(task.task_id)
            return
        self._assign(task)

    def update(self, old: Task, new: Task, provided: ProvidedInput | None = None) -> None:
        """After commit: a changed task entry; a switch to taskCancel cancels it.

        ``provided``: the edit answers the task's input request (the operation
        layer built it from the admitted edit); the task goes back to
        ``processing`` and the waiting behaviour gets it.
        """
        if new.commu_type == CommuType.TASK_CANCEL and old.commu_type != CommuType.TASK_CANCEL:
            self.cancel(new.task_id, f"cancelled by {new.send_from or 'the assigner'} (taskCancel)")
            return
        with self._lock:
            if new.task_id in self._cancel_events:  # running: its later notifications name the edited task
                self._tasks[new.task_id] = new
            slot = self._input_slots.get(new.task_id) if provided is not None else None
            if slot is None or provided is None or not self.awaiting_input(new.task_id):
                return
            what = ", ".join(p.id for p in provided.data_params) or "a new content"
            self.report(new.task_id, TaskStatus.PROCESSING, f"input provided by {provided.provided_by}: {what}", None)
            slot.provided = provided
            slot.event.set()

    # -- input requests (RunControl) ------------------------------------------------
    def expect_input(self, task_id: str) -> None:
        """Open a fresh input slot for ``task_id`` (before its status becomes input-required)."""
        with self._lock:
            self._input_slots[task_id] = _InputSlot()

    def await_input(self, task_id: str, timeout: float | None, cancelled: threading.Event) -> ProvidedInput | None:
        """Wait until the slot of ``task_id`` receives input; None on cancellation, close or timeout."""
        with self._lock:
            slot = self._input_slots.get(task_id)
        if slot is None:
            return None
        waited = 0.0
        step = 0.05  # cancellation is another event: poll both at a short interval
        try:
            with self._workers.parked():  # waiting for the assigner is no work: another task may start
                while not slot.event.wait(step):
                    waited += step
                    if cancelled.is_set() or self._closed or (timeout is not None and waited >= timeout):
                        return None
            return slot.provided
        finally:
            with self._lock:
                if self._input_slots.get(task_id) is slot:
                    del self._input_slots[task_id]

    def forget(self, task_id: str) -> None:
        """After commit: the task entry was deleted; cancel it if running and drop its state."""
        self.cancel(task_id, "task entry deleted")
        with self._lock:
            self._states.pop(task_id, None)
            self._tasks.pop(task_id, None)
            self._payloads.pop(task_id, None)
            self._input_slots.pop(task_id, None)
            self._version += 1
        self._store.delete_task_state(task_id)

    # -- lifecycle ------------------------------------------------------------
    def resume(self, tasks: list[Task]) -> None:
        """After a restart: tasks stored without a state, or not ended, run again from the start."""
        for task in tasks:
            state = self.state(task.task_id)
            if state is not None and TaskStatus(state.status).terminal:
                continue
            log.info("resuming task %s after restart (was %s)", task.task_id, state.status if state else "unassigned")
            try:
                self._behaviour.resumed(task)
            except Exception:  # the task still runs: the hook only accounts for it
                log.exception("behaviour hook 'resumed' failed on task %s", task.task_id)
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
        self._workers.close()  # a task queued, never started, is released then

    def _assign(self, task: Task, resumed: bool = False) -> None:
        cancelled = threading.Event()
        with self._lock:
            self._tasks[task.task_id] = task
            self._cancel_events[task.task_id] = cancelled
            self._unreleased[task.task_id] = task
        self.watch.assigned(task, resumed)
        if not resumed:
            self._transition(task.task_id, TaskStatus.CREATED, None, None, task)
        run = TaskRun(task, self, cancelled, self._agent_name)
        self._workers.submit(lambda: self._execute(task, run), lambda: self._release(task.task_id))

    def wait_announced(self, task_id: str, timeout: float = FANOUT_GRACE) -> None:
        """Wait (at most ``timeout`` s) until the task's ``created`` event is on every subscriber's transport.

        Called before work that would compete for the CPU with that fan-out: the
        behaviour's first status change, the task's context record.
        """
        with self._lock:
            seq = self._created_seq.get(task_id)
        if seq is not None:
            self._bus.wait_handed_over(seq, timeout)
            if stages.ON:
                stages.mark(f"announced:{seq}")

    def _execute(self, task: Task, run: TaskRun) -> None:
        try:
            self.wait_announced(task.task_id)
            if not run.cancelled:
                with tracing.use(self.watch.span(task.task_id)):  # what the behaviour asks for is in its trace
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
                # An ended task needs no memo: its state and result are in `_states` and the store.
                self._tasks.pop(task.task_id, None)
                self._payloads.pop(task.task_id, None)
            self._release(task.task_id)

    def _release(self, task_id: str) -> None:
        """Tell the behaviour, once, that a task it accepted ended (`Behaviour.released`)."""
        with self._lock:
            task = self._unreleased.pop(task_id, None)
        if task is None:
            return
        try:
            self._behaviour.released(task)
        except Exception:  # the task ended all the same: the hook only gives back what it held
            log.exception("behaviour hook 'released' failed on task %s", task_id)

    def report(
        self,
        task_id: str,
        status: TaskStatus,
        reason: str | None,
        result: TaskResult | None,
        inputs: Sequence[InputRequired] = (),
    ) -> bool:
        """A behaviour's status report (`TaskRun`): see `_transition`."""
        return self._transition(task_id, status, reason, result, inputs=inputs)

    def _transition(
        self,
        task_id: str,
        status: TaskStatus,
        reason: str | None,
        result: TaskResult | None,
        task: Task | None = None,
        inputs: Sequence[InputRequired] = (),
    ) -> bool:
        """Record a status change and announce it; False when the task already ended or is unknown.

        ``inputs`` (status input-required only) get their ``start-time``
        (now) and ``task-async`` (the task's) filled in when unset.
        """
        recorded = self._record_when_stored(task_id, status, reason, result, task, inputs)
        if recorded and status.terminal and self.ended_hook is not None:
            self.ended_hook(task_id)  # outside our lock: it may edit the datastore
        if recorded:
            with self._changed:  # after the hook: a synchronous reply sees what the end wrote
                self._changed.notify_all()
        return recorded

    def _record_when_stored(
        self,
        task_id: str,
        status: TaskStatus,
        reason: str | None,
        result: TaskResult | None,
        task: Task | None,
        inputs: Sequence[InputRequired],
    ) -> bool:
        """`_record`, again while the state directory is full (`StateFull`): a status change is announced
        only once it is stored, so the task's thread waits (wall clock, `FULL_RETRY_S` doubling up to
        `FULL_RETRY_MAX_S`) until space returns or the agent stops. Before, the refused write ended the
        thread and left the task ``processing`` for ever (found by lab soak)."""
        delay = FULL_RETRY_S
        while True:
            try:
                return self._record(task_id, status, reason, result, task, inputs)
            except StateFull as exc:
                if self._closed:
                    raise
                log.warning("task %s %s not stored yet: %s; trying again in %g s", task_id, status.value, exc, delay)
                time.sleep(delay)
                delay = min(2 * delay, FULL_RETRY_MAX_S)

    def _record(
        self,
        task_id: str,
        status: TaskStatus,
        reason: str | None,
        result: TaskResult | None,
        task: Task | None,
        inputs: Sequence[InputRequired],
    ) -> bool:
        with self._lock:
            task = task or self._tasks.get(task_id)
            if task is None:
                return False
            previous = self._states.get(task_id)
            previous_status = TaskStatus(previous.status) if previous is not None else None
            if previous_status is not None and previous_status.terminal:
                return False
            if (
                previous_status == status and result is None and not inputs and (reason or None) == previous.reason  # type: ignore[union-attr]
            ):
                return True
            now = self._clock.now()
            hook = self.result_hook
            finishing = None if hook is None else lambda final: hook(task_id, final)
            state, xml = transition_record(
                task, previous, status, reason, result, inputs, now, self._agent_name, finishing
            )

            def log_event() -> tuple[int, float, str]:
                seq = self._store.save_task_state(state, (now, xml))
                assert seq is not None
                return seq, now, xml

            # The bus lock orders events; our lock makes the state and its event one step.
            seq = self._bus.publish(log_event)
            if stages.ON:
                stages.mark(f"published:{status.value}:{seq}")
            if status == TaskStatus.CREATED and seq is not None:
                self._created_seq[task_id] = seq
            elif status.terminal:
                self._created_seq.pop(task_id, None)
            self._states[task_id] = state
            self._version += 1
            self.watch.recorded(task, status)
            return True


class _InputSlot:
    """Where the assigner's answer to one input request is handed to the waiting behaviour."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.provided: ProvidedInput | None = None
