"""The A2A v1 face: JSON-RPC and HTTP+JSON (a2a-sdk's routes) over the operation layer.

Takes the ``a2a`` SDK's names from `an_agent.a2a.sdk`, the one module that imports the SDK.

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
  subscription, then what follows (`_follow`'s ``lead``).
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
import itertools
import logging
import uuid
from collections.abc import AsyncGenerator, Callable, Collection
from typing import Any, Literal

from lxml import etree
from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from an_agent.a2a.card import A2A_PROTOCOL_VERSION
from an_agent.a2a.convert import artifact_json, status_event_json, task_json, task_json_at
from an_agent.a2a.inbound import InboundMessage, read_message
from an_agent.a2a.listing import list_tasks
from an_agent.a2a.messages import answer_parts, check_configuration, metadata_string, sender, task_content
from an_agent.a2a.sdk import (
    VERSION_HEADER,
    AgentCard,
    CancelTaskRequest,
    ContentTypeNotSupportedError,
    DefaultServerCallContextBuilder,
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
    TaskArtifactUpdateEvent,
    TaskNotCancelableError,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
    UnsupportedOperationError,
    VersionNotSupportedError,
    create_jsonrpc_routes,
    create_rest_routes,
    json_to_protobuf,
    protobuf_to_json,
    to_a2a_error,
    validate_history_length,
    validate_request_params,
)
from an_agent.a2a.states import TASK_ID_KEY
from an_agent.errors import RpcError, SchemaError, StateFull
from an_agent.model import (
    IRTF_AGENT_NS,
    CommuType,
    ConditionNotification,
    DataParam,
)
from an_agent.model import Task as DraftTask
from an_agent.model.prompt import parse_prompt
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import AssignTask, CancelTask, ProvideInput, ReadScope, Subscribe
from an_agent.runtime.task_writes import TASK_ENDED
from an_agent.runtime.text_input import AssignText, structured_param
from an_agent.schemas.languages import pick_language
from an_agent.tracing import TRACEPARENT_KEY

log = logging.getLogger(__name__)

JSONRPC_PATH = "/"
REST_PREFIX = "/rest"
"""Where the card puts the HTTP+JSON binding; `sdk_routes` serves its routes at the root as well."""
_CONDITION = f"{{{IRTF_AGENT_NS}}}condition-notifications"
_TASK_ID = f"{{{IRTF_AGENT_NS}}}task-id"
_session_ids = itertools.count(-1, -1)  # A2A streams are sessions of the operation layer; NETCONF's are > 0

Event = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message


PrincipalOf = Callable[[str], Principal]
"""The principal of an authenticated user name (groups, agents it may speak for): NACM applies to it."""


def _a2a_task(task: DraftTask) -> Task:
    return json_to_protobuf(task_json(task), Task())


def _state_of(event: ConditionNotification) -> int:
    """The A2A ``TaskState`` an event moves its task to (through the one mapping table)."""
    state: int = json_to_protobuf(status_event_json(event), TaskStatusUpdateEvent()).status.state
    return state


async def _call(work: Callable[[], Any]) -> Any:
    """Run an operation (blocking, thread-safe) off the event loop; translate its refusal."""
    try:
        return await asyncio.to_thread(work)
    except RpcError as exc:
        raise to_a2a_error(exc) from None
    except StateFull as exc:  # refused whole, as over NETCONF (resource-denied): not an "unhandled exception"
        raise to_a2a_error(RpcError.resource_denied(str(exc))) from None


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
            async for _ in self._follow(principal, message.task_id, None, answer, lead="first"):
                if params.configuration.return_immediately:
                    break  # the first event is the answered task
            return await self._task(principal, message.task_id)
        task_id, since = await _call(lambda: self._admit(principal, message, _language(context)))
        if not params.configuration.return_immediately:
            async for _ in self._follow(principal, task_id, since):
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
            async for event in self._follow(principal, message.task_id, None, answer, lead="first"):
                yield event
            return
        task_id, since = await _call(lambda: self._admit(principal, message, _language(context)))
        # The task as it was created, then each change in the log's order (spec 11.7: no re-ordering).
        async for event in self._follow(principal, task_id, since, lead="first"):
            yield event

    # -- tasks ------------------------------------------------------------------------------------
    async def _task(self, principal: Principal, task_id: str) -> Task:
        task = await _call(lambda: self.operations.get_task(principal, task_id))
        return _a2a_task(task)

    async def _task_at(self, principal: Principal, task_id: str, event: ConditionNotification | None) -> Task:
        """The task as ``event`` left it (its current state when there is no event)."""
        task = await _call(lambda: self.operations.get_task(principal, task_id))
        if event is None:
            return _a2a_task(task)
        return json_to_protobuf(task_json_at(task, event), Task())

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        validate_history_length(params)  # our tasks keep no message history: a valid length changes nothing
        return await self._task(self._principal(context), params.id)

    @validate_request_params
    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The tasks the caller may read (the operation layer's read view), filtered and paged (`list_tasks`)."""
        principal = self._principal(context)
        scope = ReadScope(frozenset({(IRTF_AGENT_NS, "tasks")}), None, False)
        elements = await _call(lambda: self.operations.read(principal, scope))
        tasks = (
            _a2a_task(DraftTask.from_xml(entry))
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
        return _a2a_task(task)

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """The task now, then its changes; a task that ended cannot be subscribed to (spec 3.1.6), one that
        waits for input (interrupted) is answered with its snapshot only, as its stream would have closed."""
        principal = self._principal(context)
        snapshot = await self._task(principal, params.id)
        if snapshot.status.state in _TERMINAL:
            state = TaskState.Name(snapshot.status.state)
            ended = RpcError.operation_failed(
                f"task {params.id} already ended ({state}): there is nothing to subscribe to, read it with GetTask",
                path=f"/irtf-agent:tasks/task[task-id='{params.id}']",
                app_tag=TASK_ENDED,
            )
            raise to_a2a_error(ended)  # UnsupportedOperationError
        if snapshot.status.state in _ENDED:
            yield snapshot
            return
        # The task's log replayed to now gives its current state (the first event), then what follows.
        async for event in self._follow(principal, params.id, self.operations.log_created, lead="current"):
            yield event

    async def _follow(
        self,
        principal: Principal,
        task_id: str,
        since: float | None,
        answer: Callable[[], object] | None = None,
        lead: Literal["first", "current"] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The task's status changes from the durable log since ``since``, until it ends or is interrupted.

        ``answer`` (with ``since`` None) changes the task once the live subscription is in place, so the
        stream holds exactly what follows it. ``lead`` puts a ``Task`` first, as streams must (spec 3.1.2,
        3.1.6), without ever going back in time after it (11.7): ``"first"``, the task as the first event
        left it (created, or answered), then each later event; ``"current"``, the task as the replayed
        log leaves it at the subscription (events up to ``replayComplete`` are folded into it), then the
        events after.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()

        def deliver(item: str | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def wanted(event: etree._Element) -> bool:
            return event.tag == _CONDITION and event.findtext(_TASK_ID) == task_id

        session_id = next(_session_ids)
        self.operations.open_session(session_id, principal, lambda: deliver(None))
        try:
            subscription = await _call(
                lambda: self.operations.subscribe(
                    principal, session_id, Subscribe(wanted, start_time=since), lambda xml: deliver(xml)
                )
            )
            subscription.start()
            if answer is not None:
                await _call(answer)
            folded: ConditionNotification | None = None
            while (xml := await queue.get()) is not None:
                note = etree.fromstring(xml.encode("utf-8"))
                if note.find(f".//{_CONDITION}") is None:
                    if lead == "current" and note.find(".//{*}replayComplete") is not None:
                        lead = None
                        yield await self._task_at(principal, task_id, folded)
                        if folded is not None and _state_of(folded) in _ENDED:
                            return
                    continue  # replayComplete and other markers
                event = ConditionNotification.from_xml(note)
                if lead == "current":
                    folded = event
                    continue
                if lead == "first":
                    lead = None
                    yield await self._task_at(principal, task_id, event)
                    if _state_of(event) in _ENDED:
                        return
                    continue
                if event.status.terminal and event.status.value == "finished":
                    task = await _call(lambda: self.operations.get_task(principal, task_id))
                    artifact = artifact_json(task)
                    if artifact is not None:
                        yield json_to_protobuf(
                            {"taskId": task_id, "contextId": task_id, "artifact": artifact, "lastChunk": True},
                            TaskArtifactUpdateEvent(),
                        )
                status = json_to_protobuf(status_event_json(event), TaskStatusUpdateEvent())
                yield status
                if status.status.state in _ENDED:
                    return
        finally:
            await asyncio.to_thread(self.operations.close_session, session_id)

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


_TERMINAL = frozenset(
    TaskState.Value(name)
    for name in ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED")
)
_ENDED = _TERMINAL | {TaskState.Value(name) for name in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED")}
"""Terminal or interrupted: where a blocking SendMessage returns and a stream closes (spec 3.2.2)."""


def _language(context: ServerCallContext) -> str:
    """The caller's preferred language (HTTP ``Accept-Language``) among those the templates are served in."""
    headers = context.state.get("headers")
    return pick_language(headers.get("accept-language") if isinstance(headers, dict) else None)


def sdk_routes(
    operations: Operations,
    declared_schemas: Callable[[], Collection[str]],
    principal_of: PrincipalOf,
) -> list[BaseRoute]:
    """The SDK's JSON-RPC (at `JSONRPC_PATH`) and HTTP+JSON (under `REST_PREFIX`) routes on `Operations`.

    The HTTP+JSON routes are served at the root too (``POST /message:send``, ``GET /tasks/{id}`` ...; not
    the SDK's ``/{tenant}`` variants): a client that joins the binding's paths to the card's URL with a
    leading slash, such as the A2A TCK's (``urljoin(url, "/message:send")``), drops ``/rest``. None of
    these paths is JSON-RPC's (``POST /``) or the card's; clients that follow the card are unaffected.
    """
    handler = OperationsRequestHandler(operations, declared_schemas, principal_of)
    context = _ContextBuilder()
    root = [route for route in create_rest_routes(handler, context_builder=context) if isinstance(route, Route)]
    return [
        *create_jsonrpc_routes(handler, JSONRPC_PATH, context_builder=context),
        *root,  # before the /{tenant} mount below, which would take any two-segment path
        *create_rest_routes(handler, path_prefix=REST_PREFIX, context_builder=context),
    ]


class _ContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, also taking ``A2A-Version`` as a query parameter when no header gives it (spec
    3.6.1: clients MAY send it so), and refusing a version whose Major.Minor is not the card's (3.6.2: the
    SDK takes any 1.x; a patch number is not considered). No version is left to the SDK: 0.3, refused."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        headers = context.state.get("headers")
        if not isinstance(headers, dict):
            return context
        version = headers.get(VERSION_HEADER.lower()) or request.query_params.get(VERSION_HEADER)
        if version:
            if version.strip().split(".")[:2] != A2A_PROTOCOL_VERSION.split("."):
                raise VersionNotSupportedError(
                    message=f"A2A version {version!r} is not supported: this agent speaks {A2A_PROTOCOL_VERSION}"
                )
            headers[VERSION_HEADER.lower()] = version
        return context
