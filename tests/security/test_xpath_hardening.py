"""Hostile XPath filters (issue 10): no EXSLT extensions, a node and time budget, a clean rpc-error."""

from __future__ import annotations

import pytest
from lxml import etree

from an_agent.errors import RpcError
from an_agent.nc.state import event_filter
from an_agent.runtime.filters import xpath_filter
from an_agent.server import AgentServer
from rawnc import NC_NS, RawSession, error_fields

EXSLT = {
    "re": "http://exslt.org/regular-expressions",
    "math": "http://exslt.org/math",
    "date": "http://exslt.org/dates-and-times",
    "set": "http://exslt.org/sets",
}


def _no_keys(_: etree._Element) -> tuple[str, ...]:
    return ()


def _data(entries: int) -> list[etree._Element]:
    root = etree.Element("{urn:x}tasks")
    for i in range(entries):
        task = etree.SubElement(root, "{urn:x}task")
        etree.SubElement(task, "{urn:x}task-id").text = f"t{i}"
        etree.SubElement(task, "{urn:x}status").text = "working"
    return [root]


@pytest.mark.parametrize(
    "select",
    [
        "//x:task[re:test(x:task-id, '^(a+)+$')]",
        "//x:task[math:max(//x:task-id) > 1]",
        "//x:task[date:date-time() != '']",
        "set:distinct(//x:task)",
    ],
)
def test_exslt_functions_are_refused(select: str) -> None:
    with pytest.raises(RpcError) as info:
        xpath_filter(_data(3), select, {"x": "urn:x", **EXSLT}, _no_keys)
    assert info.value.error_tag == "invalid-value"
    assert "extension function" in info.value.message


def test_a_prefix_in_a_string_literal_is_not_a_function_call() -> None:
    found = xpath_filter(_data(3), "//x:task[x:task-id != 're:test(']", {"x": "urn:x"}, _no_keys)
    assert len(found) == 1


@pytest.mark.parametrize(
    "select",
    [
        "//x:task[count(//x:task[count(//x:task-id) > 0]) > 0]",
        "//*[count(//*[count(//*[. = ../*]) > 0]) > 0]",
        "//x:task[count(descendant::*/ancestor::*/descendant::*[count(/x:tasks//*) > 1]) > 0]",
    ],
)
def test_an_expression_over_the_node_budget_is_refused_before_it_runs(select: str) -> None:
    with pytest.raises(RpcError) as info:
        xpath_filter(_data(2000), select, {"x": "urn:x"}, _no_keys)
    assert info.value.error_tag == "resource-denied"
    assert "budget" in info.value.message


def test_ordinary_filters_stay_within_the_budget() -> None:
    data = _data(2000)
    assert xpath_filter(data, "//x:task[x:task-id = 't7']/x:status", {"x": "urn:x"}, _no_keys)
    assert xpath_filter(data, "/x:tasks/x:task[x:status = 'working'][1]", {"x": "urn:x"}, _no_keys)


def test_subscription_filters_refuse_exslt_at_subscription_time() -> None:
    flt = etree.fromstring(
        f'<filter xmlns="{NC_NS}" xmlns:re="{EXSLT["re"]}" type="xpath" select="//*[re:test(., \'a\')]"/>'
    )
    with pytest.raises(RpcError):
        event_filter(flt, _no_keys)


def test_get_with_regexp_filter_is_a_clean_rpc_error(agent_server: AgentServer) -> None:
    raw = RawSession(agent_server.port)
    try:
        reply = raw.rpc(
            f'<get><filter type="xpath" xmlns:re="{EXSLT["re"]}" select="//*[re:test(., \'^(a|a)*$\')]"/></get>'
        )
        fields = error_fields(reply)
        assert fields["tag"] == "invalid-value" and "extension function" in (fields["message"] or "")
    finally:
        raw.close()


def test_get_with_cubic_filter_is_refused_not_run(agent_server: AgentServer) -> None:
    raw = RawSession(agent_server.port)
    try:
        raw.channel.settimeout(20)
        reply = raw.rpc(
            '<get><filter type="xpath" select="//*[count(//*[count(//*[count(//*) > 0]) > 0]) > 0]"/></get>'
        )
        assert error_fields(reply)["tag"] == "resource-denied"
    finally:
        raw.close()


@pytest.mark.parametrize(
    "select", ["//x:task[ count( /x:tasks/x:task[ /x:tasks ] ) ]", "//x:task[1 and /x:tasks[//x:task]]"]
)
def test_spacing_and_operators_do_not_hide_absolute_paths(select: str) -> None:
    with pytest.raises(RpcError, match="budget"):
        xpath_filter(_data(2000), select, {"x": "urn:x"}, _no_keys)
