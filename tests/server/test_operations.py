"""NETCONF operations of a real agent server, driven by stock ncclient over SSH on loopback."""

from __future__ import annotations

import time

from lxml import etree

from an_agent.yang.context import YangContext
from rawnc import NS, RawSession, error_fields, wait_for
from support import IRTF, task_xml

NCM = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"


def data_of(reply) -> etree._Element:  # type: ignore[no-untyped-def]
    root = etree.fromstring(reply.xml.encode())
    data = root.find("nc:data", NS)
    assert data is not None, reply.xml
    return data


def test_hello_lists_every_module_with_revision_and_notification_capabilities(nc) -> None:  # type: ignore[no-untyped-def]
    caps = set(nc.server_capabilities)
    assert "urn:ietf:params:netconf:base:1.1" in caps
    assert "urn:ietf:params:netconf:capability:notification:1.0" in caps
    assert "urn:ietf:params:netconf:capability:interleave:1.0" in caps
    for module in YangContext.default().modules():
        assert module.capability in caps


def test_get_returns_the_profile_and_it_validates_against_the_yang(nc) -> None:  # type: ignore[no-untyped-def]
    nc.edit_config(target="running", config=task_xml("t-valid"))
    wait_for(lambda: b"finished" in etree.tostring(data_of(nc.get())))
    data = data_of(nc.get())
    assert data.findtext(f"{{{IRTF}}}agent/{{{IRTF}}}name") == "IETF-TestLab-RAN-1.0"
    # The whole <get> reply (profile, tasks with state, netconf-state) is valid instance data.
    YangContext.default().validate_data("".join(etree.tostring(c, encoding="unicode") for c in data))


def test_subtree_filter_selects_only_what_is_asked(nc) -> None:  # type: ignore[no-untyped-def]
    reply = nc.get(filter=("subtree", f'<agent xmlns="{IRTF}"><version/><skills/></agent>'))
    data = data_of(reply)
    agent = data.find(f"{{{IRTF}}}agent")
    assert agent is not None
    assert [etree.QName(c).localname for c in agent] == ["skills", "version"] or [
        etree.QName(c).localname for c in agent
    ] == ["version", "skills"]
    assert data.find(f"{{{IRTF}}}tasks") is None


def test_subtree_content_match_selects_one_task(nc) -> None:  # type: ignore[no-untyped-def]
    nc.edit_config(target="running", config=task_xml("a1"))
    nc.edit_config(target="running", config=task_xml("a2"))
    reply = nc.get_config(
        source="running",
        filter=("subtree", f'<tasks xmlns="{IRTF}"><task><task-id>a2</task-id><content/></task></tasks>'),
    )
    tasks = data_of(reply).findall(f"{{{IRTF}}}tasks/{{{IRTF}}}task")
    assert [t.findtext(f"{{{IRTF}}}task-id") for t in tasks] == ["a2"]
    assert tasks[0].find(f"{{{IRTF}}}content") is not None
    assert tasks[0].find(f"{{{IRTF}}}task-sendFrom") is None


def test_xpath_filter_with_prefixes(agent_server) -> None:  # type: ignore[no-untyped-def]
    raw = RawSession(agent_server.port)
    try:
        raw.rpc(f"<edit-config><target><running/></target>{task_xml('x9')}</edit-config>")
        reply = raw.rpc(
            f'<get><filter type="xpath" xmlns:a="{IRTF}" select="/a:tasks/a:task[a:task-id=\'x9\']/a:content"/></get>'
        )
        task = reply.find(f"nc:data/{{{IRTF}}}tasks/{{{IRTF}}}task", NS)
        assert task is not None, etree.tostring(reply)
        assert task.findtext(f"{{{IRTF}}}task-id") == "x9"  # the key comes along
        assert task.find(f"{{{IRTF}}}content") is not None
        assert task.find(f"{{{IRTF}}}task-sendFrom") is None
        bad = raw.rpc('<get><filter type="xpath" select="/a:agent"/></get>', message_id="2")
        assert error_fields(bad)["tag"] == "invalid-value"
    finally:
        raw.close()


