"""`AgentClient`: the draft's task operations as typed calls over one NETCONF session.

Each commuType maps onto one NETCONF exchange (DESIGN.md):

==========================  ============================================================
CapabilityRequest           `profile`: ``<get>`` of /irtf-agent:agent
taskAssign                  `assign_task`: ``<edit-config>`` creating /tasks/task
taskCancel                  `cancel_task`: ``<edit-config>`` merge of commuType=taskCancel
taskResultQuery             `get_task` / `list_tasks`: ``<get>`` of /tasks
Feasibility/Fulfillment     `negotiate`: the ``task-negotiate`` RPC; `fulfilment` judges the
                            result by the requester's criteria before it negotiates
taskResultSubscribe/Notify  `watch`: ``<create-subscription>``, condition-notifications
==========================  ============================================================

Structured payloads (draft-zhou section 5, the client half of schema negotiation) go through
``client.schemas``, a `SchemaClient` on the same session.

All XML comes from `an_agent.model`; errors are those of `NetconfClient`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from types import TracebackType

from an_agent.errors import RpcError
from an_agent.model import (
    AN_AGENT_TRACE_NS,
    IRTF_AGENT_NS,
    NETCONF_BASE_NS,
    AgentProfile,
    CommuType,
    ConditionNotification,
    DataParam,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    tasks_element,
)
from an_agent.model._xml import child, leaf, root
from an_agent.model.chunks import assignment_edits
from an_agent.model.profile import PROFILE_MEMBERS
from an_agent.nc.client import DEFAULT_PORT, NetconfClient
from an_agent.nc.schema_client import (
    NegotiatedTemplate,
    SchemaClient,
    SchemaUpdate,
    schema_update_suggestions,
)
from an_agent.nc.subscription import Notification, NotificationKind
from an_agent.schemas.fulfilment import Check, Expectation, Fulfilment, fulfilment_request_content

__all__ = ["AgentClient", "NegotiatedTemplate", "SchemaClient", "SchemaUpdate", "schema_update_suggestions"]


class AgentClient:
    """Typed access to one agent. Owns its `NetconfClient`; close it with `close` or a ``with`` block."""

    def __init__(self, netconf: NetconfClient) -> None:
        self.netconf = netconf
        self.schemas = SchemaClient(netconf, self.assign_task)
        """Structured payloads: negotiated templates, payload building, patch decisions."""
        self._traces: bool | None = None  # `carries_traces`, from the hello (asked once)

    @classmethod
    def connect(
        cls,
        host: str,
        port: int = DEFAULT_PORT,
        *,
        username: str,
        password: str | None = None,
        key_filename: str | None = None,
        timeout: float = 30.0,
        hostkey_verify: bool = False,
    ) -> AgentClient:
        """Open a session to an agent; arguments and errors as `NetconfClient.connect`."""
        return cls(
            NetconfClient.connect(
                host,
                port,
                username=username,
                password=password,
                key_filename=key_filename,
                timeout=timeout,
                hostkey_verify=hostkey_verify,
            )
        )

    def __enter__(self) -> AgentClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the session politely (`NetconfClient.close`)."""
        self.netconf.close()

    def abort(self) -> None:
        """Drop the session without ``<close-session>`` (`NetconfClient.abort`)."""
        self.netconf.abort()

    # ---- CapabilityRequest ------------------------------------------------------------------

    def profile(self) -> AgentProfile:
        """The agent's profile (``<get>`` of /irtf-agent:agent, the draft's nodes only).

        The filter names the draft's profile nodes one by one, so that
        augmentations of /agent (an-agent-schema's templates, several kB) are
        neither built nor sent for a CapabilityRequest.
        """
        filter_ = root("agent")
        for member in PROFILE_MEMBERS:
            child(filter_, member)
        return AgentProfile.from_xml(self.netconf.get(filter=filter_))

    # ---- tasks --------------------------------------------------------------------------------

    def assign_task(self, task: Task, data_params: Iterable[DataParam] = ()) -> None:
        """Create the task (commuType taskAssign unless set), with the data-params it refers to.

        One ``<edit-config>``: the data-params are merged and the task is
        created in the same transaction, so its ``msg-data`` references
        resolve. An existing task-id is refused by the agent (data-exists).
        Data above `an_agent.model.chunks.CHUNK_CHARS` goes in ``chunked``
        pieces, in edits ahead of the one creating the task.
        """
        if task.commu_type is None:
            task = replace(task, commu_type=CommuType.TASK_ASSIGN)
        if task.traceparent is not None and not self.carries_traces():
            task = replace(task, traceparent=None)  # an agent of the draft alone: it would refuse the leaf
        for config in assignment_edits(task, list(data_params)):  # large data in pieces, ahead of the task
            self.netconf.edit_config(config)

    def carries_traces(self) -> bool:
        """Whether the agent implements ``an-agent-trace`` (its hello lists the module): only then does a
        task go to it with its ``traceparent`` (`an_agent.tracing`)."""
        if self._traces is None:
            self._traces = any(AN_AGENT_TRACE_NS in c for c in self.netconf.server_capabilities)
        return self._traces

    def ensure_task(self, task: Task, data_params: Iterable[DataParam] = ()) -> bool:
        """Create the task unless the agent holds its task-id already: the safe re-send of an assignment.

        For a `assign_task` whose outcome is unknown (the session broke or timed out after the request
        left): ``<get>`` the task first and create it only when the agent answers data-missing; a
        data-exists refusal of the creation (it landed meanwhile) counts as created too. Returns True
        when this call created the task, False when it was there. Task-ids name one task per assigner
        (the draft's key), so an existing id is this assignment, never another one.
        """
        try:
            self.get_task(task.task_id)
            return False
        except RpcError as exc:
            if exc.error_tag != "data-missing":
                raise
        try:
            self.assign_task(task, data_params)
        except RpcError as exc:
            if exc.error_tag == "data-exists":
                return False
            raise
        return True

    def get_task(self, task_id: str) -> Task:
        """The task with its status and result (taskResultQuery).

        Raises RpcError data-missing when the agent has no such task.
        """
        filter_ = root("tasks")
        leaf(child(filter_, "task"), "task-id", task_id)
        tasks = Task.all_from_xml(self.netconf.get(filter=filter_))
        for task in tasks:
            if task.task_id == task_id:
                # Patches apply to this client now: the next payload must be built on the new template.
                for suggestion in schema_update_suggestions(task):
                    self.schemas.forget(suggestion["schema_id"])
                return task
        raise RpcError.data_missing(
            f"the agent has no task {task_id!r}", path=f"/irtf-agent:tasks/task[task-id={_xpath_literal(task_id)}]"
        )

    def list_tasks(self) -> list[Task]:
        """Every task the agent holds, with status and result, in the agent's order."""
        return Task.all_from_xml(self.netconf.get(filter=root("tasks")))

    def cancel_task(self, task_id: str) -> None:
        """Cancel a task (taskCancel): merge commuType=taskCancel into its entry; it stays queryable."""
        change = tasks_element([Task(task_id, commu_type=CommuType.TASK_CANCEL)])
        # default-operation none + merge on the leaf only: cancelling a task
        # that does not exist is then data-missing, never a half-made new task.
        commu_type = change.find(f"{{{IRTF_AGENT_NS}}}task/{{{IRTF_AGENT_NS}}}commuType")
        assert commu_type is not None
        commu_type.set(f"{{{NETCONF_BASE_NS}}}operation", "merge")
        self.netconf.edit_config(change, default_operation="none")

    def provide_input(self, task_id: str, data_params: Iterable[DataParam] = (), content: str | None = None) -> None:
        """Answer the task's ``input-required``: add ``data_params`` to its ``msg-data`` and/or set a new
        ``content``, in one edit (the agent refuses it, operation-failed, when the task asks for no input)."""
        params = list(data_params)
        edit = tasks_element([Task(task_id, content=content, msg_data=[p.id for p in params])])
        self.netconf.edit_config([*(p.to_xml(operation="merge") for p in params), edit])

    def put_data_param(self, param: DataParam) -> None:
        """Create or update a ``data-params`` entry (merge)."""
        self.netconf.edit_config(param.to_xml(operation="merge"))

    # ---- negotiation ----------------------------------------------------------------------------

    def negotiate(self, request: NegotiationRequest) -> NegotiationResult:
        """Run ``task-negotiate`` (FEASIBILITY or FULFILLMENT) and return the agent's answer."""
        return NegotiationResult.from_xml(self.netconf.call(request.to_xml()))

    def fulfilment(
        self, task_id: str, expectation: Expectation | None = None, check: Check | None = None
    ) -> Fulfilment:
        """FULFILLMENT judged by this requester: read the task, judge its result, tell the executor.

        ``expectation`` defaults to the task's own ``expected-response`` (`Expectation.parse`); ``check``
        is the requester's extra outcome criterion. The criteria go to the agent in a FULFILLMENT
        ``task-negotiate`` (so it sees what it is judged by); its answer is recorded in the returned
        `Fulfilment`, whose verdict is the requester's judgement, not the executor's.
        """
        task = self.get_task(task_id)
        expectation = expectation if expectation is not None else Expectation.parse(task.expected_response)
        judgement = expectation.judge(task, check)
        answer = self.negotiate(
            NegotiationRequest(
                task_id,
                NegotiationType.FULFILLMENT,
                [fulfilment_request_content(task_id, expectation)],
                send_from=task.send_from,
                commu_type=CommuType.FULFILLMENT_NEGOTIATE,
            )
        )
        return Fulfilment(judgement, answer.fulfilled, answer.reason)

    # ---- notifications ----------------------------------------------------------------------------

    def watch(
        self,
        task_id: str | None = None,
        start_time: float | None = None,
        timeout: float | None = None,
        until_terminal: bool = True,
    ) -> Iterator[ConditionNotification]:
        """Subscribe and yield ``condition-notifications``, in the order the agent sent them.

        ``task_id`` limits them to one task; with ``until_terminal`` the
        iteration then ends after that task's finished/failed/canceled event.
        ``start_time`` (seconds since the epoch) first replays logged events.
        ``timeout`` bounds the wait for each event (RequestTimeout); None waits
        as long as the session lives. The subscription is made when this is
        called, not on the first ``next``; a session holds one subscription.
        """
        filter_ = root("condition-notifications")
        if task_id is not None:
            leaf(filter_, "task-id", task_id)
        subscription = self.netconf.subscribe(filter=filter_, start_time=start_time)
        return self._events(subscription.next, task_id, timeout, until_terminal)

    @staticmethod
    def _events(
        next_notification: Callable[[float | None], Notification],
        task_id: str | None,
        timeout: float | None,
        until_terminal: bool,
    ) -> Iterator[ConditionNotification]:
        condition_tag = root("condition-notifications").tag
        while True:
            note = next_notification(timeout)
            if note.kind is NotificationKind.NOTIFICATION_COMPLETE:
                return
            if note.kind is not NotificationKind.EVENT or note.element.tag != condition_tag:
                continue
            event = ConditionNotification.from_xml(note.envelope)
            # The agent filters already; checking again keeps a lax agent from leaking other tasks.
            if task_id is not None and event.task_id != task_id:
                continue
            yield event
            if task_id is not None and until_terminal and event.status.terminal:
                return


def _xpath_literal(value: str) -> str:
    """An XPath string literal for ``value`` (quotes chosen so it stays one literal)."""
    return f"'{value}'" if "'" not in value else f'"{value}"'
