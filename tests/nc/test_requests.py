"""The requests NetconfClient builds itself, in the form yuma123 netconfd (and RFC 5277/7950) want."""

from __future__ import annotations

from lxml import etree

from an_agent.nc.requests import get_schema_request, subscription_request

MON = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
NOTIF = "urn:ietf:params:xml:ns:netconf:notification:1.0"
IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"


def test_get_schema_names_the_format_identity_in_the_default_namespace() -> None:
    request = get_schema_request("irtf-agent", "2025-06-01")
    fmt = request.find(f"{{{MON}}}format")
    assert fmt is not None and fmt.text == "yang"
    assert fmt.nsmap.get(None) == MON  # an unprefixed identityref resolves in the default namespace
    assert request.findtext(f"{{{MON}}}version") == "2025-06-01"


def test_create_subscription_filter_is_in_the_notification_namespace() -> None:
    subtree = etree.Element(f"{{{IRTF}}}condition-notifications")
    request = subscription_request(None, subtree, "subtree", None, 0.0, None)
    flt = request.find(f"{{{NOTIF}}}filter")
    assert flt is not None and flt.get("type") == "subtree"
    assert flt[0].tag == subtree.tag and flt[0] is not subtree  # a copy: the caller's element stays put
    assert request.findtext(f"{{{NOTIF}}}startTime") == "1970-01-01T00:00:00.000000Z"
    xpath = subscription_request("NETCONF", "/irtf-agent:condition-notifications", "xpath", None, None, None)
    selected = xpath.find(f"{{{NOTIF}}}filter")
    assert selected is not None and selected.get("select") == "/irtf-agent:condition-notifications"
    assert selected.nsmap["irtf-agent"] == IRTF
    assert xpath.findtext(f"{{{NOTIF}}}stream") == "NETCONF"
