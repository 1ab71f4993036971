"""Task, DataParam, ContextEntry: XML round trips, state handling, parse errors."""

from __future__ import annotations

import pytest
from lxml import etree

from an_agent.errors import RpcError
from an_agent.model import (
    IRTF_AGENT_NS,
    NETCONF_BASE_NS,
    CommuType,
    ContextEntry,
    DataParam,
    DataType,
    Task,
    TaskResult,
    TaskStatus,
    TaskSubscription,
    build_prompt,
    tasks_element,
)


def full_task() -> Task:
    return Task(
        task_id="t-1",
        send_from="cross-domain",
        send_to="ran-fault",
        commu_type=CommuType.TASK_ASSIGN,
        content=build_prompt("gNB-1001", "Diagnose the outage", "link alarms"),
        subscription=TaskSubscription("NETCONF", "create-subscription", "ssh://127.0.0.1:8830"),
        task_async=True,
        status=TaskStatus.PROCESSING,
        expected_response="root cause and repair advice",
        term_explains={"BBU": "baseband unit", "RRU": ""},
        msg_data=["d-1", "d-2"],
        context=["c-1"],
        result=TaskResult("fibre cut", None, "text/plain", "site 7", 1_745_245_140.5),
    )


def names(el: etree._Element) -> list[str]:
    return [etree.QName(c).localname for c in el]


def test_task_round_trip_with_state() -> None:
    task = full_task()
    el = task.to_xml(include_state=True)
    assert el.tag == f"{{{IRTF_AGENT_NS}}}task"
    assert names(el)[0] == "task-id"  # RFC 7950: list keys first
    assert Task.from_xml(el) == task


def test_task_without_state_drops_status_and_result() -> None:
    el = full_task().to_xml()
    assert "task-status" not in names(el)
    assert "result" not in names(el)
    parsed = Task.from_xml(el)
    assert parsed.status is None and parsed.result is None


def test_term_without_explanation_round_trips() -> None:
    el = full_task().to_xml()
    terms = el.findall(f"{{{IRTF_AGENT_NS}}}term-explains")
    assert [names(t) for t in terms] == [["term", "explaination"], ["term"]]


def test_cancel_merge_is_key_plus_commutype() -> None:
    el = Task("t-1", commu_type=CommuType.TASK_CANCEL).to_xml(operation="merge")
    assert names(el) == ["task-id", "commuType"]
    assert el.get(f"{{{NETCONF_BASE_NS}}}operation") == "merge"


def test_tasks_element_and_all_from_xml() -> None:
    tasks = [full_task(), Task("t-2", content=build_prompt("x", "y"))]
    container = tasks_element(tasks, include_state=True, operation="create")
    assert all(t.get(f"{{{NETCONF_BASE_NS}}}operation") == "create" for t in container)
    data = etree.Element(f"{{{NETCONF_BASE_NS}}}data")
    data.append(container)
    assert Task.all_from_xml(data) == tasks
    assert Task.all_from_xml(container) == tasks
    assert Task.all_from_xml(etree.Element(f"{{{NETCONF_BASE_NS}}}data")) == []


def test_unknown_enum_value_is_invalid_value_with_path() -> None:
    el = Task("t-1", commu_type=CommuType.TASK_ASSIGN).to_xml()
    commu = el.find(f"{{{IRTF_AGENT_NS}}}commuType")
    assert commu is not None
    commu.text = "taskExplode"
    with pytest.raises(RpcError) as info:
        Task.from_xml(el)
    assert info.value.error_tag == "invalid-value"
    assert info.value.path == "/irtf-agent:task/commuType"


def test_bad_boolean_and_time() -> None:
    el = full_task().to_xml(include_state=True)
    async_el = el.find(f"{{{IRTF_AGENT_NS}}}task-async")
    assert async_el is not None
    async_el.text = "maybe"
    with pytest.raises(RpcError, match="true or false"):
        Task.from_xml(el)
    el = full_task().to_xml(include_state=True)
    when = el.find(f"{{{IRTF_AGENT_NS}}}result/{{{IRTF_AGENT_NS}}}updated-time")
    assert when is not None
    when.text = "yesterday"
    with pytest.raises(RpcError, match="RFC 3339"):
        Task.from_xml(el)


def test_missing_key_and_wrong_element() -> None:
    with pytest.raises(RpcError) as info:
        Task.from_xml(etree.Element(f"{{{IRTF_AGENT_NS}}}task"))
    assert info.value.error_tag == "missing-element"
    assert info.value.info["bad-element"] == "task-id"
    with pytest.raises(RpcError, match="expected <task>"):
        Task.from_xml(etree.Element(f"{{{IRTF_AGENT_NS}}}tasks"))


def test_status_terminal() -> None:
    assert {s for s in TaskStatus if s.terminal} == {TaskStatus.FINISHED, TaskStatus.FAILED, TaskStatus.CANCELED}
    assert TaskStatus("input-required") is TaskStatus.INPUT_REQUIRED


def test_data_param_round_trip() -> None:
    param = DataParam(
        id="d-1",
        data_type=DataType.TEXT,
        description="alarm list",
        data_size="42",
        format="application/json;schema=ran-fault-v1",
        data='{"schema_id": "ran-fault-v1", "payload": {"site": "7 & <8>"}}',
        chunked=False,
        finished=True,
    )
    el = param.to_xml(operation="create")
    assert el.tag == f"{{{IRTF_AGENT_NS}}}data-params"
    assert names(el)[0] == "id"
    assert DataParam.from_xml(el) == param
    # Serialised and parsed back, as it travels.
    assert DataParam.from_xml(etree.fromstring(etree.tostring(el))) == param
    data = etree.Element(f"{{{NETCONF_BASE_NS}}}data")
    data.append(el)
    assert DataParam.all_from_xml(data) == [param]


def test_context_round_trip_with_and_without_response() -> None:
    pending = ContextEntry("c-1", "a", "b", "diagnose", 1_745_245_140.0, request_data_param="d-1")
    el = pending.to_xml()
    assert names(el) == ["id", "sendFrom", "sendTo", "request-info"]
    assert ContextEntry.from_xml(el) == pending
    answered = ContextEntry("c-2", "a", "b", "diagnose", 1_745_245_140.0, None, "d-2", 1_745_245_141.25)
    assert ContextEntry.from_xml(answered.to_xml()) == answered


def test_context_needs_request_time() -> None:
    el = ContextEntry("c-1", "a", "b", "x", 0.0).to_xml()
    req = el.find(f"{{{IRTF_AGENT_NS}}}request-info")
    assert req is not None
    req.remove(req[-1])
    with pytest.raises(RpcError) as info:
        ContextEntry.from_xml(el)
    assert info.value.info["bad-element"] == "time"
    assert info.value.path == "/irtf-agent:context/request-info"
