"""Everything the model serialises is valid against the shipped YANG (real libyang)."""

from __future__ import annotations

import pytest
from lxml import etree

from an_agent.errors import RpcError
from an_agent.model import (
    AgentProfile,
    AnyXml,
    AuthMethod,
    Capability,
    CommuType,
    ConditionNotification,
    ContextEntry,
    DataParam,
    DataType,
    InputRequired,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Skill,
    Task,
    TaskResult,
    TaskStatus,
    TaskSubscription,
    build_prompt,
    tasks_element,
)
from an_agent.yang.context import YangContext

WHEN = 1_745_245_140.5


@pytest.fixture(scope="module")
def yang() -> YangContext:
    return YangContext.default()


def text(*elements: etree._Element) -> str:
    return "".join(etree.tostring(el, encoding="unicode") for el in elements)


def profile() -> AgentProfile:
    return AgentProfile(
        name="IRTF-acme-wireless-1.0",
        description="Diagnoses RAN faults",
        version="1.0.0",
        provider="acme",
        alias="ran",
        type="fault",
        skills=[Skill("diagnosis", "finds causes", ["ran"], ["text"], ["application/json;schema=x"], ["why?"])],
        domain="Wireless",
        capability=Capability(True, True, ["acp-task-feasibility-negotiation-v1.0"]),
        management_object="subnet-7",
        auth_methods=[AuthMethod("k1", "JWT", "iss=x", None)],
    )


def task(state: bool) -> Task:
    return Task(
        task_id="t-1",
        send_from="cross-domain",
        send_to="ran-fault",
        commu_type=CommuType.TASK_ASSIGN,
        content=build_prompt("gNB-1001", "Diagnose the outage", "link alarms"),
        subscription=TaskSubscription("NETCONF", "create-subscription", None),
        task_async=True,
        status=TaskStatus.FINISHED if state else None,
        expected_response="root cause",
        term_explains={"BBU": "baseband unit", "RRU": ""},
        msg_data=["d-1"],
        context=["c-1"],
        result=TaskResult("fibre cut", None, "text/plain", "site 7", WHEN) if state else None,
    )


def config_nodes() -> list[etree._Element]:
    param = DataParam("d-1", DataType.TEXT, "alarms", "12", "application/json", None, '{"a": 1}', False, True)
    context = ContextEntry("c-1", "cross-domain", "ran-fault", "diagnose", WHEN, "d-1", "d-1", WHEN + 1)
    return [param.to_xml(), context.to_xml(), tasks_element([task(state=False)])]


def test_config_is_valid(yang: YangContext) -> None:
    yang.validate_config(text(*config_nodes()))


def test_get_reply_with_state_is_valid(yang: YangContext) -> None:
    nodes = config_nodes()
    nodes[-1] = tasks_element([task(state=True)], include_state=True)
    yang.validate_data(text(profile().to_xml(), *nodes))


def test_state_is_refused_in_config(yang: YangContext) -> None:
    # Proves the check above can fail: include_state=True is only for replies.
    nodes = config_nodes()
    nodes[-1] = tasks_element([task(state=True)], include_state=True)
    with pytest.raises(RpcError):
        yang.validate_config(text(*nodes))


def test_profile_json_is_rfc7951(yang: YangContext) -> None:
    assert yang.xml_to_json(text(profile().to_xml())) == profile().to_dict()


def test_negotiation_input_and_output_are_valid(yang: YangContext) -> None:
    request = NegotiationRequest("t-1", NegotiationType.FEASIBILITY, [build_prompt("gNB-1", "restart it")], "a", "b")
    yang.validate_rpc(text(request.to_xml()))
    result = NegotiationResult(
        NegotiationType.FEASIBILITY,
        feasible=False,
        reason="not my domain",
        counter_proposal=build_prompt("gNB-1", "diagnose only"),
        data=AnyXml.from_elements(etree.fromstring("<x xmlns='urn:example'>1</x>")),
    )
    yang.validate_rpc_output(text(*result.to_xml()), "irtf-agent:task-negotiate")


def test_notification_is_valid(yang: YangContext) -> None:
    note = ConditionNotification(
        task_id="t-1",
        status=TaskStatus.INPUT_REQUIRED,
        previous_status=TaskStatus.PROCESSING,
        send_from="ran-fault",
        send_to="cross-domain",
        reason="need topology",
        input_required=[InputRequired(build_prompt("links", "send the topology"), True, "suspended", WHEN)],
        data=AnyXml.from_text("{}"),
    )
    yang.validate_notification(text(note.to_xml()))


def test_cancel_merge_is_a_valid_edit_fragment(yang: YangContext) -> None:
    # A partial config (key + commuType only) is what cancel sends; with partial validation it passes.
    yang.validate_data(text(tasks_element([Task("t-1", commu_type=CommuType.TASK_CANCEL)])), partial=True)
