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

This module builds the agent and holds its life cycle and RPCs; the reads
are `an_agent.runtime.reads.DataReads` and the writes of running
`an_agent.runtime.task_writes.TaskWrites`, which `Operations` inherits.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from lxml import etree

from an_agent import metrics
from an_agent.clock import Clock
from an_agent.errors import RpcError, SchemaError
from an_agent.model import (
    IRTF_AGENT_NS,
    AgentProfile,
    DataParam,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    TaskResult,
)
from an_agent.runtime.access import Authorizer, PermitAll
from an_agent.runtime.admission import DATA_PARAMS_TAG, TASK_TAG, TASKS_TAG, TaskAdmission
from an_agent.runtime.behaviour import AgentInfo, Behaviour
from an_agent.runtime.candidate import Candidate
from an_agent.runtime.commits import ConfigOperations
from an_agent.runtime.context_records import ContextRecorder
from an_agent.runtime.datastore import Datastore
from an_agent.runtime.directory import Directory, DirectoryOperations
from an_agent.runtime.edit import YangSchema
from an_agent.runtime.large_data import DataPolicy, DataResolver
from an_agent.runtime.notifications import NotificationBus
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import (
    GetSchemaTemplate,
    PatchDecided,
    PatchDecision,
    SchemaTemplate,
)
from an_agent.runtime.results import check_result, label_result
from an_agent.runtime.schemas import SchemaService
from an_agent.runtime.sessions import SessionTable
from an_agent.runtime.task_writes import TaskWrites
from an_agent.runtime.tasks import TaskEngine
from an_agent.runtime.text_input import CompletingBehaviour, PayloadCompletion
from an_agent.runtime.workers import INPUT_WAIT
from an_agent.schemas.validate import ValidatedPayload
from an_agent.store.agent_store import AgentStore
from an_agent.yang.context import YangContext
from an_agent.yang.info import ModuleInfo

log = logging.getLogger(__name__)


class Operations(TaskWrites):
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
