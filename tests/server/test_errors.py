"""Every kind of bad request gets a precise <rpc-error>; the session, the server and the stored data survive."""

from __future__ import annotations

import pytest
from lxml import etree

from an_agent.server import AgentServer, ServerConfig
from rawnc import NS, RawSession, error_fields
from support import IRTF, task_xml


@pytest.fixture(params=["1.0", "1.1"])
def raw(request, agent_server):  # type: ignore[no-untyped-def]
    session = RawSession(agent_server.port, base=request.param)
    session.rpc(f"<edit-config><target><running/></target>{task_xml('keep')}</edit-config>", "setup")
    yield session
    session.close()


def stored_config(raw: RawSession) -> str:
    reply = raw.rpc("<get-config><source><running/></source></get-config>", "check")
    data = reply.find("nc:data", NS)
    assert data is not None
    return etree.tostring(data, encoding="unicode")


def edit(raw: RawSession, body: str) -> dict[str, str | None]:
    before = stored_config(raw)
    reply = raw.rpc(f"<edit-config><target><running/></target><config>{body}</config></edit-config>", "e")
    fields = error_fields(reply)
    assert stored_config(raw) == before, "a refused edit changed the datastore"
    return fields


def test_malformed_xml_gets_malformed_message_and_the_session_survives(raw: RawSession) -> None:
    raw.send_raw(b'<rpc xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" message-id="9"><get></rpc>')
    fields = error_fields(raw.receive())
    assert fields["tag"] == "malformed-message" and fields["type"] == "rpc"
    assert "well-formed" in (fields["message"] or "")
    assert "keep" in stored_config(raw)


def test_missing_message_id(raw: RawSession) -> None:
    raw.send_raw(b'<rpc xmlns="urn:ietf:params:xml:ns:netconf:base:1.0"><get/></rpc>')
    fields = error_fields(raw.receive())
    assert fields["tag"] == "missing-attribute" and fields["type"] == "rpc"


def test_unknown_rpc(raw: RawSession) -> None:
    fields = error_fields(raw.rpc('<reboot-everything xmlns="urn:example:nope"/>'))
    assert fields["tag"] == "unknown-namespace"
    fields = error_fields(raw.rpc("<delete-config><target><startup/></target></delete-config>"))
    assert fields["tag"] == "operation-not-supported"
    fields = error_fields(raw.rpc("<copy-config><target><startup/></target><source><running/></source></copy-config>"))
    assert fields["tag"] == "invalid-value" and "no :startup" in (fields["message"] or "")


def test_unknown_element_has_error_path(raw: RawSession) -> None:
    fields = edit(raw, f'<tasks xmlns="{IRTF}"><task><task-id>keep</task-id><colour>red</colour></task></tasks>')
    assert fields["tag"] == "unknown-element" and fields["type"] == "application"
    assert fields["bad-element"] == "colour"
    assert fields["path"] == "/irtf-agent:tasks/task[task-id='keep']"


def test_wrong_type_points_at_the_leaf(raw: RawSession) -> None:
    fields = edit(
        raw, f'<tasks xmlns="{IRTF}"><task><task-id>keep</task-id><task-async>maybe</task-async></task></tasks>'
    )
    assert fields["tag"] == "invalid-value" and fields["type"] == "application"
    assert fields["path"] == "/irtf-agent:tasks/task[task-id='keep']/task-async"
    assert "maybe" in (fields["message"] or "")


def test_bad_enumeration(raw: RawSession) -> None:
    fields = edit(
        raw, f'<tasks xmlns="{IRTF}"><task><task-id>keep</task-id><commuType>shout</commuType></task></tasks>'
    )
    assert fields["tag"] == "invalid-value"
    assert fields["path"] == "/irtf-agent:tasks/task[task-id='keep']/commuType"


def test_missing_mandatory_node(raw: RawSession) -> None:
    # A new task without its mandatory content.
    fields = edit(raw, f'<tasks xmlns="{IRTF}"><task><task-id>t-empty</task-id></task></tasks>')
    assert fields["tag"] in ("missing-element", "data-missing")
    assert fields["path"] is not None and "t-empty" in fields["path"]


def test_prompt_without_task_description_is_refused(raw: RawSession) -> None:
    fields = edit(
        raw, f'<tasks xmlns="{IRTF}"><task><task-id>t-np</task-id><content>just do it</content></task></tasks>'
    )
    assert fields["tag"] == "invalid-value"
    assert fields["path"] == "/irtf-agent:tasks/task[task-id='t-np']/content"


def test_dangling_reference_to_data_params(raw: RawSession) -> None:
    fields = edit(raw, f'<tasks xmlns="{IRTF}"><task><task-id>keep</task-id><msg-data>nope</msg-data></task></tasks>')
    assert fields["tag"] in ("data-missing", "invalid-value")
    assert fields["path"] is not None and "msg-data" in fields["path"]


