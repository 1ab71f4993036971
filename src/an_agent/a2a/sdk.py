"""The one door to the ``a2a`` SDK (a2a-sdk 1.3.0) and its protobuf types: nothing else imports them.

The server face (`an_agent.a2a.face`) and the client (`an_agent.a2a.client`) take the SDK names they
use from here, and errors cross between the SDK's and ours only here, in both directions:

- `to_a2a_error`: an operation's `RpcError` -> the A2A error the SDK serialises (JSON-RPC code and
  HTTP status), carrying the RFC 6241 fields (error-tag, error-type, error-path, app-tag) in its data;
  a refused change to a task that ended (app-tag ``task-ended``) or asks for no input
  (``no-input-requested``) is ``UnsupportedOperationError`` (spec 3.1.1);
- `from_a2a_error`: what the SDK client raises -> ours. An A2A error whose data carries those fields
  becomes the same `RpcError` the operation raised on the agent; other A2A errors map by class
  (task not found -> data-missing, not cancelable -> operation-failed, bad params -> invalid-value);
  a timeout -> `RequestTimeout`, HTTP 401 -> `AuthError`, an unreachable agent or unreadable card ->
  `ConnectError`.

``protobuf_to_json``/``json_to_protobuf`` convert between the SDK's protobuf messages and their
ProtoJSON form (camelCase dicts), the form the rest of the package works in.
"""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
from a2a.client import Client as SdkClient
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.client.errors import A2AClientError, A2AClientTimeoutError, AgentCardResolutionError
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import RequestHandler
from a2a.server.request_handlers.request_handler import validate_request_params
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes import create_jsonrpc_routes, create_rest_routes
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.constants import DEFAULT_LIST_TASKS_PAGE_SIZE, VERSION_HEADER
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import (
    A2AError,
    ContentTypeNotSupportedError,
    ExtendedAgentCardNotConfiguredError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)
from a2a.utils.task import (
    ListTasksCursor,
    decode_list_tasks_cursor,
    encode_list_tasks_cursor,
    validate_history_length,
    validate_page_size,
)
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.message import Message as ProtoMessage

from an_agent.errors import AnAgentError, AuthError, ConnectError, ErrorType, RequestTimeout, RpcError
from an_agent.runtime.task_writes import NO_INPUT_REQUESTED, TASK_ENDED

__all__ = [
    "DEFAULT_LIST_TASKS_PAGE_SIZE",
    "JSONRPC_REQUEST_TYPES",
    "VERSION_HEADER",
    "A2AError",
    "AgentCard",
    "CancelTaskRequest",
    "ClientConfig",
    "ClientFactory",
    "ContentTypeNotSupportedError",
    "DefaultServerCallContextBuilder",
    "DeleteTaskPushNotificationConfigRequest",
    "Descriptor",
    "ExtendedAgentCardNotConfiguredError",
    "FieldDescriptor",
    "GetExtendedAgentCardRequest",
    "GetTaskPushNotificationConfigRequest",
    "GetTaskRequest",
    "InternalError",
    "InvalidParamsError",
    "InvalidRequestError",
    "ListTaskPushNotificationConfigsRequest",
    "ListTaskPushNotificationConfigsResponse",
    "ListTasksCursor",
    "ListTasksRequest",
    "ListTasksResponse",
    "Message",
    "PushNotificationNotSupportedError",
    "RequestHandler",
    "SdkClient",
    "SendMessageRequest",
    "ServerCallContext",
    "StreamResponse",
    "SubscribeToTaskRequest",
    "Task",
    "TaskArtifactUpdateEvent",
    "TaskNotCancelableError",
    "TaskNotFoundError",
    "TaskPushNotificationConfig",
    "TaskState",
    "TaskStatusUpdateEvent",
    "UnsupportedOperationError",
    "VersionNotSupportedError",
    "build_error_response",
    "build_rest_error_payload",
    "create_jsonrpc_routes",
    "create_rest_routes",
    "decode_list_tasks_cursor",
    "encode_list_tasks_cursor",
    "from_a2a_error",
    "json_to_protobuf",
    "parse_card",
    "protobuf_to_json",
    "to_a2a_error",
    "validate_history_length",
    "validate_page_size",
    "validate_request_params",
]

P = TypeVar("P", bound=ProtoMessage)

JSONRPC_REQUEST_TYPES: dict[str, type[ProtoMessage]] = dict(JsonRpcDispatcher.METHOD_TO_MODEL)
"""The request message of each JSON-RPC method, as the SDK's dispatcher parses it."""

