"""The A2A face applies the users, NACM, ownership and login throttle of the NETCONF face.

Users come from a users file with scrypt hashes (as `an-agent users hash` makes them): before, the A2A
face compared plain passwords only (hashed users could not log in) and made every caller an admin.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types import CancelTaskRequest, Message, Part, Role, SendMessageRequest, TaskState
from a2a.utils.errors import A2AError
from a2asupport import energy_agent_config, verify
from google.protobuf.struct_pb2 import Struct

from an_agent.access.users import hash_password
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer

ENERGY = "application/json;schema=energy_saving_adjust_v1"
PAYLOAD = {"cell_ids": ["CELL-0401"], "action": "reduce", "duration_minutes": 30}
USERS = """users:
  - name: alice
    password: "{pw}"
    groups: [operators]
    agents: [svc-a]
  - name: bob
    password: "{pw}"
    groups: [operators]
    agents: [svc-b]
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[AgentServer]:
    users = tmp_path / "users.yaml"
    users.write_text(USERS.format(pw=hash_password("s3cret")))
    users.chmod(0o600)
    config = replace(energy_agent_config(tmp_path / "state", 5.0), users={}, users_file=users)
    with AgentServer(config) as running:
        yield running


def _message(sender: str | None = None) -> SendMessageRequest:
    part = Part(metadata=Struct())
    part.data.struct_value.update(PAYLOAD)
    part.metadata.update({"mimeType": ENERGY})
    message = Message(message_id="m1", role=Role.ROLE_USER, parts=[part])
    if sender is not None:
        message.metadata.update({"an-agent/task-sendFrom": sender})
    return SendMessageRequest(message=message, configuration={"return_immediately": True})


async def _client(http: httpx.AsyncClient, base: str) -> Any:
    card = await A2ACardResolver(http, base).get_agent_card()
    return ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)


def _base(server: AgentServer) -> str:
    assert server.a2a is not None
    return server.a2a.url


def test_hashed_user_sends_and_owner_rules_hold(server: AgentServer) -> None:
    base = _base(server)

    async def main() -> tuple[str, str, A2AError | None, A2AError | None]:
        async with (
            httpx.AsyncClient(auth=("alice", "s3cret"), timeout=30, verify=verify(server)) as alice_http,
            httpx.AsyncClient(auth=("bob", "s3cret"), timeout=30, verify=verify(server)) as bob_http,
        ):
            alice, bob = await _client(alice_http, base), await _client(bob_http, base)
            sent = [event async for event in alice.send_message(_message())]
            task_id = sent[-1].task.id
            refused_cancel = refused_sender = None
            try:
                await bob.cancel_task(CancelTaskRequest(id=task_id))
            except A2AError as exc:
                refused_cancel = exc
            try:
                async for _ in alice.send_message(_message(sender="svc-b")):
                    pass
            except A2AError as exc:
                refused_sender = exc
            cancelled = await alice.cancel_task(CancelTaskRequest(id=task_id))
            return task_id, cancelled.status.state, refused_cancel, refused_sender

    task_id, state, refused_cancel, refused_sender = asyncio.run(main())
    assert refused_cancel is not None and "access denied" in refused_cancel.message
    assert refused_sender is not None and "may not send tasks as svc-b" in refused_sender.message
    assert state == TaskState.TASK_STATE_CANCELED  # the owner may cancel
    # The task is alice's on both faces: NETCONF shows it, sent as her only agent.
    with AgentClient.connect("127.0.0.1", server.port, username="alice", password="s3cret") as nc:
        task = nc.get_task(task_id)
    assert task.send_from == "svc-a"  # her only agent


def test_wrong_password_is_refused_logged_and_slowed(server: AgentServer, caplog: pytest.LogCaptureFixture) -> None:
    base = _base(server)

    async def main() -> list[int]:
        async with httpx.AsyncClient(timeout=30, verify=verify(server)) as http:
            codes = []
            for password in ("wrong", "wrong again", "s3cret"):
                reply = await http.post(base + "/", auth=("alice", password), json={"jsonrpc": "2.0", "id": 1})
                codes.append(reply.status_code)
            return codes

    with caplog.at_level(logging.WARNING, logger="an_agent.a2a.server"):
        codes = asyncio.run(main())
    assert codes[:2] == [401, 401] and codes[2] != 401
    failures = [r.getMessage() for r in caplog.records if "failed A2A login" in r.getMessage()]
    assert len(failures) == 2 and "'alice' from 127.0.0.1" in failures[0]
    assert "0.50 s" in failures[1]  # the second failure from the source waits twice as long
    # Both faces share the throttle: the SSH listener saw the same source fail twice.
    assert server._listener.login_throttle.tracked_sources() == 1
