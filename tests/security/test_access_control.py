"""Access control end to end over NETCONF: NACM defaults, task ownership, task-sendFrom, kill-session, /nacm."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from lxml import etree

from an_agent.access.nacm import NACM_NS
from an_agent.access.users import hash_password
from an_agent.agents.default import DefaultBehaviour
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig
from an_agent.yang.context import YangContext
from rawnc import NC_NS, NS, RawSession, error_fields
from support import IRTF

ACM = {"acm": NACM_NS, **NS}
NCM = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"

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


@contextmanager
def logged_in(server: AgentServer, *users: str) -> Iterator[tuple[RawSession, ...]]:
    """A session per user name (password ``pw``), all closed at the end."""
    sessions: list[RawSession] = []
    try:
        for user in users:
            sessions.append(RawSession(server.port, user=user, password="pw"))
        yield tuple(sessions)
    finally:
        for session in sessions:
            session.close()


def _ok(reply: object) -> bool:
    return reply.find("nc:ok", NS) is not None  # type: ignore[attr-defined]


def test_owner_and_admin_versus_other_operator(server: AgentServer) -> None:
    with logged_in(server, "alice", "bob", "root") as (alice, bob, root):
        assert _ok(alice.rpc(_task("t1", "svc-a")))
        for attempt in (_cancel("t1"), _delete("t1"), _task("t1", "svc-b", "replace")):
            fields = error_fields(bob.rpc(attempt))
            assert fields["tag"] == "access-denied", fields
            assert "t1" in (fields["message"] or "") or "svc" in (fields["message"] or "")
        assert _ok(alice.rpc(_cancel("t1")))
        assert _ok(root.rpc(_delete("t1")))


def test_sending_as_another_agent_is_refused(server: AgentServer) -> None:
    with logged_in(server, "alice") as (alice,):
        fields = error_fields(alice.rpc(_task("t2", "svc-b")))
        assert fields["tag"] == "access-denied" and "svc-b" in (fields["message"] or "")
        assert fields["path"] and fields["path"].endswith("task-sendFrom")


def test_a_user_in_no_group_may_read_but_not_write(server: AgentServer) -> None:
    with logged_in(server, "carol") as (carol,):
        assert carol.rpc("<get/>").find("nc:data", NS) is not None
        assert error_fields(carol.rpc(_task("t3", "anything")))["tag"] == "access-denied"


def _kill(session: RawSession) -> str:
    return f"<kill-session><session-id>{session.session_id}</session-id></kill-session>"


def test_kill_session_of_another_users_session_needs_admin(server: AgentServer) -> None:
    with logged_in(server, "alice", "bob", "root") as (alice, bob, root):
        fields = error_fields(bob.rpc(_kill(alice)))
        assert fields["tag"] == "access-denied" and "alice" in (fields["message"] or "")
        assert alice.is_open()
        assert _ok(root.rpc(_kill(alice)))
        assert wait_closed(alice)


def test_kill_session_of_ones_own_other_session_needs_no_admin(server: AgentServer) -> None:
    with logged_in(server, "alice", "alice", "carol", "carol") as (first, second, carol, carol2):
        assert _ok(second.rpc(_kill(first)))
        assert wait_closed(first) and second.is_open()
        # RFC 8341 3.4.4: a user in no group reaches the defaults, and kill-session is default-deny-all.
        refused = error_fields(carol.rpc(_kill(carol2)))
        assert refused["tag"] == "access-denied" and "default-deny-all" in (refused["message"] or "")


def wait_closed(session: RawSession) -> bool:
    try:
        session.receive()  # the server closes the channel: EOF
    except (EOFError, OSError):
        return True
    return False


# -- /nacm (RFC 8341) served ---------------------------------------------------------------------------
def _nacm_get() -> str:
    return f'<get><filter type="subtree"><nacm xmlns="{NACM_NS}"/></filter></get>'


def _counters(session: RawSession) -> dict[str, int]:
    nacm = session.rpc(_nacm_get()).find("nc:data/acm:nacm", ACM)
    assert nacm is not None
    names = ("denied-operations", "denied-data-writes", "denied-notifications")
    return {name: int(nacm.findtext(f"acm:{name}", namespaces=ACM) or "-1") for name in names}


def test_ietf_netconf_acm_is_advertised_and_served(server: AgentServer) -> None:
    with logged_in(server, "root") as (root,):
        caps = [c.text or "" for c in root.server_hello.iterfind("nc:capabilities/nc:capability", NS)]
        assert any(c.startswith(NACM_NS + "?module=ietf-netconf-acm&revision=2018-02-14") for c in caps)
        schema = root.rpc(
            f'<get-schema xmlns="{NCM}"><identifier>ietf-netconf-acm</identifier><version>2018-02-14</version>'
            "</get-schema>"
        )
        assert (schema.findtext(f"{{{NCM}}}data") or "").startswith("module ietf-netconf-acm")
        data = root.rpc("<get/>").find("nc:data", NS)
        assert data is not None
        listed = data.xpath("n:netconf-state/n:schemas/n:schema/n:identifier/text()", namespaces={"n": NCM})
        assert "ietf-netconf-acm" in listed
        # The whole reply (with /nacm and its mandatory counters) is valid YANG data.
        YangContext.default().validate_data(etree.tostring(data, encoding="unicode"))
        nacm = data.find("acm:nacm", ACM)
        assert nacm is not None and nacm.findtext("acm:write-default", namespaces=ACM) == "deny"
        lists = nacm.xpath("acm:rule-list/acm:name/text()", namespaces=ACM)
        assert lists == ["admin", "schema-admin", "operators", "everyone"]
        path = nacm.find("acm:rule-list/acm:rule/acm:path", ACM)
        assert path is not None and path.text == "/irtf-agent:tasks" and path.nsmap["irtf-agent"] == IRTF
        config = root.rpc(f"<get-config><source><running/></source>{_nacm_get()[5:-6]}</get-config>")
        in_running = config.find("nc:data/acm:nacm", ACM)
        assert in_running is not None and in_running.find("acm:denied-operations", ACM) is None
        assert in_running.findtext("acm:enable-nacm", namespaces=ACM) == "true"


def test_nacm_counts_denials_and_is_hidden_from_non_admins(server: AgentServer) -> None:
    with logged_in(server, "root", "alice", "bob") as (root, alice, bob):
        before = _counters(root)
        assert error_fields(bob.rpc(_kill(alice)))["tag"] == "access-denied"
        assert error_fields(bob.rpc(_task("t9", "svc-a")))["tag"] == "access-denied"
        after = _counters(root)
        assert after["denied-operations"] == before["denied-operations"] + 1
        assert after["denied-data-writes"] == before["denied-data-writes"] + 1
        # default-deny-all on /nacm: an operator's read of it is empty, and the full <get> leaves it out.
        data = alice.rpc(_nacm_get()).find("nc:data", NS)
        assert data is not None and len(data) == 0
        assert alice.rpc("<get/>").find("nc:data/acm:nacm", ACM) is None


def test_edits_of_nacm_are_refused_precisely(server: AgentServer) -> None:
    edit = (
        f'<edit-config><target><running/></target><config><nacm xmlns="{NACM_NS}">'
        "<write-default>permit</write-default></nacm></config></edit-config>"
    )
    with logged_in(server, "root", "alice") as (root, alice):
        denied = error_fields(alice.rpc(edit))
        assert (denied["tag"], denied["path"]) == ("access-denied", "/ietf-netconf-acm:nacm")
        refused = error_fields(root.rpc(edit))
        assert (refused["tag"], refused["path"]) == ("operation-not-supported", "/ietf-netconf-acm:nacm")
        assert "--nacm" in (refused["message"] or "")
        nacm = root.rpc(_nacm_get()).find("nc:data/acm:nacm", ACM)
        assert nacm is not None and nacm.findtext("acm:write-default", namespaces=ACM) == "deny"