def test_list_entry_without_key(raw: RawSession) -> None:
    fields = edit(raw, f'<tasks xmlns="{IRTF}"><task><content>x</content></task></tasks>')
    assert fields["tag"] == "missing-element" and fields["bad-element"] == "task-id"


def test_state_node_cannot_be_edited(raw: RawSession) -> None:
    fields = edit(
        raw, f'<tasks xmlns="{IRTF}"><task><task-id>keep</task-id><task-status>finished</task-status></task></tasks>'
    )
    assert fields["tag"] == "invalid-value"
    assert fields["path"] == "/irtf-agent:tasks/task[task-id='keep']/task-status"
    fields = edit(raw, f'<agent xmlns="{IRTF}"><name>hijack</name></agent>')
    assert fields["tag"] == "invalid-value"


def test_unknown_namespace_in_config(raw: RawSession) -> None:
    fields = edit(raw, '<interfaces xmlns="urn:example:interfaces"/>')
    assert fields["tag"] == "unknown-namespace"


def test_bad_filter_and_datastore(raw: RawSession) -> None:
    fields = error_fields(raw.rpc('<get><filter type="regex"/></get>'))
    assert fields["tag"] == "bad-attribute"
    fields = error_fields(raw.rpc("<get-config><source><startup/></source></get-config>"))
    assert fields["tag"] == "invalid-value"
    fields = error_fields(raw.rpc("<get-config/>"))
    assert fields["tag"] == "missing-element" and fields["bad-element"] == "source"


def test_oversized_message_is_refused_and_the_session_goes_on(tmp_path, profile) -> None:  # type: ignore[no-untyped-def]
    config = ServerConfig(state_dir=tmp_path / "s", port=0, profile=profile, max_message_bytes=64 * 1024)
    with AgentServer(config) as server:
        for base in ("1.0", "1.1"):
            raw = RawSession(server.port, base=base)
            try:
                huge = "x" * (200 * 1024)
                raw.send_raw(
                    f'<rpc xmlns="urn:ietf:params:xml:ns:netconf:base:1.0" message-id="big"><get><filter>{huge}</filter></get></rpc>'.encode()
                )
                fields = error_fields(raw.receive())
                assert fields["tag"] == "too-big"
                reply = raw.rpc("<get-config><source><running/></source></get-config>", "after")
                assert reply.find("nc:data", NS) is not None
            finally:
                raw.close()


def test_server_survives_a_client_that_vanishes_mid_message(agent_server) -> None:  # type: ignore[no-untyped-def]
    raw = RawSession(agent_server.port)
    raw.channel.sendall(b"\n#1000\n<rpc xmlns=")
    raw.close()
    other = RawSession(agent_server.port)
    try:
        assert other.rpc("<get-config><source><running/></source></get-config>").find("nc:data", NS) is not None
    finally:
        other.close()


def test_an_edit_of_several_entries_is_all_or_nothing(raw: RawSession) -> None:
    nc_op = 'xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0"'
    good = "<task><task-id>fine</task-id><content>## task description\nok</content></task>"
    bad = "<task><task-id>broken</task-id><content>no sections</content></task>"
    fields = edit(raw, f'<tasks xmlns="{IRTF}">{good}{bad}</tasks>')
    assert fields["tag"] == "invalid-value"
    assert "fine" not in stored_config(raw)
    # Deleting an existing task and adding a bad one: the deletion is undone too.
    fields = edit(
        raw, f'<tasks xmlns="{IRTF}" {nc_op}><task nc:operation="delete"><task-id>keep</task-id></task>{bad}</tasks>'
    )
    assert fields["tag"] == "invalid-value"
    # A data-param that a task refers to cannot be deleted from under it.
    raw.rpc(
        f'<edit-config><target><running/></target><config><data-params xmlns="{IRTF}"><id>d1</id><dataType>text</dataType>'
        f'</data-params><tasks xmlns="{IRTF}"><task><task-id>keep</task-id><msg-data>d1</msg-data></task></tasks>'
        "</config></edit-config>",
        "refs",
    )
    fields = edit(raw, f'<data-params xmlns="{IRTF}" {nc_op} nc:operation="delete"><id>d1</id></data-params>')
    assert fields["tag"] == "data-missing" and "msg-data" in (fields["path"] or "")


def test_default_operation_none_does_not_create(raw: RawSession) -> None:
    nc_op = 'xmlns:nc="urn:ietf:params:xml:ns:netconf:base:1.0"'
    before = stored_config(raw)
    reply = raw.rpc(
        "<edit-config><target><running/></target><default-operation>none</default-operation>"
        f'<config><tasks xmlns="{IRTF}" {nc_op}><task><task-id>ghost</task-id>'
        '<commuType nc:operation="merge">taskCancel</commuType></task></tasks></config></edit-config>',
        "none",
    )
    fields = error_fields(reply)
    assert fields["tag"] == "data-missing" and "ghost" in (fields["path"] or "")
    assert stored_config(raw) == before
