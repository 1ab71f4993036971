"""AgentProfile: RFC 7951 JSON / YAML profile files and the <agent> XML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lxml import etree

from an_agent.errors import ConfigError, RpcError
from an_agent.model import IRTF_AGENT_NS, AgentProfile, AuthMethod, Capability, Skill

FULL = {
    "irtf-agent:agent": {
        "name": "IRTF-acme-wireless-1.0",
        "alias": "ran-fault",
        "description": "Diagnoses RAN faults",
        "type": "fault",
        "skills": {
            "skill": [
                {
                    "skill-name": "outage-diagnosis",
                    "skill-description": "Finds why base stations are out of service",
                    "skill-tags": ["fault", "ran"],
                    "input-modes": ["text", "application/json;schema=ran-fault-v1"],
                    "output-modes": ["text"],
                    "examples": ["Why are gNB-1..gNB-40 down?"],
                },
                {"skill-name": "restart"},
            ]
        },
        "version": "1.0.0",
        "provider": "acme",
        "domain": "Wireless",
        "capability": {"streaming": False, "push-notifications": True, "negotiate": ["a-v1", "b-v1"]},
        "management-object": "subnet-7",
        "authentication": {"authentication-methods": [{"accessinfo-id": "k1", "scheme": "JWT", "jwtinfo": "iss=x"}]},
    }
}


def test_from_json_reads_every_member() -> None:
    profile = AgentProfile.from_json(json.dumps(FULL))
    assert profile.name == "IRTF-acme-wireless-1.0"
    assert profile.alias == "ran-fault"
    assert [s.name for s in profile.skills] == ["outage-diagnosis", "restart"]
    assert profile.skills[0].input_modes == ["text", "application/json;schema=ran-fault-v1"]
    assert profile.skills[0].examples == ["Why are gNB-1..gNB-40 down?"]
    assert profile.capability == Capability(streaming=False, push_notifications=True, negotiate=["a-v1", "b-v1"])
    assert profile.auth_methods == [AuthMethod("k1", scheme="JWT", jwtinfo="iss=x")]
    assert profile.management_object == "subnet-7"


def test_json_round_trip_is_identity_on_the_document() -> None:
    assert AgentProfile.from_dict(FULL).to_dict() == FULL


def test_xml_round_trip_and_yang_order() -> None:
    profile = AgentProfile.from_dict(FULL)
    el = profile.to_xml()
    assert el.tag == f"{{{IRTF_AGENT_NS}}}agent"
    order = [etree.QName(c).localname for c in el]
    assert order == [
        "name", "alias", "description", "type", "skills", "version", "provider",
        "domain", "capability", "management-object", "authentication",
    ]  # fmt: skip
    assert AgentProfile.from_xml(el) == profile
    # A <data> reply holding the agent parses too.
    data = etree.Element("{urn:ietf:params:xml:ns:netconf:base:1.0}data")
    data.append(el)
    assert AgentProfile.from_xml(data) == profile


def test_minimal_profile_leaves_out_empty_containers() -> None:
    profile = AgentProfile("a", "d", "1.0.0", "p")
    el = profile.to_xml()
    assert [etree.QName(c).localname for c in el] == ["name", "description", "version", "provider"]
    assert AgentProfile.from_xml(el) == profile
    assert AgentProfile.from_dict(profile.to_dict()) == profile


def test_unprefixed_top_level_accepted() -> None:
    assert AgentProfile.from_dict({"agent": FULL["irtf-agent:agent"]}) == AgentProfile.from_dict(FULL)


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            {"irtf-agent:agent": {"description": "d", "version": "1", "provider": "p"}},
            "missing mandatory member 'name'",
        ),
        ({"irtf-agent:agent": {**FULL["irtf-agent:agent"], "colour": "red"}}, "unknown member 'colour'"),
        ({"irtf-agent:agent": {**FULL["irtf-agent:agent"], "name": ["x"]}}, "profile/agent/name: expected a string"),
        (
            {"irtf-agent:agent": {**FULL["irtf-agent:agent"], "capability": {"streaming": "yes"}}},
            "capability/streaming: expected true or false",
        ),
        (
            {"irtf-agent:agent": {**FULL["irtf-agent:agent"], "skills": {"skill": [{"skill-name": "a"}] * 2}}},
            "duplicate skill-name 'a'",
        ),
        ({"irtf-agent:agent": {**FULL["irtf-agent:agent"], "skills": {"skill": [{}]}}}, "skill[0]: missing mandatory"),
        ({"something": {}}, "unknown member 'something'"),
        ([], "expected an object"),
    ],
)
def test_bad_profiles_name_the_problem(document: object, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        AgentProfile.from_dict(document)


def test_bad_json_is_config_error() -> None:
    with pytest.raises(ConfigError, match="not valid JSON"):
        AgentProfile.from_json("{")


def test_load_json_and_yaml_files(tmp_path: Path) -> None:
    json_file = tmp_path / "agent.json"
    json_file.write_text(json.dumps(FULL))
    yaml_file = tmp_path / "agent.yaml"
    yaml_file.write_text(
        "irtf-agent:agent:\n"
        "  name: IRTF-acme-wireless-1.0\n"
        "  description: Diagnoses RAN faults\n"
        "  version: 1.0\n"  # YAML reads this as a float; it is still the string '1.0'
        "  provider: acme\n"
        "  skills:\n"
        "    skill:\n"
        "      - skill-name: restart\n"
        "        skill-tags: [ran]\n"
    )
    assert AgentProfile.load(json_file) == AgentProfile.from_dict(FULL)
    loaded = AgentProfile.load(yaml_file)
    assert loaded.version == "1.0"
    assert loaded.skills == [Skill("restart", tags=["ran"])]
    with pytest.raises(ConfigError, match="cannot read profile"):
        AgentProfile.load(tmp_path / "missing.json")


def test_xml_missing_mandatory_leaf_is_missing_element() -> None:
    el = AgentProfile("a", "d", "1", "p").to_xml()
    version = el.find(f"{{{IRTF_AGENT_NS}}}version")
    assert version is not None
    el.remove(version)
    with pytest.raises(RpcError) as info:
        AgentProfile.from_xml(el)
    assert info.value.error_tag == "missing-element"
    assert info.value.info == {"bad-element": "version"}
    assert info.value.path == "/irtf-agent:agent"


def test_xml_without_agent_is_missing_element() -> None:
    with pytest.raises(RpcError, match="no /irtf-agent:agent"):
        AgentProfile.from_xml(etree.Element("{urn:ietf:params:xml:ns:netconf:base:1.0}data"))
