"""The memo of serialised replies: per read view, per request, dropped when data or task state changes."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from an_agent.access.users import hash_password
from an_agent.model import AgentProfile
from an_agent.nc.face import NetconfFace
from an_agent.nc.reply_cache import ReplyCache, request_key
from an_agent.nc.wire import reply_start_tag
from an_agent.server import AgentServer, ServerConfig
from rawnc import NS, RawSession, wait_for
from support import IRTF

USERS = """users:
  - name: alice
    password: "{pw}"
    groups: [operators]
  - name: guest
    password: "{pw}"
    groups: [guests]
"""

# guests may not read tasks; operators may read everything.
NACM_RULES = {
    "ietf-netconf-acm:nacm": {
        "enable-nacm": True,
        "read-default": "permit",
        "write-default": "permit",
        "exec-default": "permit",
        "rule-list": [
            {
                "name": "guests",
                "group": ["guests"],
                "rule": [
                    {
                        "name": "no-tasks",
                        "module-name": "irtf-agent",
                        "path": "/irtf-agent:tasks",
                        "access-operations": "*",
                        "action": "deny",
                    }
                ],
            }
        ],
    }
}

GET_TASKS = f'<get><filter type="subtree"><tasks xmlns="{IRTF}"/></filter></get>'


def _assign(task_id: str) -> str:
    return (
        f'<edit-config><target><running/></target><config><tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id>'
        "<task-sendFrom>svc</task-sendFrom><commuType>taskAssign</commuType>"
        "<content>## target object\nSITE-07\n## task description\ndiagnose</content></task></tasks></config>"
        "</edit-config>"
    )


def _task_ids(reply: etree._Element) -> list[str]:
    return [e.text or "" for e in reply.iterfind(f".//{{{IRTF}}}task-id")]


def _statuses(reply: etree._Element) -> list[str]:
    return [e.text or "" for e in reply.iterfind(f".//{{{IRTF}}}task-status")]


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    users = tmp_path / "users.yaml"
    users.write_text(USERS.format(pw=hash_password("pw")))
    users.chmod(0o600)
    nacm = tmp_path / "nacm.json"
    nacm.write_text(json.dumps(NACM_RULES))
    config = ServerConfig(
        state_dir=tmp_path / "state", port=0, profile=profile, users_file=users, nacm_file=nacm, schemas="off"
    )
    with AgentServer(config) as srv:
        yield srv


def _face(server: AgentServer) -> NetconfFace:
    handler = server._listener.handler
    assert isinstance(handler, NetconfFace)
    return handler


def test_one_users_reply_never_reaches_another(server: AgentServer) -> None:
    alice = RawSession(server.port, user="alice", password="pw")
    guest = RawSession(server.port, user="guest", password="pw")
    try:
        assert alice.rpc(_assign("t1")).find("nc:ok", NS) is not None
        replies = _face(server).replies
        # Same request bytes, alternating users, several times: the memo is hit,
        # yet each user keeps seeing only its own view.
        for _ in range(3):
            assert _task_ids(alice.rpc(GET_TASKS)) == ["t1"]
            assert _task_ids(guest.rpc(GET_TASKS)) == []
            assert _task_ids(guest.rpc("<get/>")) == []
        assert replies.hits >= 4
    finally:
        alice.close()
        guest.close()


def test_a_commit_and_a_task_state_change_both_invalidate(server: AgentServer) -> None:
    alice = RawSession(server.port, user="alice", password="pw")
    try:
        assert _task_ids(alice.rpc(GET_TASKS)) == []
        assert _task_ids(alice.rpc(GET_TASKS)) == []  # kept
        assert alice.rpc(_assign("t2")).find("nc:ok", NS) is not None
        assert _task_ids(alice.rpc(GET_TASKS)) == ["t2"]  # the commit moved the version on
        # The default behaviour finishes the task on its own: status changes with no commit.
        wait_for(lambda: _statuses(alice.rpc(GET_TASKS)) == ["finished"])
    finally:
        alice.close()


def test_the_message_id_of_each_request_is_echoed_on_a_memo_hit(server: AgentServer) -> None:
    alice = RawSession(server.port, user="alice", password="pw")
    try:
        first = alice.rpc(GET_TASKS, message_id="a-1")
        second = alice.rpc(GET_TASKS, message_id="b&amp;&lt;2")
        assert first.get("message-id") == "a-1" and second.get("message-id") == "b&<2"
        assert etree.tostring(first.find("nc:data", NS)) == etree.tostring(second.find("nc:data", NS))
    finally:
        alice.close()


def test_xpath_prefixes_are_part_of_the_request() -> None:
    # The same select text means different nodes when its prefix is bound elsewhere (here on <rpc>).
    a = etree.fromstring('<rpc xmlns:p="urn:a"><get><filter type="xpath" select="/p:x"/></get></rpc>')
    b = etree.fromstring('<rpc xmlns:p="urn:b"><get><filter type="xpath" select="/p:x"/></get></rpc>')
    assert request_key(a[0]) != request_key(b[0])
    assert request_key(a[0]) == request_key(etree.fromstring(etree.tostring(a))[0])


def test_cache_drops_every_entry_when_the_version_moves_on() -> None:
    cache = ReplyCache()
    assert cache.get_or_build((1, 0, 0), "alice", "q", lambda: "v1") == "v1"
    assert cache.get_or_build((1, 0, 0), "alice", "q", lambda: "never") == "v1"
    assert cache.get_or_build((1, 0, 0), "bob", "q", lambda: "bob's") == "bob's"
    assert cache.get_or_build((1, 1, 0), "alice", "q", lambda: "v2") == "v2"
    assert len(cache) == 1
    # A slow reader that read an older version files nothing over the newer entries.
    assert cache.get_or_build((1, 0, 0), "carol", "q", lambda: "old") == "old"
    assert len(cache) == 1 and cache.get_or_build((1, 1, 0), "alice", "q", lambda: "never") == "v2"


def test_cache_is_bounded_and_never_keeps_errors() -> None:
    cache = ReplyCache(max_entries=2, max_bytes=100)
    for name in ("a", "b", "c"):
        cache.get_or_build(1, name, "q", lambda: "x" * 10)
    assert len(cache) == 2
    cache.get_or_build(1, "big", "q", lambda: "y" * 60)  # > a quarter of the bytes: not kept
    assert len(cache) == 2

    def fail() -> str:
        raise ValueError("bad filter")

    with pytest.raises(ValueError):
        cache.get_or_build(1, "a", "bad", fail)
    assert cache.get_or_build(1, "a", "bad", lambda: "fine") == "fine"


def test_concurrent_readers_see_their_own_views(server: AgentServer) -> None:
    alice = RawSession(server.port, user="alice", password="pw")
    try:
        assert alice.rpc(_assign("t3")).find("nc:ok", NS) is not None
    finally:
        alice.close()
    wrong: list[str] = []

    def reader(user: str, expected: list[str]) -> None:
        session = RawSession(server.port, user=user, password="pw")
        try:
            for _ in range(30):
                got = _task_ids(session.rpc(GET_TASKS))
                if got != expected:
                    wrong.append(f"{user}: {got}")
        finally:
            session.close()

    threads = [threading.Thread(target=reader, args=(u, e)) for u, e in (("alice", ["t3"]), ("guest", []))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert wrong == []


@pytest.mark.parametrize(
    "attributes",
    [
        'message-id="1"',
        'message-id="a&amp;b&lt;c&gt;d&quot;e\'f"',
        'message-id="tab&#9;nl&#10;cr&#13;sp x" other="é ✓"',
        'xmlns:ex="urn:example" message-id="7" ex:trace="t-1"',
    ],
)
def test_the_reply_start_tag_is_what_lxml_writes(attributes: str) -> None:
    """The hit path writes <rpc-reply ...> itself; it must equal lxml's serialisation of the same attributes."""
    rpc = etree.fromstring(f'<rpc xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" {attributes}><get/></rpc>')
    reply = etree.Element("{urn:ietf:params:xml:ns:netconf:base:1.0}rpc-reply", nsmap={None: NS["nc"]})
    for name, value in rpc.attrib.items():
        reply.set(name, value)
    empty = etree.tostring(reply, encoding="unicode")  # <rpc-reply .../>, as the slow path writes it
    assert reply_start_tag(rpc) == empty[:-2] + ">"
    written = reply_start_tag(rpc) + "</rpc-reply>"
    assert dict(etree.fromstring(written).attrib) == dict(rpc.attrib)


