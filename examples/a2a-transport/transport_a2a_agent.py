#!/usr/bin/env python3
"""A transport capacity agent built with a2a-sdk alone (imports nothing of an-agent).

It is an A2A v1 agent like any other: an agent card at /.well-known/agent-card.json that declares its
payload as a JSON Schema (the input/output-schemas extension), JSON-RPC at /, tasks with statuses and
an artifact. an-agent's gateway puts it behind a NETCONF face:

    python3 transport_a2a_agent.py --port 9100 &
    an-agent serve --a2a-upstream http://127.0.0.1:9100 --port 8830

What it does with a message:
- a data part of transport_capacity_v1 ({"link_id": ..., "min_gbps": ...}): working, then an artifact
  {"link_id", "spare_gbps", "enough"} and completed; link "LINK-ASK" first asks for a maintenance window
  (input-required), link "LINK-BROKEN" fails, link "LINK-SLOW" works for a minute (to be cancelled);
- text only: completed with a text artifact echoing it.

--bad-schema makes the card declare a schema no template can express (for the gateway's error path).
--token FILE makes every request but the card's carry "Authorization: Bearer <first line of FILE>" (401
otherwise), and the card declare that HTTP bearer scheme.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
from pathlib import Path

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCard, Message, Part, Role, Task, TaskState, TaskStatus
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Value
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

EXTENSION = "https://raw.githubusercontent.com/facultyai/a2a-extension-object-schemas/refs/heads/main/v1"
SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "link_id": {"type": "string", "description": "The transport link to check, e.g. LINK-C2."},
        "direction": {"type": ["string", "null"], "enum": ["up", "down", None], "description": "Which way."},
        "min_gbps": {
            "type": ["number", "null"],
            "minimum": 0,
            "maximum": 400,
            "x-unit": "gbps",
            "description": "Capacity the caller needs.",
        },
    },
    "required": ["link_id"],
    "additionalProperties": False,
}
BAD_SCHEMA = {"type": "object", "properties": {"linkId": {"type": "frobnicate"}}}


def card(url: str, bad: bool, bearer: bool = False) -> dict:
    schemas = {"transport_capacity_v1": SCHEMA}
    if bad:
        schemas["broken_v1"] = BAD_SCHEMA
    security = {"securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}} if bearer else {}
    return {
        **security,
        "name": "acme-capacity",
        "description": "ACME transport capacity checker (a2a-sdk)",
        "version": "2.1.0",
        "provider": {"organization": "ACME Networks", "url": "https://acme.example"},
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {
            "streaming": True,
            "extensions": [{"uri": EXTENSION, "required": False, "params": {"schemas": schemas}}],
        },
        "defaultInputModes": ["text/plain", "application/json;schema=transport_capacity_v1"],
        "defaultOutputModes": ["application/json", "text/plain"],
        "skills": [
            {
                "id": "capacity-check",
                "name": "capacity check",
                "description": "spare capacity of a transport link",
                "tags": ["transport", "capacity"],
                "examples": ["How much capacity is left on LINK-C2?"],
                "inputModes": ["text/plain", "application/json;schema=transport_capacity_v1"],
                "outputModes": ["application/json"],
            }
        ],
        "schemas": schemas,
    }


def text(message: str) -> Message:
    return Message(role=Role.ROLE_AGENT, message_id=f"m-{abs(hash(message))}", parts=[Part(text=message)])


class CapacityExecutor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task
        if task is None:
            task = Task(
                id=context.task_id,
                context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                history=[context.message],
            )
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        data = {}
        words = []
        for part in context.message.parts:
            if part.HasField("data"):
                value = MessageToDict(part.data)
                data.update(value if isinstance(value, dict) else {})
            elif part.text:
                words.append(part.text)
        asked_before = task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        if asked_before:
            data = _first_data(task)
        await updater.start_work(text("checking the link"))
        if not data:
            await updater.add_artifact([Part(text="echo: " + " ".join(words))], name="answer")
            await updater.complete()
            return
        link = str(data.get("link_id"))
        if link == "LINK-ASK" and not asked_before:
            await updater.requires_input(text("which maintenance window may the check use?"))
            return
        if link == "LINK-BROKEN":
            await updater.failed(text(f"the capacity database has no record of {link}"))
            return
        if link == "LINK-SLOW":
            await asyncio.sleep(60)
        need = float(data.get("min_gbps") or 0)
        result = {"link_id": link, "spare_gbps": 42.0, "enough": need <= 42.0}
        if asked_before:
            result["window"] = " ".join(words)
        value = ParseDict(result, Value())
        await updater.add_artifact(
            [Part(data=value, media_type="application/json")],
            name="capacity",
            metadata={"mimeType": "application/json"},
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel(text("cancelled by the caller"))


def _first_data(task: Task) -> dict:
    for message in task.history:
        for part in message.parts:
            if part.HasField("data"):
                value = MessageToDict(part.data)
                if isinstance(value, dict):
                    return value
    return {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bad-schema", action="store_true")
    parser.add_argument("--token", help="a file whose first line is the bearer token every request must carry")
    args = parser.parse_args()
    token = Path(args.token).read_text(encoding="utf-8").splitlines()[0].strip() if args.token else None
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    document = card(url, args.bad_schema, bearer=token is not None)
    agent_card = ParseDict(document, AgentCard(), ignore_unknown_fields=True)
    handler = DefaultRequestHandler(CapacityExecutor(), InMemoryTaskStore(), agent_card)

    async def card_route(request: Request) -> JSONResponse:
        return JSONResponse(document)

    routes = [Route("/.well-known/agent-card.json", card_route), *create_jsonrpc_routes(handler, "/")]

    async def bearer_only(request: Request, call_next):  # type: ignore[no-untyped-def]
        allowed = request.url.path == "/.well-known/agent-card.json"
        if not allowed and request.headers.get("authorization") != f"Bearer {token}":
            return JSONResponse({"error": "a bearer token is required"}, status_code=401)
        return await call_next(request)

    guard = [Middleware(BaseHTTPMiddleware, dispatch=bearer_only)] if token is not None else []
    app = Starlette(routes=routes, middleware=guard)
    print(f"listening on {url}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