_ERROR_TYPES: dict[str, ErrorType] = {t: t for t in ("transport", "rpc", "protocol", "application")}
_BY_TAG: dict[str, type[A2AError]] = {
    "data-missing": TaskNotFoundError,
    "invalid-value": InvalidParamsError,
    "missing-element": InvalidParamsError,
    "bad-element": InvalidParamsError,
    "unknown-element": InvalidParamsError,
    "data-exists": InvalidParamsError,
}
_BY_APP_TAG: dict[str, type[A2AError]] = {
    # A message to a task that ended, or to one that asks for no input: A2A's "not supported" (spec 3.1.1).
    TASK_ENDED: UnsupportedOperationError,
    NO_INPUT_REQUESTED: UnsupportedOperationError,
}


def protobuf_to_json(message: ProtoMessage) -> dict[str, Any]:
    """The ProtoJSON form (camelCase keys) of an SDK protobuf message."""
    out: dict[str, Any] = MessageToDict(message)
    return out


def json_to_protobuf(value: dict[str, Any], message: P) -> P:
    """``message`` filled from its ProtoJSON form ``value`` (unknown fields are an error)."""
    ParseDict(value, message)
    return message


def parse_card(document: dict[str, Any]) -> AgentCard:
    """The SDK's ``AgentCard`` of a served card (fields it has no place for, such as ``schemas``, dropped)."""
    try:
        return parse_agent_card(dict(document))
    except Exception as exc:  # the SDK raises its ParseError, protobuf's, or TypeError
        raise ConnectError(f"the agent card cannot be read: {exc}") from None


def to_a2a_error(exc: RpcError) -> A2AError:
    """The A2A error for an operation's refusal (server side; module docstring)."""
    message = exc.message + (f" (at {exc.path})" if exc.path else "")
    # Strings only: the JSON-RPC binding carries data as google.rpc.ErrorInfo metadata (a string map).
    data = {"error-tag": exc.error_tag, "error-type": exc.error_type}
    if exc.path:
        data["error-path"] = exc.path
    if exc.app_tag:
        data["app-tag"] = exc.app_tag
    if exc.error_tag == "access-denied":
        return InvalidRequestError(message=f"access denied: {message}", data=data)
    by_app_tag = _BY_APP_TAG.get(exc.app_tag or "") if exc.error_tag == "operation-failed" else None
    return (by_app_tag or _BY_TAG.get(exc.error_tag, InternalError))(message=message, data=data)


def from_a2a_error(exc: BaseException) -> AnAgentError:
    """Ours for what the SDK client raised (client side; module docstring). Unknown errors pass through."""
    if isinstance(exc, A2AClientTimeoutError | httpx.TimeoutException):
        return RequestTimeout(f"the A2A agent did not answer in time: {exc}")
    if isinstance(exc, AgentCardResolutionError):
        if getattr(exc, "status_code", None) == 401:
            return AuthError("the A2A agent refused the credentials (HTTP 401)")
        return ConnectError(f"cannot resolve the agent card: {exc}")
    if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code == 401:
        return AuthError("the A2A agent refused the credentials (HTTP 401)")
    if isinstance(exc, A2AClientError):
        if "401" in str(exc):
            return AuthError("the A2A agent refused the credentials (HTTP 401)")
        return ConnectError(f"A2A request failed: {exc}")
    if isinstance(exc, httpx.HTTPError):
        return ConnectError(f"cannot reach the A2A agent: {exc}")
    if isinstance(exc, A2AError):
        return _rpc_error(exc)
    if isinstance(exc, AnAgentError):
        return exc
    return AnAgentError(f"A2A request failed: {type(exc).__name__}: {exc}")


def _rpc_error(exc: A2AError) -> RpcError:
    data = exc.data if isinstance(exc.data, dict) else {}
    message = exc.message
    error_type = _ERROR_TYPES.get(str(data.get("error-type")))
    if isinstance(data.get("error-tag"), str) and error_type is not None:
        path = data.get("error-path") or None
        suffix = f" (at {path})" if path else ""
        return RpcError(
            error_type=error_type,
            error_tag=data["error-tag"],
            message=message[: -len(suffix)] if suffix and message.endswith(suffix) else message,
            path=path,
            app_tag=data.get("app-tag") or None,
        )
    if isinstance(exc, TaskNotFoundError):
        return RpcError.data_missing(message)
    if isinstance(exc, TaskNotCancelableError):
        return RpcError.operation_failed(message)
    if isinstance(exc, InvalidParamsError):
        return RpcError.invalid_value(message)
    if isinstance(exc, InvalidRequestError) and message.startswith("access denied"):
        return RpcError.access_denied(message)
    return RpcError.operation_failed(f"{type(exc).__name__}: {message}")
