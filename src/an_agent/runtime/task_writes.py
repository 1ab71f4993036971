"""Writes of running: a generic edit, and assigning, cancelling and answering tasks, all through one admission.

`TaskWrites` is the write half of `an_agent.runtime.operations.Operations`:
every change of running goes through `an_agent.runtime.admission.TaskAdmission`
under the session's edit guard, a synchronous task (``task-async false``) is
waited for after it, and refusals are `RpcError` with the app-tags below
(which the A2A face maps to its own errors). Apart from the reads and RPCs
because it is the one place that changes tasks.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from lxml import etree

from an_agent.access.nacm import NACM_NS, NACM_PATH
from an_agent.errors import RpcError
from an_agent.model import IRTF_AGENT_NS, CommuType, Task, TaskStatus, tasks_element
from an_agent.runtime.access import Access, AccessKind, Touched
from an_agent.runtime.admission import TASK_ID_TAG, TASK_TAG, TASKS_TAG, TaskAdmission
from an_agent.runtime.edit import NC_OPERATION, elements
from an_agent.runtime.principal import Principal
from an_agent.runtime.reads import DataReads
from an_agent.runtime.requests import AssignTask, CancelTask, EditConfig, ProvideInput
from an_agent.runtime.text_input import AssignText, PayloadCompletion
from an_agent.store.agent_store import TaskState

TASK_ENDED = "task-ended"
"""App-tag of the operation-failed refusing a change to a task that already ended (cancel, input)."""
NO_INPUT_REQUESTED = "no-input-requested"
"""App-tag of the operation-failed refusing input for a running task that asks for none."""


class TaskWrites(DataReads):
    """The writes of `Operations`. Subclasses set the attributes in their ``__init__``."""

    admission: TaskAdmission
    completion: PayloadCompletion
    sync_wait: float

    def edit_config(self, principal: Principal, session_id: int, request: EditConfig) -> None:
        """A generic YANG edit of running or the candidate; new task entries are admitted like `assign_task`
        (in the candidate: at ``<commit>``, `ConfigOperations`).

        A new task with ``task-async`` false (the YANG default) is synchronous:
        this call returns once it ended, holding no lock meanwhile. When it
        has not ended within `sync_wait` seconds, or asks for input, the edit
        stays committed and the task goes on, and `RpcError` operation-failed
        says so (app-tag ``task-still-running`` / ``task-input-required``),
        naming the task in its error-path.

        An edit of ``/nacm`` is refused: NACM first (``access-denied`` but for
        admins), then ``operation-not-supported`` -- the rules come from
        ``--nacm FILE`` and change with a restart, never silently in running.
        """
        self._refuse_nacm_edit(principal, request)
        if request.target == "candidate":
            self.config.edit_candidate(
                principal, session_id, request.config, request.default_operation, request.test_only
            )
            return
        with self.sessions.editing(session_id):
            committed = self.admission.run(
                principal, request.config, request.default_operation, test_only=request.test_only
            )
        if request.test_only:
            return
        for task_id, state in self._settle(committed.added).items():
            path = f"/irtf-agent:tasks/task[task-id='{task_id}']"
            if state is not None and state.status == TaskStatus.INPUT_REQUIRED.value:
                raise RpcError.operation_failed(
                    f"task {task_id} was created and waits for input ({state.reason}): answer by editing the task "
                    "(its input-required state says what is needed)",
                    path=path,
                    app_tag="task-input-required",
                )
            raise RpcError.operation_failed(
                f"task {task_id} was created and goes on (status {state.status if state else 'created'}): "
                f"with task-async false the reply waits at most {self.sync_wait:g} s; follow the task with <get> "
                "or <create-subscription>",
                path=path,
                app_tag="task-still-running",
            )

    def _settle(self, added: Sequence[Task]) -> dict[str, TaskState | None]:
        """Wait for the synchronous (task-async false) tasks among ``added``; those that did not end, with state."""
        sync = [t.task_id for t in added if not t.task_async and t.commu_type != CommuType.TASK_CANCEL]
        if not sync:
            return {}
        states = self.tasks.settle(sync, self.sync_wait)
        ended = {i for i, s in states.items() if TaskStatus(s.status).terminal}
        return {i: states.get(i) for i in sync if i not in ended}

    def _refuse_nacm_edit(self, principal: Principal, request: EditConfig) -> None:
        for element in elements(request.config):
            if etree.QName(element).namespace != NACM_NS:
                continue
            operation = element.get(NC_OPERATION, request.default_operation)
            kinds: dict[str, AccessKind] = {"create": "create", "delete": "delete", "remove": "delete"}
            kind = kinds.get(operation, "update")
            self.authorizer.authorize(Access(principal, kind, (Touched(kind, NACM_PATH, element),)))
            raise RpcError(
                "application",
                "operation-not-supported",
                "the NACM rules cannot be edited over NETCONF: change the file given to --nacm "
                "(RFC 7951 JSON of ietf-netconf-acm) and restart the agent",
                NACM_PATH,
            )

    def assign_task(self, principal: Principal, request: AssignTask, session_id: int = 0) -> Task:
        """taskAssign: create the task (and its data-params); returns it with its current status.

        ``session_id`` is the caller's session when its face has sessions (0: none; the
        running lock of a NETCONF session still applies). It returns at once,
        whatever ``task-async`` says: a face with its own notion of waiting
        (A2A ``returnImmediately``) follows the task itself.
        """
        config = etree.Element(f"{{{IRTF_AGENT_NS}}}config")
        for param in request.data_params:
            config.append(param.to_xml())
        config.append(tasks_element([request.task], operation="create"))
        with self.sessions.editing(session_id):
            self.admission.run(principal, config, "merge", new_tasks=[request.task])
        return self.tasks.with_state(copy.deepcopy(request.task))

    def assign_text(self, principal: Principal, request: AssignText) -> Task:
        """taskAssign from words only (`an_agent.runtime.text_input`): the payload mapped from the text, or
        the task waiting in ``input-required`` for the required keys the text does not give; returns it.

        Without an input schema (no skill declares one, or the agent serves no schemas) the text stays
        the task's prompt and the task is assigned as it is.
        """
        assignment = self.completion.prepare(request, request.task.send_from or principal.name)
        try:
            return self.assign_task(principal, assignment)
        except BaseException:
            self.completion.drop(assignment.task.task_id)
            raise

    def cancel_task(self, principal: Principal, request: CancelTask, session_id: int = 0) -> Task:
        """taskCancel: the task ends as ``canceled`` and stays queryable; returns it.

        `RpcError` data-missing for an unknown task; operation-failed when it already ended (app-tag
        ``task-ended``), but for a task already ``canceled``, which is returned as it is unless
        ``request.refuse_ended``.
        """
        status = self.get_task(principal, request.task_id).status  # data-missing for an unknown task
        if status is not None and status.terminal and (status != TaskStatus.CANCELED or request.refuse_ended):
            raise _ended(request.task_id, status, "it can no longer be cancelled")
        cancel = Task(request.task_id, commu_type=CommuType.TASK_CANCEL)
        entry = etree.Element(TASK_TAG)
        etree.SubElement(entry, TASK_ID_TAG).text = cancel.task_id
        etree.SubElement(entry, f"{{{IRTF_AGENT_NS}}}commuType").text = CommuType.TASK_CANCEL.value
        config = etree.Element(f"{{{IRTF_AGENT_NS}}}config")
        etree.SubElement(config, TASKS_TAG).append(entry)
        with self.sessions.editing(session_id):
            self.admission.run(principal, config, "merge")
        return self.get_task(principal, request.task_id)

    def provide_input(self, principal: Principal, request: ProvideInput, session_id: int = 0) -> Task:
        """Answer a task's ``input-required``: the edit goes through admission and the task resumes; returns it.

        `RpcError` data-missing for an unknown task, operation-failed when it already ended (app-tag
        ``task-ended``) or asks for no input (app-tag ``no-input-requested``), missing-element when the
        request provides nothing.
        """
        current = self.get_task(principal, request.task_id)
        path = f"/irtf-agent:tasks/task[task-id='{request.task_id}']"
        if current.status is not None and current.status.terminal:
            raise _ended(request.task_id, current.status, "it takes no more input")
        if current.status != TaskStatus.INPUT_REQUIRED:
            raise RpcError.operation_failed(
                f"task {request.task_id} is already running ({current.status or 'created'}): it asks for no input",
                path=path,
                app_tag=NO_INPUT_REQUESTED,
            )
        if not request.data_params and request.content is None:
            raise RpcError.missing_element(
                "msg-data", "provide data-params (msg-data) or a new content", path=path, error_type="application"
            )
        config = etree.Element(f"{{{IRTF_AGENT_NS}}}config")
        for param in request.data_params:
            config.append(param.to_xml())
        edit = Task(request.task_id, content=request.content, msg_data=[p.id for p in request.data_params])
        config.append(tasks_element([edit]))
        with self.sessions.editing(session_id):
            self.admission.run(principal, config, "merge")
        return self.get_task(principal, request.task_id)


def _ended(task_id: str, status: TaskStatus, what: str) -> RpcError:
    return RpcError.operation_failed(
        f"task {task_id} already ended as {status.value}: {what}",
        path=f"/irtf-agent:tasks/task[task-id='{task_id}']",
        app_tag=TASK_ENDED,
    )
