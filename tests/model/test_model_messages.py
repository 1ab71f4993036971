"""task-negotiate input/output, condition-notifications, anyxml data."""

from __future__ import annotations

import pytest
from lxml import etree

from an_agent.errors import RpcError
from an_agent.model import (
    IRTF_AGENT_NS,
    NETCONF_BASE_NS,
    NETCONF_NOTIFICATION_NS,
    AnyXml,
    CommuType,
    ConditionNotification,
    InputRequired,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    TaskStatus,
    build_prompt,
)


def test_negotiation_request_defaults_commu_type_and_round_trips() -> None:
    feasibility = NegotiationRequest("t-1", NegotiationType.FEASIBILITY, [build_prompt("gNB-1", "restart")], "a", "b")
    assert feasibility.commu_type is CommuType.FEASIBILITY_NEGOTIATE
    assert NegotiationRequest("t", NegotiationType.FULFILLMENT).commu_type is CommuType.FULFILLMENT_NEGOTIATE
    el = feasibility.to_xml()
    assert el.tag == f"{{{IRTF_AGENT_NS}}}task-negotiate"
    # RFC 7950 7.14.4: input parameters in the order of the input statement.
    assert [etree.QName(c).localname for c in el] == [
        "task-sendFrom", "task-sendTo", "commuType", "task-id", "content", "type",
    ]  # fmt: skip
    assert NegotiationRequest.from_xml(el) == feasibility
    rpc = etree.Element(f"{{{NETCONF_BASE_NS}}}rpc")
    rpc.append(el)
    assert NegotiationRequest.from_xml(rpc) == feasibility


def test_negotiation_request_needs_type() -> None:
    el = NegotiationRequest("t-1", NegotiationType.FEASIBILITY).to_xml()
    el.remove(el[-1])
    with pytest.raises(RpcError) as info:
        NegotiationRequest.from_xml(el)
    assert info.value.info["bad-element"] == "type"


def test_negotiation_result_round_trip_through_a_reply() -> None:
    payload = etree.fromstring('<proposal xmlns="urn:example:x"><site>7</site></proposal>')
    result = NegotiationResult(
        NegotiationType.FEASIBILITY,
        feasible=False,
        reason="site 7 is not in my domain",
        counter_proposal=build_prompt("gNB-1", "diagnose only"),
        data=AnyXml.from_elements(payload),
    )
    reply = etree.Element(f"{{{NETCONF_BASE_NS}}}rpc-reply")
    for child in result.to_xml():
        reply.append(child)
    wire = etree.fromstring(etree.tostring(reply))
    parsed = NegotiationResult.from_xml(wire)
    assert parsed == result
    assert parsed.data is not None
    [element] = parsed.data.elements()
    assert element.tag == "{urn:example:x}proposal"
    assert parsed.data.text == "7"


def test_negotiation_result_needs_type() -> None:
    with pytest.raises(RpcError, match="no <type>"):
        NegotiationResult.from_xml(etree.Element(f"{{{NETCONF_BASE_NS}}}rpc-reply"))


def test_anyxml_text_is_escaped_and_compares_by_content() -> None:
    value = AnyXml.from_text("a < b & c")
    assert value.text == "a < b & c"
    assert AnyXml.from_node(value.to_xml()) == value
    assert AnyXml.from_text("x") != AnyXml.from_text("y")
    mixed = AnyXml.from_elements(etree.fromstring("<k xmlns='urn:k'>v</k>"), text="lead ")
    assert mixed.text == "lead v"
    assert AnyXml.from_node(etree.fromstring(etree.tostring(mixed.to_xml()))) == mixed


def test_notification_round_trip_inner_and_enveloped() -> None:
    note = ConditionNotification(
        task_id="t-1",
        status=TaskStatus.INPUT_REQUIRED,
        previous_status=TaskStatus.PROCESSING,
        send_from="ran-fault",
        send_to="cross-domain",
        reason="need the transport topology",
        input_required=[InputRequired(build_prompt("links", "send the topology"), True, "suspended", 1_745_245_140.0)],
        data=AnyXml.from_text("{}"),
    )
    el = note.to_xml()
    assert el.tag == f"{{{IRTF_AGENT_NS}}}condition-notifications"
    assert ConditionNotification.from_xml(el) == note
    envelope = etree.Element(f"{{{NETCONF_NOTIFICATION_NS}}}notification")
    etree.SubElement(envelope, f"{{{NETCONF_NOTIFICATION_NS}}}eventTime").text = "2025-04-21T14:19:00.5Z"
    envelope.append(el)
    parsed = ConditionNotification.from_xml(etree.fromstring(etree.tostring(envelope)))
    assert parsed.event_time == 1_745_245_140.5
    parsed.event_time = None
    assert parsed == note


def test_notification_needs_status_and_body() -> None:
    el = ConditionNotification("t-1", TaskStatus.FINISHED).to_xml()
    status = el.find(f"{{{IRTF_AGENT_NS}}}task-status")
    assert status is not None
    el.remove(status)
    with pytest.raises(RpcError) as info:
        ConditionNotification.from_xml(el)
    assert info.value.info["bad-element"] == "task-status"
    with pytest.raises(RpcError, match="not a condition-notifications"):
        ConditionNotification.from_xml(etree.Element(f"{{{NETCONF_NOTIFICATION_NS}}}notification"))
