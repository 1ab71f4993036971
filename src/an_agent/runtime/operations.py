"""`Operations`: the agent itself, protocol-neutral — the facade every face calls.

Each method takes a `Principal` and a typed request (`an_agent.runtime.requests`)
and returns a typed result or raises one `RpcError`. No method does I/O of
its own or knows a wire format: the NETCONF face (`an_agent.nc.face`)
translates ``<rpc>`` elements into these calls and the results back; the A2A
face will call the same methods.

- Writes of running go through one pipeline (`an_agent.runtime.admission`):
  `edit_config` (a generic YANG edit), `assign_task` and `cancel_task` (typed).
- Reads go through `read`, where the `Authorizer`'s read view prunes the tree
  per principal.
- RPCs (`negotiate`, `subscribe`, `get_schema_template`, `decide_patch`, the
  session operations) are authorized as ``exec`` with their RPC name.
- Per-session state (the datastore locks, subscriptions) lives in `SessionTable`,
  keyed by the id the face gives each session.
- The candidate datastore, ``<commit>`` (confirmed or not), ``<validate>``,
  ``<copy-config>`` and ``<lock>``/``<unlock>`` are `config`
  (`an_agent.runtime.commits.ConfigOperations`), over the same admission.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from lxml import etree

from an_agent import metrics
from an_agent.access.nacm import NACM_NS, NACM_PATH
from an_agent.clock import Clock
from an_agent.errors import RpcError, SchemaError
from an_agent.model import (
    AN_AGENT_DIRECTORY_NS,
    IRTF_AGENT_NS,
    AgentProfile,
    CommuType,
    DataParam,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    TaskResult,
    TaskStatus,
    tasks_element,
)
from an_agent.runtime.access import Access, AccessKind, Authorizer, PermitAll, Touched
from an_agent.runtime.admission import DATA_PARAMS_TAG, TASK_ID_TAG, TASK_TAG, TASKS_TAG, TaskAdmission
from an_agent.runtime.behaviour import AgentInfo, Behaviour
from an_agent.runtime.candidate import Candidate
from an_agent.runtime.commits import ConfigOperations
from an_agent.runtime.context_records import ContextRecorder
from an_agent.runtime.datastore import Datastore
from an_agent.runtime.directory import Directory, DirectoryOperations
from an_agent.runtime.edit import NC_OPERATION, YangSchema, elements
from an_agent.runtime.large_data import DataPolicy, DataResolver
from an_agent.runtime.notifications import NotificationBus
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import (
    AssignTask,
    CancelTask,
    EditConfig,
    GetSchemaTemplate,
    PatchDecided,
    PatchDecision,
    ProvideInput,
    ReadScope,
    SchemaTemplate,
)
from an_agent.runtime.results import check_result, label_result
from an_agent.runtime.schemas import SchemaService
from an_agent.runtime.served import SessionsAndEvents
from an_agent.runtime.sessions import SessionTable
from an_agent.runtime.tasks import TaskEngine
from an_agent.runtime.text_input import AssignText, CompletingBehaviour, PayloadCompletion
from an_agent.runtime.workers import INPUT_WAIT
from an_agent.schemas.validate import ValidatedPayload
from an_agent.store.agent_store import AgentStore, TaskState
from an_agent.yang.context import WithDefaults, YangContext
from an_agent.yang.info import ModuleInfo

log = logging.getLogger(__name__)


class Operations(SessionsAndEvents):
    """One agent: datastore, tasks, notifications, schemas and behaviour behind typed operations."""

    def __init__(
        self,
        profile: AgentProfile,
        behaviour: Behaviour,
        store: AgentStore,
        clock: Clock,
        yang: YangContext | None = None,
        task_workers: int = 8,
        authorizer: Authorizer | None = None,
        sync_wait: float = 30.0,
        input_wait: float | None = INPUT_WAIT,
        data_policy: DataPolicy | None = None,
    ) -> None:
        self.profile = profile
        self.sync_wait = sync_wait
        """How long (real seconds) the reply to a creating edit waits for a ``task-async false`` task's end."""
        self.yang = yang or YangContext.default()
        self.clock = clock
        self.store = store
        self.authorizer: Authorizer = authorizer or PermitAll()
        self.datastore = Datastore(YangSchema(self.yang), store)
        self.bus = NotificationBus(store, clock)
        self.behaviour = behaviour
        self.completion = PayloadCompletion(profile, clock.now)
        """Tasks asked for in words: their payload mapped from the text or asked for (`assign_text`)."""
        completing = CompletingBehaviour(
            behaviour, self.completion, lambda i, p: self.tasks.set_payload(i, p), self._data_params, input_wait
        )
        self.tasks = TaskEngine(completing, store, self.bus, clock, profile.name, workers=task_workers)
        behaviour.bind(
            AgentInfo(
                profile,
                clock,
                data_params=self._data_params,
                payload=self.tasks.payload,
                learned=self._learned,
                check_result=self._check_result,
                validate=self._validate,
            )
        )
        self.context = ContextRecorder(self.datastore, clock, profile.name)
        self.data = DataResolver(store.path.parent, data_policy)
        self.admission = TaskAdmission(
            self.datastore, self.tasks, completing, self.authorizer, store, self.context, self.data
        )
        self.tasks.ended_hook = self.context.answered
        self.tasks.watch.skill_of = self._skill_of
        self.sessions = SessionTable()
        self.config = ConfigOperations(
            self.datastore,
            Candidate(self.datastore, YangSchema(self.yang)),
            self.admission,
            self.sessions,
            self.authorizer,
            self.yang.validate_config,
        )
        """The candidate datastore, commit and confirmed commit, validate, copy-config."""
        self.schemas: SchemaService | None = None
        self.directory: DirectoryOperations | None = None
        """The directory role's registry (`attach_directory`), None for other agents."""
        self._profile_xml = profile.to_xml()
        self.log_created = store.log_created(clock.now())
        """When the notification log began (RFC 5277 ``replayLogCreationTime``)."""

    # -- life cycle -------------------------------------------------------------
    def attach_schemas(self, service: SchemaService) -> None:
        """Validate structured payloads on assignment, decorate results, serve templates."""
        self.schemas = service
        self.admission.schemas = service
        self.admission.completion = self.completion
        self.completion.schemas = service
        self.tasks.result_hook = self._finished_result

    def attach_directory(self, directory: Directory) -> None:
        """Play the directory role: serve ``an-agent-directory`` (register, deregister, find, state)."""
        self.directory = DirectoryOperations(directory, self._exec)

    def _learned(self) -> None:
        """`AgentInfo.learned`: wait for the schema service's learning queue (no service: nothing to wait for)."""
        if self.schemas is not None and self.schemas.learn:
            self.schemas.drain()

    def _check_result(self, task_id: str, data: dict[str, Any]) -> None:
        """`AgentInfo.check_result`: against the response schema of the skill that took the task's payload."""
        check_result(self.profile, self.schemas, self.tasks.payload(task_id), data)

    def _validate(self, client_id: str, envelope: dict[str, Any]) -> ValidatedPayload:
        """`AgentInfo.validate`: against the template the schema service serves ``client_id``."""
        if self.schemas is None:
            raise SchemaError("this agent serves no schema templates (schemas off)", ["schema_id: not served"])
        return self.schemas.engine.validate(client_id, envelope)

    def _finished_result(self, task_id: str, result: TaskResult) -> TaskResult:
        """A finished task's result: labelled with its skill's response schema, then decorated with suggestions."""
        assert self.schemas is not None
        labelled = label_result(self.profile, self.schemas, self.tasks.payload(task_id), result)
        return self.schemas.decorate_result(task_id, labelled)

    def _skill_of(self, task_id: str) -> str:
        """The profile skill whose input modes take the task's payload schema (the only skill, else none)."""
        payload = self.tasks.payload(task_id)
        if payload is not None:
            wanted = f"application/json;schema={payload.schema_id}"
            for skill in self.profile.skills:
                if wanted in skill.input_modes:
                    return skill.name
        return self.profile.skills[0].name if len(self.profile.skills) == 1 else "none"

    def start(self) -> None:
        """Resume tasks that were running when the agent last stopped."""
        tasks = self.datastore.find(IRTF_AGENT_NS, "tasks")
        self.tasks.resume([] if tasks is None else [Task.from_xml(e) for e in tasks.iterchildren(TASK_TAG)])

    def warm_text_mapping(self) -> None:
        """Map a sample text once (blocking): the embedding model and the input templates' anchors load
        now, so a client's first words are not the ones that wait seconds for them. Nothing to do when
        no skill takes an input schema; a failure is only logged (the first real text will say it)."""
        try:
            if self.completion.input_templates():
                self.completion.map("warm up")
        except Exception:
            log.exception("warming the text mapping up failed")

    def close(self) -> None:
        self.config.close()
        self.tasks.close()  # first: running behaviours may still report results
        if self.schemas is not None:
            self.schemas.close()
        self.bus.close()

    def modules(self) -> list[ModuleInfo]:
        """The YANG modules this agent implements (capabilities, RFC 6022 schemas)."""
        return self.yang.modules()

    def _data_params(self, ids: Sequence[str]) -> list[DataParam]:
        """The ``data-params`` entries with these ids, in the order asked, made whole (see `AgentInfo.data_params`)."""
        found = self.datastore.find_entries(DATA_PARAMS_TAG, ("id",), [(i,) for i in dict.fromkeys(ids)])
        return self.data.resolve([DataParam.from_xml(element) for element in found])

    def close_session(self, session_id: int) -> None:
        """A session ended: release its locks, end its subscription, roll back its unconfirmed commit."""
        super().close_session(session_id)
        self.config.session_closed(session_id)

    # -- reads ------------------------------------------------------------------
    def read(
        self,
        principal: Principal,
        scope: ReadScope | None = None,
        config_only: bool = False,
        extra: Iterable[etree._Element] = (),
        datastore: str = "running",
        with_defaults: WithDefaults = "explicit",
    ) -> list[etree._Element]:
        """The data tree ``principal`` may read, as top-level elements (private copies).

        Config and state (the profile, task status and results, schema
        templates) unless ``config_only``. Only what ``scope`` can select is
        built. ``extra`` are a face's own state trees (e.g. NETCONF
        monitoring) that go through the same read view. ``datastore``
        ``candidate`` reads the candidate (config only). ``with_defaults``:
        the RFC 6243 mode, applied to the agent's data (not to ``extra``)
        before the read view, so NACM judges default nodes as any other.
        """
        scope = scope or ReadScope()
        if datastore == "candidate":
            candidate = [e for e in elements(self.config.candidate.snapshot()) if scope.wants(e)]
            both = [*self._defaults(candidate, with_defaults, True), *(e for e in extra if scope.wants(e))]
            return self.authorizer.read_view(principal, both)
        top: list[etree._Element] = []
        if not config_only and scope.wants(self._profile_xml):
            agent = copy.deepcopy(self._profile_xml)
            if self.schemas is not None and scope.templates:
                # Personal patches only to their client (the reader or an agent it speaks for) or an admin.
                agent.append(self.schemas.templates_state(principal.may_read_client))
            top.append(agent)
        top.extend(self.datastore.top_level(scope.wants, scope.task_keys))
        if not config_only and self.directory is not None and scope.wants_name(AN_AGENT_DIRECTORY_NS, "directory"):
            top.append(self.directory.registry.state())
        if not config_only:
            for element in top:
                if element.tag == TASKS_TAG:
                    for entry in element.iterchildren(TASK_TAG):
                        entry.extend(self.tasks.state_elements(entry.findtext(TASK_ID_TAG) or ""))
        # The face's own trees are complete as built: schema defaults added to them would claim values
        # the agent does not keep (e.g. RFC 6022 statistics counters of 0).
        top = self._defaults(top, with_defaults, config_only)
        top.extend(e for e in extra if scope.wants(e))
        return self.authorizer.read_view(principal, top)

    def read_data(
        self,
        principal: Principal,
        scope: ReadScope,
        config_only: bool,
        extra: Iterable[etree._Element],
        datastore: str,
        with_defaults: WithDefaults,
    ) -> list[etree._Element]:
        """RFC 8526 ``<get-data>``: `read`, authorized as ``exec`` of ``ietf-netconf-nmda:get-data`` first."""
        self._exec(principal, "ietf-netconf-nmda:get-data")
        return self.read(principal, scope, config_only, extra, datastore=datastore, with_defaults=with_defaults)

    def _defaults(self, top: list[etree._Element], mode: WithDefaults, config_only: bool) -> list[etree._Element]:
        if mode == "explicit" or not top:
            return top
        xml = "".join(etree.tostring(e, encoding="unicode") for e in top)
        holder = etree.fromstring(f"<r>{self.yang.with_defaults(xml, mode, config_only)}</r>")
        return list(elements(holder))

    def data_version(self) -> tuple[int, int, int, int, int]:
        """A value that changes whenever what `read` returns may change (for a face's reply memo).

        Covers config commits (the datastore), task state (status and result,
        ``config false``, which change without a commit) and the schema
        templates, the directory's registrations and the candidate. Each part
        is bumped after its change is visible, so a reply built after reading version v holds data at least as new as v.
        The profile and the face's own extra trees do not change while the
        agent runs.
        """
        schemas = self.schemas.version if self.schemas is not None else -1
        directory = self.directory.registry.version if self.directory is not None else -1
        return (self.datastore.version, self.tasks.version, schemas, directory, self.config.candidate.version)

    def keys_of(self, element: etree._Element) -> tuple[str, ...]:
        """List key names when ``element`` is a list entry of the data tree, else () (for filters)."""
        return self.datastore.keys_of(element)

    def get_task(self, principal: Principal, task_id: str) -> Task:
        """taskResultQuery: the task with its status and result; `RpcError` data-missing when unknown."""
        scope = ReadScope(frozenset({(IRTF_AGENT_NS, "tasks")}), frozenset({task_id}), False)
        for element in self.read(principal, scope):
            for entry in element.iterchildren(TASK_TAG):
                return Task.from_xml(entry)
        raise RpcError.data_missing(f"there is no task {task_id}", f"/irtf-agent:tasks/task[task-id='{task_id}']")

    # -- writes (one admission pipeline) ------------------------------------------
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

    # -- RPCs -------------------------------------------------------------------
    def negotiate(self, principal: Principal, request: NegotiationRequest) -> NegotiationResult:
        """task-negotiate (FEASIBILITY before assignment, FULFILLMENT of a result), answered by the behaviour."""
        self._exec(principal, "irtf-agent:task-negotiate")
        task: Task | None = None
        if request.task_id:
            entries = self.datastore.find_entries(TASK_TAG, ("task-id",), [(request.task_id,)], TASKS_TAG)
            if entries:
                task = self.tasks.with_state(Task.from_xml(entries[0]))
        try:
            result = self.behaviour.negotiate(request, task)
        except Exception:
            metrics.negotiation(request.type.name, "error")
            raise
        answer = result.feasible if request.type == NegotiationType.FEASIBILITY else result.fulfilled
        metrics.negotiation(request.type.name, "yes" if answer else "no")
        self.context.negotiated(request, principal.name)
        return result

    def invoke(self, principal: Principal, operation: etree._Element) -> list[etree._Element] | None:
        """`Served.invoke`: an agent has no RPCs beyond those the face carries (task-negotiate, schemas, directory)."""
        q = etree.QName(operation)
        raise RpcError.operation_not_supported(f"RPC {q.localname} of module {q.namespace} is not implemented")

    def _schema_service(self) -> SchemaService:
        if self.schemas is None:
            raise RpcError.operation_not_supported("this agent serves no scenario schemas", error_type="application")
        return self.schemas

    def get_schema_template(self, principal: Principal, request: GetSchemaTemplate) -> SchemaTemplate:
        """The scenario template the client sees (its patches applied).

        The client is the caller itself unless ``request.client_id`` names
        another: allowed only to an administrator, or for an agent name the
        caller may speak for (`Principal.agent_names`), because per-client
        patches are that client's own (draft-zhou 6: personal patches).
        `RpcError` access-denied otherwise.
        """
        self._exec(principal, "an-agent-schema:get-schema-template")
        client_id = request.client_id or principal.name
        if not principal.may_read_client(client_id):
            raise RpcError.access_denied(
                f"{principal.name} may not read the template as client {client_id!r}: personal schema patches are "
                "served only to their client or an administrator",
                "/an-agent-schema:get-schema-template/client-id",
            )
        return self._schema_service().get_schema_template(replace(request, client_id=client_id), principal.name)

    def decide_patch(self, principal: Principal, decision: PatchDecision) -> PatchDecided | None:
        """Approve/reject a schema patch or withdraw a key (schema administrators only)."""
        self._exec(principal, f"an-agent-schema:{decision.kind}")
        return self._schema_service().decide(decision, principal.name)


TASK_ENDED = "task-ended"
"""App-tag of the operation-failed refusing a change to a task that already ended (cancel, input)."""
NO_INPUT_REQUESTED = "no-input-requested"
"""App-tag of the operation-failed refusing input for a running task that asks for none."""


def _ended(task_id: str, status: TaskStatus, what: str) -> RpcError:
    return RpcError.operation_failed(
        f"task {task_id} already ended as {status.value}: {what}",
        path=f"/irtf-agent:tasks/task[task-id='{task_id}']",
        app_tag=TASK_ENDED,
    )
