"""Request parameters read strictly: a value the protocol does not define is refused, never dropped.

The SDK parses JSON-RPC params and HTTP+JSON bodies and query strings with protobuf's
``ignore_unknown_fields``, which keeps unknown *fields* out (forward compatibility, which we keep) but
also turns an unknown *enum value* into the enum's zero: ``ListTasks`` with ``status:
"INVALID_STATUS"`` would list every task in every state. A2A v1.0 section 3.3.2 wants all input
validated, answered ``-32602`` / HTTP 400 (section 6.5's example names the field and the allowed
values). This ASGI layer sits between authentication and the SDK's routes and checks, before the SDK
parses them, every enum value of the request message the method takes (at any depth: a message's
role, a task state filter) and every boolean of a query string (``includeArtifacts=yes`` would read as
false). Everything else passes through untouched, byte for byte. `BodyLimit`, outside it, bounds the
size of what either reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

from starlette.responses import JSONResponse, PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from an_agent.a2a.sdk import (
    JSONRPC_REQUEST_TYPES,
    CancelTaskRequest,
    Descriptor,
    FieldDescriptor,
    GetTaskRequest,
    InvalidParamsError,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    build_error_response,
    build_rest_error_payload,
)

Problem = dict[str, str]

# HTTP+JSON routes (spec 11.3) by method and path tail, whatever prefix or tenant precedes them.
_REST: list[tuple[str, re.Pattern[str], Descriptor, bool]] = [
    ("POST", re.compile(r"/message:(send|stream)$"), SendMessageRequest.DESCRIPTOR, True),
    ("POST", re.compile(r"/tasks/[^/]+:cancel$"), CancelTaskRequest.DESCRIPTOR, True),
    ("POST", re.compile(r"/tasks/[^/]+:subscribe$"), SubscribeToTaskRequest.DESCRIPTOR, True),
    ("POST", re.compile(r"/tasks/[^/]+/pushNotificationConfigs$"), TaskPushNotificationConfig.DESCRIPTOR, True),
    ("GET", re.compile(r"/tasks$"), ListTasksRequest.DESCRIPTOR, False),
    ("GET", re.compile(r"/tasks/[^/:]+$"), GetTaskRequest.DESCRIPTOR, False),
    (
        "GET",
        re.compile(r"/tasks/[^/]+/pushNotificationConfigs$"),
        ListTaskPushNotificationConfigsRequest.DESCRIPTOR,
        False,
    ),
]
_SKIPPED = frozenset({"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"})


def problems(value: Any, descriptor: Descriptor, at: str = "") -> list[Problem]:
    """The enum values in ``value`` (a ProtoJSON object of message ``descriptor``) that the message does
    not define, each as ``{"field", "message"}`` (the field as a dotted path with list indexes)."""
    found: list[Problem] = []
    if not isinstance(value, Mapping):
        return found  # not an object: the SDK's parser refuses it with its own words
    for key, item in value.items():
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None:
            continue  # unknown fields stay ignored: forward compatibility (the SDK's choice, kept)
        path = f"{at}.{key}" if at else key
        if _is_map(field):
            inner = field.message_type.fields_by_name["value"]
            if isinstance(item, Mapping):
                for map_key, map_value in item.items():
                    found += _field_problems(map_value, inner, f"{path}.{map_key}")
            continue
        if _repeated(field) and isinstance(item, list):
            for index, element in enumerate(item):
                found += _field_problems(element, field, f"{path}[{index}]")
            continue
        found += _field_problems(item, field, path)
    return found


def query_problems(query: Mapping[str, list[str]], descriptor: Descriptor) -> list[Problem]:
    """As `problems`, for an HTTP+JSON query string (spec 11.5): enum names and booleans."""
    found: list[Problem] = []
    for key, values in query.items():
        field = descriptor.fields_by_camelcase_name.get(key) or descriptor.fields_by_name.get(key)
        if field is None:
            continue
        for raw in values:
            for item in raw.split(",") if _repeated(field) else [raw]:
                if field.type == FieldDescriptor.TYPE_BOOL and item.lower() not in ("true", "false"):
                    found.append({"field": key, "message": f"must be true or false, got {item!r}"})
                elif field.enum_type is not None:
                    found += _field_problems(item, field, key)
    return found


def _field_problems(item: Any, field: FieldDescriptor, path: str) -> list[Problem]:
    if field.enum_type is not None:
        names = field.enum_type.values_by_name
        if (isinstance(item, str) and item in names) or (
            isinstance(item, int) and not isinstance(item, bool) and item in field.enum_type.values_by_number
        ):
            return []
        allowed = ", ".join(n for n in names if not n.endswith("_UNSPECIFIED"))
        return [{"field": path, "message": f"invalid value {item!r}; must be one of: {allowed}"}]
    if field.message_type is not None and field.message_type.full_name not in _SKIPPED:
        return problems(item, field.message_type, path)
    return []


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def _repeated(field: FieldDescriptor) -> bool:
    repeated = getattr(field, "is_repeated", None)  # protobuf >= 6.31
    return bool(repeated) if repeated is not None else field.label == FieldDescriptor.LABEL_REPEATED


def _refusal(found: list[Problem]) -> InvalidParamsError:
    said = "; ".join(f"{p['field']}: {p['message']}" for p in found)
    return InvalidParamsError(message=f"invalid parameters: {said}", data={"errors": found})


class StrictParams:
    """ASGI middleware over the SDK's routes (module docstring): JSON-RPC at ``jsonrpc_path``, HTTP+JSON
    anywhere else its routes match."""

    def __init__(self, app: ASGIApp, jsonrpc_path: str) -> None:
        self.app = app
        self.jsonrpc_path = jsonrpc_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope["method"], scope["path"]
        if method == "POST" and path == self.jsonrpc_path:
            body, receive = await _buffered(receive)
            refusal = _jsonrpc_refusal(body)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        else:
            route = next((r for r in _REST if r[0] == method and r[1].search(path)), None)
            if route is not None:
                _, _, descriptor, has_body = route
                found = query_problems(parse_qs(scope.get("query_string", b"").decode("latin-1")), descriptor)
                if has_body:
                    body, receive = await _buffered(receive)
                    found += problems(_json(body), descriptor)
                if found:
                    payload = build_rest_error_payload(_refusal(found))
                    await JSONResponse(payload, status_code=payload["error"]["code"])(scope, receive, send)
                    return
        await self.app(scope, receive, send)


class BodyLimit:
    """ASGI middleware: a request body over ``limit`` bytes is answered 413 and never reaches the app.

    The SDK's routes (and `StrictParams`) read a request's whole body into memory before parsing it, so an
    unbounded body is unbounded memory; the bound is the agent's ``--max-message-bytes``, as for a NETCONF
    message. A declared ``Content-Length`` over it is refused unread; a chunked body is read up to it.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"")
        too_large = declared.isdigit() and int(declared) > self.limit
        if not too_large:
            body, receive = await _buffered(receive, self.limit)
            too_large = len(body) > self.limit
        if too_large:
            refusal = f"request body larger than {self.limit} bytes (the agent's --max-message-bytes)"
            await PlainTextResponse(refusal, status_code=413)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _jsonrpc_refusal(body: bytes) -> JSONResponse | None:
    request = _json(body)
    if not isinstance(request, Mapping):
        return None  # not a JSON-RPC object: the SDK answers it
    model = JSONRPC_REQUEST_TYPES.get(str(request.get("method")))
    if model is None:
        return None
    found = problems(request.get("params", {}), model.DESCRIPTOR)
    if not found:
        return None
    request_id = request.get("id")
    answer = build_error_response(request_id if isinstance(request_id, str | int) else None, _refusal(found))
    return JSONResponse(answer)


def _json(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None  # the SDK's parser answers malformed JSON with its own error


async def _buffered(receive: Receive, limit: int | None = None) -> tuple[bytes, Receive]:
    """The whole request body, and a ``receive`` that gives it again to the app behind; with ``limit``,
    reading stops as soon as the body is longer (the caller refuses it)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away: the app behind sees it on its first receive
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if not message.get("more_body", False) or (limit is not None and size > limit):
            break
    body = b"".join(chunks)
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay
