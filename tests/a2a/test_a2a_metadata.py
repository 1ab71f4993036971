"""The message metadata keys of ours (``an-agent/task-id``, ``an-agent/task-sendFrom``) take a non-empty
string; any other value is invalid params naming the key (spec 3.3.2: servers MUST validate all input),
never dropped for a default: a client that asked for task id 5 must not get a task with another id."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2asupport import energy_agent_config, verify

from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer

PROMPT = "## target object\nSITE-07\n## task description\ndiagnose"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AgentServer]:
    with AgentServer(energy_agent_config(tmp_path / "state", 0.0)) as running:
        yield running


def test_a_metadata_key_of_ours_that_is_not_a_string_is_refused(server: AgentServer) -> None:
    assert server.a2a is not None
    with httpx.Client(
        auth=("admin", "admin"), verify=verify(server), headers={"A2A-Version": "1.0"}, timeout=30
    ) as http:
        for key in ("an-agent/task-id", "an-agent/task-sendFrom"):
            for value in (5, True, None, ["x"], {"id": "x"}, ""):
                message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": PROMPT}]}
                params: dict[str, Any] = {
                    "message": {**message, "metadata": {key: value}},
                    "configuration": {"returnImmediately": True},
                }
                body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}
                rpc = http.post(f"{server.a2a.url}/", json=body).json()
                assert rpc.get("error", {}).get("code") == -32602, (key, value, rpc)
                assert key in rpc["error"]["message"]
                rest = http.post(f"{server.a2a.url}/rest/message:send", json=params)
                assert rest.status_code == 400, (key, value, rest.text)
        # A string is taken, as before.
        message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": PROMPT}]}
        params = {"message": {**message, "metadata": {"an-agent/task-id": "T-1"}}}
        taken = http.post(f"{server.a2a.url}/rest/message:send", json=params).json()
        assert taken["task"]["id"] == "T-1", taken
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        assert [t.task_id for t in nc.list_tasks()] == ["T-1"]  # the refused messages made nothing
