"""The agent card from the profile and templates: a valid A2A v1 AgentCard plus the extension's schemas."""

from __future__ import annotations

import json
from typing import Any

import pytest
from a2a.types import AgentCard
from google.protobuf.json_format import MessageToDict, ParseDict
from jsonschema import Draft202012Validator

from an_agent.a2a.card import NETCONF_BINDING, SCHEMAS_EXTENSION, CardOptions, build_card
from an_agent.model import AgentProfile, Skill
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.validate import validate_payload

TEMPLATES = TemplateRegistry.default().templates()
OPTIONS = CardOptions(jsonrpc_url="http://127.0.0.1:9000/", netconf_url="ssh://127.0.0.1:8830")


def _profile() -> AgentProfile:
    profile = AgentProfile(
        name="IRTF-AnLab-Wireless-1.0.0",
        description="RAN fault agent",
        version="1.0.0",
        provider="an-agent lab",
        domain="Wireless",
        type="fault",
    )
    profile.skills = [
        Skill(
            name="batch-outage-diagnosis",
            description="find the common root cause",
            tags=["fault"],
            input_modes=[
                "text",
                "application/json;schema=fault_diagnosis",
                "application/json;schema=ran-outage-report",
            ],
            output_modes=["text", "application/json", "application/json;schema=ran-fault-diagnosis"],
            examples=["Why did the cells of site HZ-0815 drop?"],
        ),
        Skill(name="alarm-query", input_modes=["text", "image/png"], output_modes=["application/json"]),
    ]
    return profile


def _card(**options: Any) -> dict[str, Any]:
    base = OPTIONS if not options else CardOptions(**{**OPTIONS.__dict__, **options})
    return build_card(_profile(), TEMPLATES, base)


def test_the_card_is_an_a2a_v1_agent_card() -> None:
    card = _card()
    proto = ParseDict({k: v for k, v in card.items() if k != "schemas"}, AgentCard())
    assert proto.name == "IRTF-AnLab-Wireless-1.0.0"
    # Round trip: nothing of ours is lost or renamed by the protobuf form, except the root schemas (and
    # the extension's params, a Struct, come back with every number as a double).
    back = MessageToDict(proto)
    for name in ("capabilities", "schemas"):
        back.pop(name, None)
    assert back == {k: v for k, v in card.items() if k not in ("capabilities", "schemas")}
    assert proto.capabilities.streaming and proto.capabilities.extensions[0].uri == SCHEMAS_EXTENSION
    json.dumps(card)  # plain JSON


def test_extension_and_root_schemas_are_2020_12_with_valid_examples() -> None:
    card = _card()
    (extension,) = card["capabilities"]["extensions"]
    assert extension["uri"] == SCHEMAS_EXTENSION
    assert extension["params"]["schemas"] == card["schemas"]
    assert sorted(card["schemas"]) == [t.schema_id for t in TEMPLATES]
    for template in TEMPLATES:
        schema = card["schemas"][template.schema_id]
        Draft202012Validator.check_schema(schema)
        for example in schema["examples"]:
            Draft202012Validator(schema).validate(example)
            validate_payload(template, {"schema_id": template.schema_id, "payload": example})


def test_skills_claim_only_served_schemas() -> None:
    skill, alarms = _card()["skills"]
    assert skill["id"] == skill["name"] == "batch-outage-diagnosis"
    # text first; the scenario name resolves to its schema_id; the unserved schema is dropped.
    assert skill["inputModes"] == ["text/plain", "application/json;schema=fault_diagnosis_v1"]
    assert skill["outputModes"] == ["text/plain", "application/json"]
    assert skill["examples"][0] == "Why did the cells of site HZ-0815 drop?"
    assert json.loads(skill["examples"][1])["fault_type"]
    assert alarms["inputModes"] == ["text/plain"]  # image/png dropped: the face refuses file parts
    assert alarms["tags"] == ["Wireless", "fault"]
    assert alarms["description"] == "RAN fault agent"


def test_interfaces_jsonrpc_first_and_netconf_as_custom_binding() -> None:
    interfaces = _card(http_json_url="http://127.0.0.1:9000/rest")["supportedInterfaces"]
    assert [i["protocolBinding"] for i in interfaces] == ["JSONRPC", "HTTP+JSON", NETCONF_BINDING]
    assert interfaces[2]["url"] == "ssh://127.0.0.1:8830"


@pytest.mark.parametrize("basic", [False, True])
def test_security_is_what_the_face_implements(basic: bool) -> None:
    card = _card(basic_auth=basic)
    assert ("securitySchemes" in card) is basic
    assert "JWT" not in json.dumps(card.get("securitySchemes", {}))
    if basic:
        assert card["securitySchemes"]["basic"]["httpAuthSecurityScheme"]["scheme"] == "Basic"
        ParseDict({k: v for k, v in card.items() if k != "schemas"}, AgentCard())


def test_provider_only_with_a_url() -> None:
    assert "provider" not in _card()
    assert _card(provider_url="https://lab.example")["provider"] == {
        "organization": "an-agent lab",
        "url": "https://lab.example",
    }
