"""The one admission pipeline for task changes, whatever the face.

A new task, whether it arrives as a ``/tasks/task`` entry in a NETCONF
``<edit-config>`` or as a typed `AssignTask` from another face, goes through
the same steps, in this order (`TaskAdmission.run`):

1. parse once: each new task entry becomes a `Task` (a typed request is already one);
2. authorize: the `Authorizer` sees the principal, ``create`` and the parsed task;
3. validate once: its structured payloads against the template in force for its
   client — outside the datastore lock, because sanitising a big ``other`` can
   take seconds;
4. commit, under the datastore lock: the edit is applied and YANG-validated
   (`Datastore.edit`), the rest of the diff (changed and removed units) is
   authorized, only what can race is re-checked (the task-id is still new —
   otherwise the edit is not an add of it — and the data-params the payload came
   from are unchanged), the behaviour may refuse (`Behaviour.check_assignment`),
   then the units are stored with the task's owner in one transaction;
5. schedule: the task's context record is written (`ContextRecorder`), the task
   engine stores ``created`` and hands the task to the behaviour;
6. notify: that status change is logged and sent to subscribers
   (``condition-notifications``), by the task engine, in the same step.

A task the pipeline could not prepare before the lock (a whole-tree edit, a
task-id named twice in one edit, a malformed entry that libyang will report)
is parsed and validated in step 4 instead; it is never validated twice.

The data-params of a task are made whole before validation (chunked pieces
joined, ``url`` data fetched from the allow-list: `an_agent.runtime.large_data`).

An edit of an existing task that adds ``msg-data`` entries has the
data-params it adds validated the same way, in step 4. When the task waits
for input (status ``input-required``) such an edit, or a new ``content``, is
the assigner's answer: it is handed to the task engine as a `ProvidedInput`
after commit, and the task resumes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from lxml import etree

from an_agent import stages
from an_agent.errors import RpcError
from an_agent.model import IRTF_AGENT_NS, CommuType, DataParam, Task
from an_agent.runtime.access import Access, AccessKind, Authorizer, PermitAll, Touched
from an_agent.runtime.behaviour import Behaviour, ProvidedInput
from an_agent.runtime.context_records import ContextRecorder
from an_agent.runtime.datastore import Datastore, PendingEdit
from an_agent.runtime.edit import NC_OPERATION, EditDiff, elements, stripped
from an_agent.runtime.large_data import DataResolver
from an_agent.runtime.principal import Principal
from an_agent.runtime.schemas import PayloadCheck, SchemaService
from an_agent.runtime.tasks import TaskEngine
from an_agent.runtime.text_input import PayloadCompletion
from an_agent.store.agent_store import AgentStore

TASKS_TAG = f"{{{IRTF_AGENT_NS}}}tasks"
TASK_TAG = f"{{{IRTF_AGENT_NS}}}task"
TASK_ID_TAG = f"{{{IRTF_AGENT_NS}}}task-id"
DATA_PARAMS_TAG = f"{{{IRTF_AGENT_NS}}}data-params"
_ADDING = ("merge", "create", "replace")


def task_path(task_id: str) -> str:
    """The instance identifier of a task entry (the datastore's unit key for it)."""
    return f"/irtf-agent:tasks/task[task-id='{task_id}']"


@dataclass
class _Prepared:
    """A new task admitted before the commit: parsed once, authorized, payloads validated once."""

    task: Task
    params: list[DataParam]
    check: PayloadCheck | None


@dataclass
class Committed:
    """What a committed edit did to tasks (each task parsed once)."""

    added: list[Task] = field(default_factory=list)
    changed: list[tuple[Task, Task]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    checks: list[PayloadCheck] = field(default_factory=list)
    inputs: dict[str, ProvidedInput] = field(default_factory=dict)
    """task-id -> the input an edit of a task waiting for it provides."""
    input_checks: list[PayloadCheck] = field(default_factory=list)


class TaskAdmission:
    """Runs edits of running through parse -> authorize -> validate -> commit -> schedule -> notify."""

    def __init__(
        self,
        datastore: Datastore,
        tasks: TaskEngine,
        behaviour: Behaviour,
        authorizer: Authorizer,
        store: AgentStore,
        context: ContextRecorder | None = None,
        resolver: DataResolver | None = None,
    ) -> None:
        self._datastore = datastore
        self._tasks = tasks
        self._behaviour = behaviour
        self._authorizer = authorizer
        self._store = store
        self._context = context
        self._resolver = resolver
        self.schemas: SchemaService | None = None
        self.completion: PayloadCompletion | None = None
        """Checks answers of tasks whose payload is being completed (`an_agent.runtime.text_input`)."""

    def run(
        self,
        principal: Principal,
        config: etree._Element,
        default_operation: str = "merge",
        new_tasks: Iterable[Task] | None = None,
        *,
        replace_all: bool = False,
        test_only: bool = False,
        system: bool = False,
    ) -> Committed:
        """Admit one edit of running (the children of ``config``); `RpcError` refuses all of it.

        Returns what the edit did to tasks (the new ones, parsed once).

        ``new_tasks`` are the tasks a typed request creates with this edit,
        already parsed (they are not parsed again); without it the task
        entries of ``config`` are parsed here. ``replace_all``: ``config``
        is the whole new running datastore (`Datastore.edit`). ``test_only``
        runs every step up to the commit (YANG validation, authorization,
        payload validation, the behaviour's check) and then changes nothing
        (``<validate>``, test-option ``test-only``). ``system``: the agent's
        own edit (a confirmed commit's rollback, restoring what was authorized
        before), not authorized again -- NACM rules may not lock the agent
        out of undoing a change.
        """
        authorizer: Authorizer = PermitAll() if system else self._authorizer
        in_edit = _data_params_in(config)
        candidates = self._new_task_entries(config, default_operation) if new_tasks is None else list(new_tasks)
        prepared: dict[str, _Prepared] = {}
        if candidates:
            self._authorize_new(authorizer, principal, candidates)
            if stages.ON:
                stages.mark("authorized")
            for task in candidates:
                params = self._params_of(task, in_edit)
                ready = _Prepared(task, params, self._validate(principal, task, params))
                if ready.check is not None and ready.check.completed:
                    ready.params = _with_defaults(config, params, ready.check.completed, in_edit)
                prepared[task.task_id] = ready
            if stages.ON:
                stages.mark("payloads-validated")
        with self._datastore.edit(config, default_operation, replace_all=replace_all) as pending:
            committed = self._commit(authorizer, principal, pending, prepared, in_edit, test_only)
        if not test_only:
            self._schedule(principal, committed)
        return committed

    # -- 1. parse once ----------------------------------------------------------
    def _new_task_entries(self, config: etree._Element, default_operation: str) -> list[Task]:
        """The task entries of an edit that would create a task, parsed; the rest is left to the commit."""
        entries: list[etree._Element] = []
        for container in elements(config):
            if container.tag != TASKS_TAG:
                continue
            inherited = container.get(NC_OPERATION, default_operation)
            entries.extend(e for e in container.iterchildren(TASK_TAG) if e.get(NC_OPERATION, inherited) in _ADDING)
        ids = [(entry.findtext(TASK_ID_TAG) or "").strip() for entry in entries]
        unique = [(i, e) for i, e in zip(ids, entries, strict=True) if i and ids.count(i) == 1]
        existing = {
            (entry.findtext(TASK_ID_TAG) or "").strip()
            for entry in self._datastore.find_entries(TASK_TAG, ("task-id",), [(i,) for i, _ in unique], TASKS_TAG)
        }
        tasks: list[Task] = []
        for task_id, entry in unique:
            if task_id in existing:
                continue  # a change of a stored task, not an assignment
            try:
                tasks.append(Task.from_xml(stripped(entry)))
            except RpcError:
                continue  # malformed: libyang reports it precisely at commit
        return tasks

    def _params_of(self, task: Task, in_edit: dict[str, DataParam]) -> list[DataParam]:
        """The data-params ``task`` refers to (from the edit, else stored ones), made whole (`DataResolver`)."""
        missing = [i for i in task.msg_data if i not in in_edit]
        stored = {p.id: p for p in self._stored_params(missing)}
        params = [p for p in (in_edit.get(i) or stored.get(i) for i in task.msg_data) if p is not None]
        return params if self._resolver is None else self._resolver.resolve(params)

    def _stored_params(self, ids: list[str]) -> list[DataParam]:
        if not ids:
            return []
        found = self._datastore.find_entries(DATA_PARAMS_TAG, ("id",), [(i,) for i in dict.fromkeys(ids)])
        return [DataParam.from_xml(element) for element in found]

    # -- 2. authorize -----------------------------------------------------------
    def _authorize_new(self, authorizer: Authorizer, principal: Principal, tasks: list[Task]) -> None:
        touched = tuple(Touched("create", task_path(t.task_id), None, t, None) for t in tasks)
        authorizer.authorize(Access(principal, "create", touched))

    def _authorize_rest(
        self, authorizer: Authorizer, principal: Principal, diff: EditDiff, tasks: Committed, authorized: set[str]
    ) -> None:
        """Authorize every unit of the diff except the new tasks already authorized before validation."""
        parsed_new = {t.task_id: t for t in tasks.added}
        parsed_changed = {new.task_id: new for _, new in tasks.changed}
        touched: list[Touched] = []
        for key, element in diff.added.items():
            task_id = _task_id_of(element)
            if task_id is not None and task_id in authorized:
                continue
            touched.append(Touched("create", key, element, parsed_new.get(task_id or ""), None))
        for key, (_, new) in diff.changed.items():
            task_id = _task_id_of(new)
            owner = self._store.task_owner(task_id) if task_id is not None else None
            touched.append(Touched("update", key, new, parsed_changed.get(task_id or ""), owner))
        for key, old in diff.removed.items():
            task_id = _task_id_of(old)
            owner = self._store.task_owner(task_id) if task_id is not None else None
            touched.append(Touched("delete", key, old, None, owner))
        if not touched:
            return
        kinds = {t.kind for t in touched}
        kind: AccessKind = next(iter(kinds)) if len(kinds) == 1 else "update"
        authorizer.authorize(Access(principal, kind, tuple(touched)))

    # -- 3. validate once ---------------------------------------------------------
    def _validate(self, principal: Principal, task: Task, params: list[DataParam]) -> PayloadCheck | None:
        _check_subscription(task)
        if self.schemas is None or not task.msg_data:
            return None
        return self.schemas.validate_task(task, params, task.send_from or principal.name)

    # -- 4. commit ----------------------------------------------------------------
    def _commit(
        self,
        authorizer: Authorizer,
        principal: Principal,
        pending: PendingEdit,
        prepared: dict[str, _Prepared],
        in_edit: dict[str, DataParam],
        test_only: bool = False,
    ) -> Committed:
        diff = pending.diff
        out = Committed()
        authorized = set(prepared)  # new tasks authorized before validation
        if not diff:
            if not test_only:
                pending.commit()
            return out
        for element in diff.added.values():
            if element.tag != TASK_TAG:
                continue
            task_id = _task_id_of(element) or ""
            ready = prepared.get(task_id)
            if ready is None:  # not seen before the lock: parse and validate it now, once
                task = Task.from_xml(element)
                params = self._params_of(task, {})
                ready = _Prepared(task, params, self._validate(principal, task, params))
                prepared[task_id] = ready
            else:
                current = self._params_of(ready.task, {})
                if current != ready.params:
                    # Its data-params changed since validation (a partial edit of one, or a race): once more.
                    ready.params = current
                    ready.check = self._validate(principal, ready.task, current)
            out.added.append(ready.task)
            if ready.check is not None:
                out.checks.append(ready.check)
        for old, new in diff.changed.values():
            if new.tag == TASK_TAG:
                old_task, new_task = Task.from_xml(old), Task.from_xml(new)
                out.changed.append((old_task, new_task))
        for element in diff.removed.values():
            if element.tag == TASK_TAG:
                out.removed.append(_task_id_of(element) or "")
        self._authorize_rest(authorizer, principal, diff, out, authorized)
        for old_task, new_task in out.changed:
            self._changed_input(principal, old_task, new_task, in_edit, out)
        if test_only:
            with self._accepted(out):
                pass
            return out  # a test stores nothing: the edit is left uncommitted, Datastore.edit rolls it back
        for check in out.checks:
            self._tasks.set_payload(check.task_id, next(iter(check.payloads.values()), None))
        try:
            with self._accepted(out, keep=True):
                pending.commit(task_owners={task.task_id: principal.name for task in out.added})
        except BaseException:
            for check in out.checks:
                self._tasks.set_payload(check.task_id, None)
            raise
        return out

    @contextmanager
    def _accepted(self, out: Committed, keep: bool = False) -> Iterator[None]:
        """The behaviour's and the engine's checks of the new and changed tasks, around the block (the commit).

        What `Behaviour.check_assignment` took for a task goes back at once (`Behaviour.released`) when a
        later check or the block fails, and in any case unless ``keep`` (a test stores nothing)."""
        accepted: list[Task] = []
        kept = False
        try:
            for task in out.added:
                self._behaviour.check_assignment(task)
                accepted.append(task)
            for old_task, new_task in out.changed:
                self._tasks.check_change(old_task, new_task)
            yield
            kept = keep
        finally:
            if not kept:
                for task in accepted:
                    self._behaviour.released(task)

    def _changed_input(
        self, principal: Principal, old: Task, new: Task, in_edit: dict[str, DataParam], out: Committed
    ) -> None:
        """Validate the data-params an edit adds to a stored task; note it as input when the task waits for some."""
        added = [i for i in new.msg_data if i not in old.msg_data]
        if not added and new.content == old.content:
            return
        params = self._params_of(Task(new.task_id, msg_data=added), in_edit)
        completion = self.completion if self._tasks.awaiting_input(new.task_id) else None
        if completion is not None and completion.check(new.task_id, params):
            check = None  # keys towards a payload: checked merged with what is known (text_input)
        else:
            check = self._validate(principal, Task(new.task_id, send_from=new.send_from, msg_data=added), params)
        if check is not None:
            out.input_checks.append(check)
        if self._tasks.awaiting_input(new.task_id):
            out.inputs[new.task_id] = ProvidedInput(
                new, tuple(params), dict(check.payloads) if check is not None else {}, principal.name
            )

    # -- 5./6. schedule and notify ---------------------------------------------------
    def _schedule(self, principal: Principal, committed: Committed) -> None:
        if self.schemas is not None:
            for check in [*committed.checks, *committed.input_checks]:
                self.schemas.accept(check)
        for task in committed.added:
            self._tasks.admit(task)
        for task in committed.added:
            # After "created" reached the subscribers' transports: the record is a second datastore
            # edit, which must neither delay that notification nor compete with its fan-out.
            if self._context is not None and task.commu_type != CommuType.TASK_CANCEL:
                self._tasks.wait_announced(task.task_id)
                self._context.assigned(task, principal.name)
                if stages.ON:
                    stages.mark("context-recorded")
        for old, new in committed.changed:
            self._tasks.update(old, new, committed.inputs.get(new.task_id))
        for task_id in committed.removed:
            self._tasks.forget(task_id)


def _check_subscription(task: Task) -> None:
    """Refuse a ``task-subscription`` this agent cannot honour, rather than store it and stay silent.

    Supported: protocol NETCONF (any case) with method ``create-subscription``
    (RFC 5277): the assigner subscribes, and every status change of the task
    is a ``condition-notifications`` on its sessions.
    """
    sub = task.subscription
    if sub is None:
        return
    where = f"{task_path(task.task_id)}/task-subscription"
    if sub.protocol is not None and sub.protocol.strip().upper() != "NETCONF":
        raise RpcError.invalid_value(
            f"task {task.task_id}: subscript-protocol {sub.protocol!r} is not supported; this agent notifies "
            "over NETCONF (subscript-protocol NETCONF, subscript-method create-subscription)",
            path=f"{where}/subscript-protocol",
            app_tag="subscription-not-supported",
        )
    if sub.method is not None and sub.method.strip() != "create-subscription":
        raise RpcError.invalid_value(
            f"task {task.task_id}: subscript-method {sub.method!r} is not supported over NETCONF; "
            "use create-subscription (RFC 5277)",
            path=f"{where}/subscript-method",
            app_tag="subscription-not-supported",
        )


def _task_id_of(element: etree._Element) -> str | None:
    """The task-id of a task entry, None for any other unit."""
    if element.tag != TASK_TAG:
        return None
    return (element.findtext(TASK_ID_TAG) or "").strip()


def _with_defaults(
    config: etree._Element, params: list[DataParam], completed: dict[str, str], in_edit: dict[str, DataParam]
) -> list[DataParam]:
    """Write the payloads completed with default values into the edit's data-params; the params as they will be.

    Only an inline data-param sent in this edit is rewritten (one sent
    earlier, in pieces or by url keeps its data; the behaviour still gets the
    completed payload).
    """
    out: list[DataParam] = []
    for param in params:
        text = completed.get(param.id)
        sent = in_edit.get(param.id)
        element = _edit_entry(config, param.id) if text is not None and sent is not None and not sent.chunked else None
        data = None if element is None else element.find(f"{{{IRTF_AGENT_NS}}}data")
        if data is None or sent is None or sent.url is not None:
            out.append(param)
            continue
        data.text = text
        out.append(replace(param, data=text))
    return out


def _edit_entry(config: etree._Element, param_id: str) -> etree._Element | None:
    for element in elements(config):
        if element.tag == DATA_PARAMS_TAG and (element.findtext(f"{{{IRTF_AGENT_NS}}}id") or "").strip() == param_id:
            return element
    return None


def _data_params_in(config: etree._Element) -> dict[str, DataParam]:
    """The complete data-param entries an edit carries, parsed (partial ones are left to the commit)."""
    found: dict[str, DataParam] = {}
    for element in elements(config):
        if element.tag != DATA_PARAMS_TAG or element.get(NC_OPERATION) in ("delete", "remove"):
            continue
        try:
            param = DataParam.from_xml(stripped(element))
        except RpcError:
            continue
        found[param.id] = param
    return found