def test_lookup_finds_only_the_same_version_view_and_request() -> None:
    cache = ReplyCache()
    assert cache.lookup(1, "alice", "q") is None
    cache.get_or_build(1, "alice", "q", lambda: "v1")
    assert cache.lookup(1, "alice", "q") == "v1"
    assert cache.lookup(1, "bob", "q") is None
    assert cache.lookup(1, "alice", "other") is None
    assert cache.lookup(2, "alice", "q") is None
    assert cache.hits == 1


def test_a_memo_hit_skips_no_check_a_different_request_needs(server: AgentServer) -> None:
    """The hit path trusts only requests kept before: any other text is checked and refused as usual."""
    alice = RawSession(server.port, user="alice", password="pw")
    try:
        alice.rpc(GET_TASKS)
        bad = GET_TASKS.replace("<get>", "<get><source><running/></source>")
        for _ in range(2):
            reply = alice.rpc(bad)
            assert reply.findtext("nc:rpc-error/nc:error-tag", namespaces=NS) == "unknown-element"
        bad_source = f'<get-config><source><startup/></source><filter type="subtree"><tasks xmlns="{IRTF}"/></filter></get-config>'
        assert alice.rpc(bad_source).findtext("nc:rpc-error/nc:error-tag", namespaces=NS) == "invalid-value"
        assert _task_ids(alice.rpc(GET_TASKS)) == []  # the kept request still answers
    finally:
        alice.close()
