"""The HTTP+JSON binding is where the card says (``/rest``) and, the same routes, at the root: a client that
joins the binding's paths with a leading slash (the A2A TCK's REST client) drops the card's path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import AgentCard, GetTaskRequest, TaskState
from a2asupport import collect, energy_agent_config, run, structured, verify

from an_agent.server import AgentServer

PAYLOAD = {"cell_ids": ["CELL-0401"], "action": "reduce", "duration_minutes": 30}
HEADERS = {"A2A-Version": "1.0"}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AgentServer]:
    with AgentServer(energy_agent_config(tmp_path / "state", 0.0)) as running:
        yield running


def test_the_sdk_client_follows_the_card_to_rest_and_the_root_serves_the_same_tasks(server: AgentServer) -> None:
    assert server.a2a is not None
    base = server.a2a.url

    async def test(client: Any, card: AgentCard, http: httpx.AsyncClient) -> tuple[str, str, str]:
        (urls,) = [i.url for i in card.supported_interfaces if i.protocol_binding == "HTTP+JSON"]
        client._config.streaming = False
        (reply,) = await collect(client.send_message(structured(PAYLOAD)))  # over the card's URL, /rest
        task = await client.get_task(GetTaskRequest(id=reply.task.id))
        return urls, task.id, TaskState.Name(task.status.state)

    url, task_id, state = run(server, test, "HTTP+JSON")
    assert url == f"{base}/rest" and state == "TASK_STATE_COMPLETED"

    with httpx.Client(auth=("admin", "admin"), verify=verify(server), timeout=30, headers=HEADERS) as http:
        # The same task at the root and under /rest, byte for byte.
        assert http.get(f"{base}/tasks/{task_id}").json() == http.get(f"{base}/rest/tasks/{task_id}").json()
        listed = http.get(f"{base}/tasks").json()
        assert task_id in [t["id"] for t in listed["tasks"]]
        message = {"message": {"messageId": "m9", "role": "ROLE_USER", "parts": [{"text": "diagnose SITE-09"}]}}
        sent = http.post(f"{base}/message:send", json={**message, "configuration": {"returnImmediately": True}})
        assert sent.status_code == 200 and sent.json()["task"]["id"], sent.text
        canceled = http.post(f"{base}/tasks/{sent.json()['task']['id']}:cancel", json={})
        assert canceled.json()["status"]["state"] == "TASK_STATE_CANCELED", canceled.text
        # JSON-RPC keeps the root's POST, the card its path.
        rpc = http.post(f"{base}/", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}})
        assert rpc.json()["result"]["id"] == task_id, rpc.text
        assert http.get(f"{base}/.well-known/agent-card.json", auth=None).json()["name"]
        assert http.get(f"{base}/nowhere/else/at-all").status_code == 404
    # The root routes are behind the same authentication.
    assert httpx.get(f"{base}/tasks", verify=verify(server), headers=HEADERS).status_code == 401