def test_edit_config_operations(nc) -> None:  # type: ignore[no-untyped-def]
    nc_op = 'xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0"'

    def dp(op: str, ident: str, body: str = "") -> str:
        return f'<config {nc_op}><data-params xmlns="{IRTF}" nc:operation="{op}"><id>{ident}</id>{body}</data-params></config>'

    def ids() -> list[str]:
        data = data_of(nc.get_config(source="running"))
        return [e.findtext(f"{{{IRTF}}}id") or "" for e in data.findall(f"{{{IRTF}}}data-params")]

    assert nc.edit_config(target="running", config=dp("create", "d1", "<dataType>text</dataType><data>a</data>")).ok
    again = nc.edit_config(target="running", config=dp("create", "d1", "<dataType>text</dataType>"))
    assert not again.ok and again.error.tag == "data-exists"
    assert nc.edit_config(target="running", config=dp("merge", "d1", "<description>alarms</description>")).ok
    entry = data_of(nc.get_config(source="running")).find(f"{{{IRTF}}}data-params")
    assert entry.findtext(f"{{{IRTF}}}data") == "a" and entry.findtext(f"{{{IRTF}}}description") == "alarms"
    assert nc.edit_config(target="running", config=dp("replace", "d1", "<dataType>image</dataType>")).ok
    entry = data_of(nc.get_config(source="running")).find(f"{{{IRTF}}}data-params")
    assert entry.findtext(f"{{{IRTF}}}dataType") == "image" and entry.find(f"{{{IRTF}}}data") is None
    assert nc.edit_config(target="running", config=dp("delete", "d1")).ok
    assert ids() == []
    missing = nc.edit_config(target="running", config=dp("delete", "d1"))
    assert not missing.ok and missing.error.tag == "data-missing"
    assert nc.edit_config(target="running", config=dp("remove", "d1")).ok


def test_lock_blocks_other_sessions_and_is_released_on_close(agent_server, nc) -> None:  # type: ignore[no-untyped-def]
    assert nc.lock(target="running").ok
    other = RawSession(agent_server.port)
    try:
        denied = other.rpc("<lock><target><running/></target></lock>")
        fields = error_fields(denied)
        assert fields["tag"] == "lock-denied"
        edit = other.rpc(f"<edit-config><target><running/></target>{task_xml('locked')}</edit-config>", "2")
        assert error_fields(edit)["tag"] == "in-use"
        nc.close_session()
        ok = wait_for(lambda: other.rpc("<lock><target><running/></target></lock>", "3").find("nc:ok", NS) is not None)
        assert ok
        assert other.rpc("<unlock><target><running/></target></unlock>", "4").find("nc:ok", NS) is not None
    finally:
        other.close()


def test_kill_session_closes_the_other_session(agent_server) -> None:  # type: ignore[no-untyped-def]
    victim = RawSession(agent_server.port)
    killer = RawSession(agent_server.port)
    try:
        reply = killer.rpc(f"<kill-session><session-id>{victim.session_id}</session-id></kill-session>")
        assert reply.find("nc:ok", NS) is not None
        wait_for(lambda: not victim.is_open() or agent_server.session_count() == 1)
        own = killer.rpc(f"<kill-session><session-id>{killer.session_id}</session-id></kill-session>", "2")
        assert error_fields(own)["tag"] == "invalid-value"
    finally:
        victim.close()
        killer.close()


def test_get_schema_serves_every_module_listed_in_netconf_state(nc) -> None:  # type: ignore[no-untyped-def]
    data = data_of(nc.get(filter=("subtree", f'<netconf-state xmlns="{NCM}"><schemas/></netconf-state>')))
    schemas = data.findall(f"{{{NCM}}}netconf-state/{{{NCM}}}schemas/{{{NCM}}}schema")
    names = {s.findtext(f"{{{NCM}}}identifier"): s.findtext(f"{{{NCM}}}version") for s in schemas}
    assert "irtf-agent" in names and "agent-message" in names
    for name, version in names.items():
        text = nc.get_schema(name, version=version).data
        assert f"module {name}" in text
    missing = nc.get_schema("no-such-module")
    assert not missing.ok and missing.error.tag == "invalid-value"


def test_close_session_ends_the_session(agent_server) -> None:  # type: ignore[no-untyped-def]
    raw = RawSession(agent_server.port)
    reply = raw.rpc("<close-session/>")
    assert reply.find("nc:ok", NS) is not None
    wait_for(lambda: agent_server.session_count() == 0)
    raw.close()


def test_base_10_framing_session(agent_server) -> None:  # type: ignore[no-untyped-def]
    raw = RawSession(agent_server.port, base="1.0")
    try:
        reply = raw.rpc(f'<get><filter type="subtree"><agent xmlns="{IRTF}"><name/></agent></filter></get>')
        assert reply.findtext(f"nc:data/{{{IRTF}}}agent/{{{IRTF}}}name", namespaces=NS) == "IETF-TestLab-RAN-1.0"
    finally:
        raw.close()


def test_many_sessions_at_once(agent_server) -> None:  # type: ignore[no-untyped-def]
    sessions = [RawSession(agent_server.port) for _ in range(20)]
    try:
        assert len({s.session_id for s in sessions}) == 20
        for s in sessions:
            assert s.rpc("<get-config><source><running/></source></get-config>").find("nc:data", NS) is not None
        assert agent_server.session_count() == 20
    finally:
        for s in sessions:
            s.close()
    wait_for(lambda: agent_server.session_count() == 0)
    time.sleep(0)
