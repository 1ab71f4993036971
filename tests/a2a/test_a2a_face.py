"""The A2A face with the reference a2a-sdk client: card, structured and text messages, streaming,
resubscription, cancel, and the same task over NETCONF."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import A2AError
from a2asupport import ENERGY, collect, energy_agent_config, run, structured, text, verify
from google.protobuf.json_format import MessageToDict
from jsonschema import Draft202012Validator

from an_agent.model import TaskStatus
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AgentServer]:
    with AgentServer(energy_agent_config(tmp_path / "state", 0.3)) as running:
        yield running


def _states(events: list[StreamResponse]) -> list[str]:
    out = []
    for event in events:
        kind = event.WhichOneof("payload")
        if kind == "task":
            out.append("task:" + TaskState.Name(event.task.status.state))
        elif kind == "status_update":
            out.append(TaskState.Name(event.status_update.status.state))
        elif kind == "artifact_update":
            out.append("artifact")
    return out


def test_card_resolves_with_schemas_and_netconf_binding(server: AgentServer) -> None:
    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> dict[str, Any]:
        raw = (await http.get(f"{server.a2a.url}/.well-known/agent-card.json", auth=None)).json()  # type: ignore[union-attr]
        return {"card": MessageToDict(card), "raw": raw}

    got = run(server, test)
    card, raw = got["card"], got["raw"]
    assert card["name"] == "IETF-TestLab-RAN-1.0"
    bindings = [i["protocolBinding"] for i in card["supportedInterfaces"]]
    assert bindings == ["JSONRPC", "HTTP+JSON", "urn:ietf:params:netconf:base:1.1"]
    assert card["supportedInterfaces"][2]["url"] == f"ssh://127.0.0.1:{server.port}"
    assert card["skills"][0]["inputModes"] == ["text/plain", ENERGY]
    assert card["securitySchemes"]["basic"]["httpAuthSecurityScheme"]["scheme"] == "Basic"
    for schema in raw["schemas"].values():  # the root schemas the SDK's protobuf card has no field for
        Draft202012Validator.check_schema(schema)
        for example in schema["examples"]:
            Draft202012Validator(schema).validate(example)


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_structured_message_streams_to_completion_and_reads_over_netconf(server: AgentServer, binding: str) -> None:
    payload = {"cell_ids": ["CELL-0401"], "action": "reduce", "duration_minutes": 30}

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> list[StreamResponse]:
        return await collect(client.send_message(structured(payload)))

    events = run(server, test, binding)
    # The task as it was created first, then every later change from the log, in order (spec 11.7).
    states = _states(events)
    assert states == ["task:TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "artifact", "TASK_STATE_COMPLETED"], states
    task_id = events[0].task.id
    artifact = events[2].artifact_update.artifact
    assert artifact.parts[0].metadata["mimeType"].startswith("application/json")
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        task = nc.get_task(task_id)  # the same task, over NETCONF
        assert task.status == TaskStatus.FINISHED and task.send_from == "admin"
        assert task.msg_data == [f"{task_id}-payload"]


def test_text_message_without_streaming_returns_the_finished_task(server: AgentServer) -> None:
    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> list[StreamResponse]:
        client._config.streaming = False
        return await collect(client.send_message(text("## target object\nSITE-07\n## task description\ndiagnose")))

    (event,) = run(server, test)
    assert TaskState.Name(event.task.status.state) == "TASK_STATE_COMPLETED"
    assert event.task.artifacts[0].artifact_id == "result"


def test_refusals_create_no_task(server: AgentServer) -> None:
    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> list[str]:
        errors = []
        for request in (
            structured({"a": 1}, mime="application/json;schema=teleport_v1"),
            structured({"cell_ids": "CELL-1", "action": "explode", "duration_minutes": 1.5}),
        ):
            with pytest.raises(A2AError) as info:
                await collect(client.send_message(request))
            errors.append(str(info.value))
        # Structured data to an existing task is refused: this one already ended (the blocking send waited for
        # it), and a task that ended takes no message at all (A2A UnsupportedOperationError); a running one
        # refuses structured data as "already running" (test_a2a_conformance).
        first = await collect(client.send_message(text("## target object\nSITE-07\n## task description\ndiagnose")))
        follow = structured({"cell_ids": ["CELL-1"], "action": "reduce"})
        follow.message.task_id = first[0].task.id
        with pytest.raises(A2AError) as info:
            await collect(client.send_message(follow))
        errors.append(str(info.value))
        return errors

    undeclared, invalid, running = run(server, test)
    assert "not declared" in undeclared
    assert "cell_ids" in invalid and "action" in invalid and "duration_minutes" in invalid, invalid
    assert "already ended as finished" in running
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        assert len(nc.list_tasks()) == 1  # only the text task


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
def test_resubscribe_after_disconnect_misses_nothing_and_cancel(server: AgentServer, binding: str) -> None:
    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> tuple[list[str], list[str], str, str]:
        stream = client.send_message(structured({"cell_ids": ["CELL-0401"], "action": "suspend"}))
        first = await anext(stream)
        await stream.aclose()  # the client goes away right after the task exists
        task_id = first.task.id
        again = await collect(client.subscribe(SubscribeToTaskRequest(id=task_id)))
        # A second task, cancelled while it runs.
        other = await anext(client.send_message(text("diagnose SITE-09")))
        cancelled = await client.cancel_task(CancelTaskRequest(id=other.task.id))
        stored = await client.get_task(GetTaskRequest(id=other.task.id))
        return (
            _states([first]),
            _states(again),
            TaskState.Name(cancelled.status.state),
            TaskState.Name(stored.status.state),
        )

    first, again, cancelled, stored = run(server, test, binding)
    assert first[0].startswith("task:")
    # The task as it is at the resubscription (it works), then only what follows, in order (spec 3.1.6, 11.7).
    assert again in (
        ["task:TASK_STATE_WORKING", "artifact", "TASK_STATE_COMPLETED"],
        ["task:TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "artifact", "TASK_STATE_COMPLETED"],
    ), again
    assert cancelled == stored == "TASK_STATE_CANCELED"


def test_wrong_password_is_refused(server: AgentServer) -> None:
    assert server.a2a is not None
    reply = httpx.post(
        f"{server.a2a.url}/",
        json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}},
        auth=("admin", "wrong"),
        verify=verify(server),
    )
    assert reply.status_code == 401
