"""Access control end to end over NETCONF: NACM defaults, task ownership, task-sendFrom, kill-session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.access.users import hash_password
from an_agent.agents.default import DefaultBehaviour
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig
from rawnc import NC_NS, NS, RawSession, error_fields
from support import IRTF

USERS = """users:
  - name: alice
    password: "{pw}"
    groups: [operators]
    agents: [svc-a]
  - name: bob
    password: "{pw}"
    groups: [operators]
    agents: [svc-b]
  - name: root
    password: "{pw}"
    groups: [admin]
  - name: carol
    password: "{pw}"
    groups: []
"""


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    users = tmp_path / "users.yaml"
    users.write_text(USERS.format(pw=hash_password("pw")))
    users.chmod(0o600)
    with AgentServer(
        ServerConfig(
            state_dir=tmp_path / "state",
            port=0,
            profile=profile,
            users_file=users,
            schemas="off",
            behaviour=DefaultBehaviour(work_seconds=5),  # tasks still run when the test cancels them
        )
    ) as srv:
        yield srv


def _task(task_id: str, sender: str, operation: str = "") -> str:
    op = f' xmlns:nc="{NC_NS}" nc:operation="{operation}"' if operation else ""
    return (
        f'<edit-config><target><running/></target><config><tasks xmlns="{IRTF}"><task{op}><task-id>{task_id}</task-id>'
        f"<task-sendFrom>{sender}</task-sendFrom><commuType>taskAssign</commuType><task-async>true</task-async>"
        "<content>## target object\nSITE-07\n## task description\ndiagnose</content></task></tasks></config>"
        "</edit-config>"
    )


def _cancel(task_id: str) -> str:
    return (
        f"<edit-config><target><running/></target><default-operation>none</default-operation><config>"
        f'<tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id><commuType xmlns:nc="{NC_NS}" '
        'nc:operation="merge">taskCancel</commuType></task></tasks></config></edit-config>'
    )


def _delete(task_id: str) -> str:
    return (
        f'<edit-config><target><running/></target><config><tasks xmlns="{IRTF}"><task xmlns:nc="{NC_NS}" '
        f'nc:operation="delete"><task-id>{task_id}</task-id></task></tasks></config></edit-config>'
    )


def _ok(reply: object) -> bool:
    return reply.find("nc:ok", NS) is not None  # type: ignore[attr-defined]


def test_owner_and_admin_versus_other_operator(server: AgentServer) -> None:
    alice = RawSession(server.port, user="alice", password="pw")
    bob = RawSession(server.port, user="bob", password="pw")
    root = RawSession(server.port, user="root", password="pw")
    try:
        assert _ok(alice.rpc(_task("t1", "svc-a")))
        for attempt in (_cancel("t1"), _delete("t1"), _task("t1", "svc-b", "replace")):
            fields = error_fields(bob.rpc(attempt))
            assert fields["tag"] == "access-denied", fields
            assert "t1" in (fields["message"] or "") or "svc" in (fields["message"] or "")
        assert _ok(alice.rpc(_cancel("t1")))
        assert _ok(root.rpc(_delete("t1")))
    finally:
        for session in (alice, bob, root):
            session.close()


def test_sending_as_another_agent_is_refused(server: AgentServer) -> None:
    alice = RawSession(server.port, user="alice", password="pw")
    try:
        fields = error_fields(alice.rpc(_task("t2", "svc-b")))
        assert fields["tag"] == "access-denied" and "svc-b" in (fields["message"] or "")
        assert fields["path"] and fields["path"].endswith("task-sendFrom")
    finally:
        alice.close()


def test_a_user_in_no_group_may_read_but_not_write(server: AgentServer) -> None:
    carol = RawSession(server.port, user="carol", password="pw")
    try:
        assert carol.rpc("<get/>").find("nc:data", NS) is not None
        assert error_fields(carol.rpc(_task("t3", "anything")))["tag"] == "access-denied"
    finally:
        carol.close()


def test_kill_session_and_schema_decisions_need_their_groups(server: AgentServer) -> None:
    alice = RawSession(server.port, user="alice", password="pw")
    bob = RawSession(server.port, user="bob", password="pw")
    root = RawSession(server.port, user="root", password="pw")
    try:
        kill = f"<kill-session><session-id>{alice.session_id}</session-id></kill-session>"
        assert error_fields(bob.rpc(kill))["tag"] == "access-denied"
        assert alice.is_open()
        assert _ok(root.rpc(kill))
    finally:
        for session in (alice, bob, root):
            session.close()
