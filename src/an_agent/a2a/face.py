"""The A2A v1 face: JSON-RPC and HTTP+JSON (a2a-sdk's routes) over the operation layer.

Takes the ``a2a`` SDK's names from `an_agent.a2a.sdk`, the one module that imports the SDK. This module
is the request handler; a task's stream from the log is `an_agent.a2a.follow`, the HTTP routes and the
call context `an_agent.a2a.routes`.

Bytes in -> typed request + `Principal` -> `Operations` -> typed result -> bytes out (DESIGN.md):

- ``SendMessage`` reads the message per the schemas extension (`an_agent.a2a.inbound`): a structured
  part becomes a data-param ``application/json;schema=<name>`` of a new task, text becomes its prompt;
  `Operations.assign_task` admits it (validation once, in the operation layer: a payload that fails is
  refused naming each key, and no task exists). Text alone that is not a draft prompt goes to
  `Operations.assign_text` (`an_agent.runtime.text_input`): the payload mapped from it, or the task in
  ``input-required`` for the required keys it does not give (prompts in the caller's ``Accept-Language``).
  An undeclared schema is refused before that. A message to an existing task (its ``taskId``) answers the
  task's ``input-required`` (`Operations.provide_input`, the same edit a NETCONF assigner makes): its
  structured part, a data part without schema (keys asked for) and text become data-params of the task's
  ``msg-data`` (a draft prompt becomes the new content) and the task resumes; a task that asks for no
  input refuses it ("already running", the schemas extension's section 3; one that ended: A2A's
  UnsupportedOperationError, spec 3.1.1). While it waits, the task's ``TASK_STATE_INPUT_REQUIRED``
  status message says what is missing (`an_agent.a2a.convert`). Without ``returnImmediately`` the call
  returns once the task is terminal or interrupted. The message metadata may name the agent it is sent
  for (``an-agent/task-sendFrom``, refused unless the caller may speak for it; default: the caller)
  and propose the new task's id (``an-agent/task-id``, as a NETCONF client chooses it; an id in use is
  refused); tasks made over A2A are ``task-async`` (the reply never waits on the behaviour).
- ``SendStreamingMessage`` and ``SubscribeToTask`` stream the task from the durable notification log
  (`Operations.subscribe` with ``start_time``) and never go back in time after their first event (spec
  11.7): a new task as created, then each later change (the result artifact before ``completed``); an
  answered task as answered, then what follows; a resubscription's task as the log leaves it at the
  subscription, then what follows (`an_agent.a2a.follow.TaskFollower.follow`'s ``lead``).
- ``GetTask``/``ListTasks``/``CancelTask`` are `Operations.get_task`/`read`/`cancel_task`; the A2A task
  id is the NETCONF task-id, states map through `an_agent.a2a.states`. ListTasks' filters and cursor
  pages are `an_agent.a2a.listing`'s; a task that ended is not cancelable (``TaskNotCancelableError``,
  also when already canceled) and cannot be subscribed to (``UnsupportedOperationError``), spec 3.1.5-6.
- What the spec refuses is refused before anything is made: required fields and ``historyLength`` (the
  SDK's checks, ``InvalidParams``), parts of a media type no skill takes and ``acceptedOutputModes`` that
  take neither text nor JSON (``ContentTypeNotSupportedError``), a client ``contextId`` (a task is its own
  context: ``InvalidParams``, spec 3.4.1). ``A2A-Version`` may also come as a query parameter (3.6.1).
- The caller is the authenticated user of the request (HTTP Basic, `an_agent.a2a.server`); push
  notifications and an extended card are not implemented (the card says so; spec 3.3.4's errors).

Why not the SDK's ``DefaultRequestHandler`` (checked against 1.3.0; docs/architecture.md has the
function-by-function account): its ``ActiveTask`` consumer writes every executor event to the
``TaskStore`` itself (a second writer beside our task engine), its single-process resubscription serves
only tasks running in its in-memory ``ActiveTaskRegistry`` (never our durable log), and its cluster mode
cancels a task by writing ``TASK_STATE_CANCELED`` into the store, bypassing the operation layer. This
handler implements the SDK's ``RequestHandler`` interface directly on `Operations` instead; routes,
JSON-RPC framing, SSE and error codes are the SDK's.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator, Callable, Collection

from an_agent.a2a.follow import ENDED, TERMINAL, Event, TaskFollower, a2a_task, call
from an_agent.a2a.inbound import InboundMessage, read_message
from an_agent.a2a.listing import list_tasks
from an_agent.a2a.messages import answer_parts, check_configuration, metadata_string, sender, task_content
from an_agent.a2a.sdk import (
    AgentCard,
    CancelTaskRequest,
    ContentTypeNotSupportedError,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    InvalidParamsError,
    InvalidRequestError,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    PushNotificationNotSupportedError,
    RequestHandler,
    SendMessageRequest,
    ServerCallContext,
    SubscribeToTaskRequest,
    Task,
    TaskNotCancelableError,
    TaskPushNotificationConfig,
    TaskState,
    UnsupportedOperationError,
    protobuf_to_json,
    to_a2a_error,
    validate_history_length,
    validate_request_params,
)
from an_agent.a2a.states import TASK_ID_KEY
from an_agent.errors import RpcError, SchemaError
from an_agent.model import (
    IRTF_AGENT_NS,
    CommuType,
    DataParam,
)
from an_agent.model import Task as DraftTask
from an_agent.model.prompt import parse_prompt
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import AssignTask, CancelTask, ProvideInput, ReadScope
from an_agent.runtime.task_writes import TASK_ENDED
from an_agent.runtime.text_input import AssignText, structured_param
from an_agent.schemas.languages import pick_language
from an_agent.tracing import TRACEPARENT_KEY

log = logging.getLogger(__name__)


PrincipalOf = Callable[[str], Principal]
"""The principal of an authenticated user name (groups, agents it may speak for): NACM applies to it."""


class OperationsRequestHandler(RequestHandler):
    """The SDK's request-handler interface, implemented on `Operations` (module docstring)."""

    def __init__(
        self,
        operations: Operations,
        declared_schemas: Callable[[], Collection[str]],
        principal_of: PrincipalOf,
    ) -> None:
        self.operations = operations
        self._declared = declared_schemas
        self._principal_of = principal_of
        self._follower = TaskFollower(operations)

    def _principal(self, context: ServerCallContext) -> Principal:
        if not context.user.is_authenticated:
            raise InvalidRequestError(message="authentication required (HTTP Basic or Bearer, the agent's users)")
        return self._principal_of(context.user.user_name)

    # -- messages ---------------------------------------------------------------------------------
    def _read(self, message: Message) -> InboundMessage:
        try:
            inbound = read_message(protobuf_to_json(message), self._declared())
        except SchemaError as exc:
            raise InvalidParamsError(
                message=f"{exc}: {'; '.join(exc.problems)}", data={"problems": list(exc.problems)}
            ) from None
        if inbound.unsupported:
            raise ContentTypeNotSupportedError(
                message="this agent takes text/plain and JSON data parts only (its skills' input modes): "
                + "; ".join(inbound.unsupported)
            )
        return inbound

    def _admit(self, principal: Principal, message: Message, language: str) -> tuple[str, float]:
        """Create the task a new message asks for; returns its id and a log time before it existed.

        Text alone that is not a draft prompt goes to `Operations.assign_text` (the NL mapping builds the
        payload, or the task asks for the missing keys in ``language``); the rest to `Operations.assign_task`.
        """
        inbound = self._read(message)
        if message.context_id:
            # A task is its own context here (the draft's task has none), so a new task cannot join one.
            raise InvalidParamsError(
                message=f"contextId {message.context_id!r} cannot be accepted: this agent gives each new task "
                "its own context (the task id); send without contextId, or with taskId to continue a task"
            )
        task_id = metadata_string(message, TASK_ID_KEY) or str(uuid.uuid4())
        params: list[DataParam] = []
        if inbound.structured is not None:
            structured = inbound.structured
            params.append(
                structured_param(f"{task_id}-payload", structured.schema_id, structured.payload, "A2A data part")
            )
        elif not inbound.text:
            raise InvalidParamsError(message="the message has neither text nor a structured data part")
        task = DraftTask(
            task_id,
            send_from=sender(principal, message),
            send_to=self.operations.profile.name,
            commu_type=CommuType.TASK_ASSIGN,
            task_async=True,  # A2A answers at once (or streams): the assignment must not wait for the end
            content=task_content(inbound.text, params),
            msg_data=[p.id for p in params],
            # the assigner's W3C trace context (an_agent.tracing); a malformed one starts a new trace
            traceparent=metadata_string(message, TRACEPARENT_KEY) or None,
        )
        since = self.operations.clock.now()
        if not params and not parse_prompt(inbound.text).complete:
            self.operations.assign_text(principal, AssignText(task, inbound.text, language))
        else:
            self.operations.assign_task(principal, AssignTask(task, tuple(params)))
        return task_id, since

    def _answer(self, principal: Principal, message: Message) -> Callable[[], object]:
        """A message on an existing task answers its ``input-required`` through `Operations.provide_input`
        (the returned work, run once the caller follows the task).

        The structured part becomes a data-param ``application/json;schema=<name>`` (validated by the
        operation layer against the template, like an assignment's); text that is a draft prompt becomes
        the task's new content, other text a ``text/plain`` data-param; both are added to ``msg-data``.
        A task that asks for no input refuses the message (operation-failed, app-tag no-input-requested: A2A
        UnsupportedOperationError), one that ended too (app-tag task-ended).
        """
        task_id = message.task_id
        if message.context_id and message.context_id != task_id:
            raise InvalidParamsError(
                message=f"contextId {message.context_id!r} is not the context of task {task_id} (its contextId is "
                "the task id)"
            )

        def work() -> object:
            inbound = self._read(message)
            return self.operations.provide_input(principal, ProvideInput(task_id, *answer_parts(task_id, inbound)))

        return work

    @validate_request_params
    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        principal = self._principal(context)
        check_configuration(params)
        message = params.message
        if message.task_id:
            answer = self._answer(principal, message)
            async for _ in self._follower.follow(principal, message.task_id, None, answer, lead="first"):
                if params.configuration.return_immediately:
                    break  # the first event is the answered task
            return await self._task(principal, message.task_id)
        task_id, since = await call(lambda: self._admit(principal, message, _language(context)))
        if not params.configuration.return_immediately:
            async for _ in self._follower.follow(principal, task_id, since):
                pass
        return await self._task(principal, task_id)

    @validate_request_params
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        principal = self._principal(context)
        check_configuration(params)
        message = params.message
        if message.task_id:
            answer = self._answer(principal, message)
            async for event in self._follower.follow(principal, message.task_id, None, answer, lead="first"):
                yield event
            return
        task_id, since = await call(lambda: self._admit(principal, message, _language(context)))
        # The task as it was created, then each change in the log's order (spec 11.7: no re-ordering).
        async for event in self._follower.follow(principal, task_id, since, lead="first"):
            yield event

    # -- tasks ------------------------------------------------------------------------------------
    async def _task(self, principal: Principal, task_id: str) -> Task:
        task = await call(lambda: self.operations.get_task(principal, task_id))
        return a2a_task(task)

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        validate_history_length(params)  # our tasks keep no message history: a valid length changes nothing
        return await self._task(self._principal(context), params.id)

    @validate_request_params
    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The tasks the caller may read (the operation layer's read view), filtered and paged (`list_tasks`)."""
        principal = self._principal(context)
        scope = ReadScope(frozenset({(IRTF_AGENT_NS, "tasks")}), None, False)
        elements = await call(lambda: self.operations.read(principal, scope))
        tasks = (
            a2a_task(DraftTask.from_xml(entry))
            for top in elements
            for entry in top.iterchildren(f"{{{IRTF_AGENT_NS}}}task")
        )
        return list_tasks(tasks, params)

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        """A task that ended, also as canceled, is not cancelable (spec 3.1.5, `CancelTask.refuse_ended`)."""
        principal = self._principal(context)
        request = CancelTask(params.id, refuse_ended=True)
        try:
            task = await asyncio.to_thread(self.operations.cancel_task, principal, request)
        except RpcError as exc:
            if exc.error_tag == "operation-failed":
                raise TaskNotCancelableError(message=exc.message, data=to_a2a_error(exc).data) from None
            raise to_a2a_error(exc) from None
        return a2a_task(task)

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """The task now, then its changes; a task that ended cannot be subscribed to (spec 3.1.6), one that
        waits for input (interrupted) is answered with its snapshot only, as its stream would have closed."""
        principal = self._principal(context)
        snapshot = await self._task(principal, params.id)
        if snapshot.status.state in TERMINAL:
            state = TaskState.Name(snapshot.status.state)
            ended = RpcError.operation_failed(
                f"task {params.id} already ended ({state}): there is nothing to subscribe to, read it with GetTask",
                path=f"/irtf-agent:tasks/task[task-id='{params.id}']",
                app_tag=TASK_ENDED,
            )
            raise to_a2a_error(ended)  # UnsupportedOperationError
        if snapshot.status.state in ENDED:
            yield snapshot
            return
        # The task's log replayed to now gives its current state (the first event), then what follows.
        async for event in self._follower.follow(principal, params.id, self.operations.log_created, lead="current"):
            yield event

    # -- not implemented (the card says so: capabilities.pushNotifications false, no extendedAgentCard) --
    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise UnsupportedOperationError(
            message="this agent has no extended agent card (capabilities.extendedAgentCard)"
        )


def _language(context: ServerCallContext) -> str:
    """The caller's preferred language (HTTP ``Accept-Language``) among those the templates are served in."""
    headers = context.state.get("headers")
    return pick_language(headers.get("accept-language") if isinstance(headers, dict) else None)
