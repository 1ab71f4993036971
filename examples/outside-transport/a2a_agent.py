#!/usr/bin/env python3
"""An IP/transport fault agent built with a2a-sdk alone (imports nothing of an-agent).

An A2A v1 agent: its card declares fault_diagnosis_v1 as a JSON Schema (input/output-schemas extension);
a message with such a data part and the text "Diagnose ..." / "Repair ..." is worked on through the lab's
transport element manager over NETCONF (ncclient, em_diagnosis.py) and answered with an artifact.
an-agent's gateway puts it behind a NETCONF face (topology ``a2a_upstream``):

    a2a_agent.py --port PORT --em HOST:PORT --login FILE
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys

import em_diagnosis
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
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

EXTENSION = "https://raw.githubusercontent.com/facultyai/a2a-extension-object-schemas/refs/heads/main/v1"
SITES = {"type": ["array", "null"], "items": {"type": "string"}}
FAULT_DIAGNOSIS = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "fault_type": {"type": "string", "description": "Kind of fault to diagnose."},
        "affected_site_ids": {**SITES, "description": "Sites out of service."},
        "affected_cell_ids": {**SITES, "description": "Cells affected."},
        "domain": {"type": ["string", "null"], "description": "Network domain of the fault."},
        "severity": {"type": ["string", "null"], "description": "Severity of the fault."},
        "alarm_ids": {**SITES, "description": "Alarms raised."},
        "suspected_root_cause": {"type": ["string", "null"], "description": "What the requester suspects."},
        "occurred_at": {"type": ["string", "null"], "description": "When it began."},
        "other": {"description": "Anything else, in words."},
    },
    "required": ["fault_type"],
}


def card(url: str) -> dict:
    modes = ["text/plain", "application/json;schema=fault_diagnosis_v1"]
    return {
        "name": "acme-transport-a2a",
        "description": "ACME transport fault agent (a2a-sdk): backhaul diagnosis and link restarts",
        "version": "1.0.0",
        "provider": {"organization": "ACME Networks", "url": "https://acme.example"},
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "capabilities": {
            "streaming": True,
            "extensions": [{"uri": EXTENSION, "params": {"schemas": {"fault_diagnosis_v1": FAULT_DIAGNOSIS}}}],
        },
        "defaultInputModes": modes,
        "defaultOutputModes": ["application/json"],
        "skills": [
            {"id": "transport-diagnosis", "name": "transport diagnosis", "tags": ["diagnose", "transport"],
             "description": "diagnose the backhaul of base stations: link and port faults",
             "inputModes": modes, "outputModes": ["application/json"]},
            {"id": "port-reset", "name": "port reset", "tags": ["repair", "port"],
             "description": "restart transport links remotely", "inputModes": modes, "outputModes": ["application/json"]},
        ],
        "schemas": {"fault_diagnosis_v1": FAULT_DIAGNOSIS},
    }  # fmt: skip


def text(words: str) -> Message:
    return Message(role=Role.ROLE_AGENT, message_id=f"m-{abs(hash(words))}", parts=[Part(text=words)])


class TransportExecutor(AgentExecutor):
    def __init__(self, em: str, login: tuple[str, str]) -> None:
        self.em, self.login = em, login

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(id=context.task_id, context_id=context.context_id,
                     status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=[context.message])
            )  # fmt: skip
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        payload, words = {}, []
        for part in context.message.parts:
            if part.HasField("data"):
                value = MessageToDict(part.data)
                payload.update(value if isinstance(value, dict) else {})
            elif part.text:
                words.append(part.text)
        verb = " ".join(words).split()[0].lower() if " ".join(words).split() else ""
        if not payload:
            await updater.reject(text("send a fault_diagnosis_v1 data part"))
            return
        await updater.start_work(text(f"asking the transport element manager at {self.em}"))
        try:
            summary, result = await asyncio.to_thread(self._work, verb, payload)
        except (ValueError, OSError) as exc:
            await updater.failed(text(str(exc)))
            return
        await updater.add_artifact([Part(data=ParseDict(result, Value()), media_type="application/json")],
                                   name="finding", metadata={"mimeType": "application/json"})  # fmt: skip
        await updater.update_status(TaskState.TASK_STATE_COMPLETED, message=text(summary))

    def _work(self, verb: str, payload: dict) -> tuple[str, dict]:
        with em_diagnosis.connect(self.em, self.login) as em:
            if verb == "repair":
                return em_diagnosis.repair(em, payload)
            return em_diagnosis.diagnose(em, payload, "acme-transport-a2a")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel(text("cancelled"))


def main() -> int:
    parser = argparse.ArgumentParser(description="IP/transport fault agent (a2a-sdk) over an element manager")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--em", required=True, help="HOST:PORT of the transport element manager")
    parser.add_argument("--login", required=True, help="file holding user:password for it")
    args = parser.parse_args()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    document = card(url)
    handler = DefaultRequestHandler(
        TransportExecutor(args.em, em_diagnosis.read_login(args.login)),
        InMemoryTaskStore(),
        ParseDict(document, AgentCard(), ignore_unknown_fields=True),
    )

    async def card_route(request: Request) -> JSONResponse:
        return JSONResponse(document)

    routes = [Route("/.well-known/agent-card.json", card_route), *create_jsonrpc_routes(handler, "/")]
    print(f"listening on {url}", flush=True)
    uvicorn.Server(uvicorn.Config(Starlette(routes=routes), log_level="warning")).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
