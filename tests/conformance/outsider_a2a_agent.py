"""An A2A agent we did not write: a2a-sdk alone, run as a process of its own by the conformance tests.

It imports nothing of an_agent. Its card declares the input/output-schemas extension with two faults
a conformance kit must report: schema ``order`` has an ``examples`` entry its own schema refuses
(``quantity`` is a string, the schema wants an integer), and skill ``ship`` takes
``application/json;schema=shipment``, a schema the card never declares. Every message gets a task
that completes at once.

Usage: python outsider_a2a_agent.py  -> prints the base URL on stdout, serves until killed.
"""

from __future__ import annotations

import socket
import sys
from typing import Any

import uvicorn
from a2a.client.card_resolver import parse_agent_card
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import Task, TaskState, TaskStatus
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

EXTENSION = "https://raw.githubusercontent.com/facultyai/a2a-extension-object-schemas/refs/heads/main/v1"


def card(url: str) -> dict[str, Any]:
    order = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"item": {"type": "string"}, "quantity": {"type": "integer", "minimum": 1}},
        "required": ["item", "quantity"],
        "additionalProperties": False,
        "examples": [{"item": "fibre patch cord", "quantity": 2}, {"item": "SFP module", "quantity": "three"}],
    }
    return {
        "name": "outsider-shop",
        "description": "A small A2A agent written with a2a-sdk only",
        "version": "0.1.0",
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {"streaming": True, "extensions": [{"uri": EXTENSION, "description": "named schemas"}]},
        "defaultInputModes": ["text/plain", "application/json;schema=order"],
        "defaultOutputModes": ["text/plain"],
        "skills": [
            {
                "id": "order",
                "name": "order",
                "description": "order spare parts",
                "tags": ["order"],
                "inputModes": ["text/plain", "application/json;schema=order"],
                "outputModes": ["text/plain"],
            },
            {
                "id": "ship",
                "name": "ship",
                "description": "ship an order",
                "tags": ["ship"],
                "inputModes": ["text/plain", "application/json;schema=shipment"],
                "outputModes": ["text/plain"],
            },
        ],
        "schemas": {"order": order},
    }


class Done(AgentExecutor):
    """Completes every task at once."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        if context.current_task is None:
            submitted = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, status=submitted))
        await TaskUpdater(event_queue, task_id, context_id).complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


def main() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    document = card(url)
    handler = DefaultRequestHandler(Done(), InMemoryTaskStore(), parse_agent_card(dict(document)))

    async def serve_card(request: Request) -> JSONResponse:
        return JSONResponse(document)

    routes = [Route("/.well-known/agent-card.json", serve_card), *create_jsonrpc_routes(handler, "/")]
    print(url, flush=True)
    server = uvicorn.Server(uvicorn.Config(Starlette(routes=routes), log_level="warning"))
    server.run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
