"""An A2A request body is bounded as a NETCONF message is (``--max-message-bytes``): a bigger one is HTTP 413
before the SDK reads it into memory, declared or chunked; streams still work below the bound."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2asupport import energy_agent_config, verify

from an_agent.server import AgentServer

LIMIT = 64 * 1024
PROMPT = "## target object\nSITE-07\n## task description\n"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AgentServer]:
    config = dataclasses.replace(energy_agent_config(tmp_path / "state", 0.0), max_message_bytes=LIMIT)
    with AgentServer(config) as running:
        yield running


def _send(text: str, method: str = "SendMessage") -> dict[str, Any]:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": PROMPT + text}]}
    return {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}


def test_a_body_over_the_bound_is_413_and_makes_nothing(server: AgentServer) -> None:
    assert server.a2a is not None
    url = f"{server.a2a.url}/"
    with httpx.Client(
        auth=("admin", "admin"), verify=verify(server), headers={"A2A-Version": "1.0"}, timeout=30
    ) as http:
        big = json.dumps(_send("diagnose " + "x" * LIMIT)).encode()
        declared = http.post(url, content=big, headers={"Content-Type": "application/json"})
        assert declared.status_code == 413 and "--max-message-bytes" in declared.text, declared.text[:300]

        def chunks() -> Iterator[bytes]:  # no Content-Length: Transfer-Encoding chunked
            for start in range(0, len(big), 8192):
                yield big[start : start + 8192]

        chunked = http.post(url, content=chunks(), headers={"Content-Type": "application/json"})
        assert chunked.status_code == 413, chunked.text[:300]
        rest = http.post(f"{server.a2a.url}/rest/message:send", content=big[len('{"jsonrpc": "2.0", "id": 1, ') :])
        assert rest.status_code == 413, rest.text[:300]
        assert http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}}).json()["result"][
            "tasks"
        ] == []  # fmt: skip
        # Below the bound: a blocking send and a stream, as before.
        assert http.post(url, json=_send("diagnose")).json()["result"]["task"]["status"]["state"]
        with http.stream("POST", url, json=_send("diagnose", "SendStreamingMessage")) as stream:
            events = [json.loads(line[5:]) for line in stream.iter_lines() if line.startswith("data:")]
        assert events[-1]["result"]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED", events
    # Without credentials the body is not read at all: 401, not 413.
    anonymous = httpx.post(url, content=big, headers={"Content-Type": "application/json"}, verify=verify(server))
    assert anonymous.status_code == 401
