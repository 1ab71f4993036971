"""Template -> JSON Schema 2020-12: meta-valid, examples valid, same verdicts as our validator."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from an_agent.errors import SchemaError
from an_agent.schemas.jsonschema import example_payloads, placeholder_pattern, template_json_schema
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import KeyDef, Template
from an_agent.schemas.validate import validate_payload

TEMPLATES = TemplateRegistry.default().templates()


def _schema_accepts(template: Template, payload: Any) -> bool:
    validator = Draft202012Validator(template_json_schema(template), format_checker=Draft202012Validator.FORMAT_CHECKER)
    return validator.is_valid(payload)


def _ours_accepts(template: Template, payload: Any) -> bool:
    try:
        validate_payload(template, {"schema_id": template.schema_id, "payload": payload})
    except SchemaError:
        return False
    return True


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda t: t.schema_id)
def test_every_shipped_schema_is_valid_2020_12_and_its_examples_validate(template: Template) -> None:
    schema = template_json_schema(template)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == [k.key_name for k in template.keys if k.required]
    assert schema["examples"], "at least one example payload"
    for example in schema["examples"]:
        assert _schema_accepts(template, example)
        assert _ours_accepts(template, example)


def test_projection_states_types_enumerations_ranges_formats_and_descriptions() -> None:
    template = TemplateRegistry.default().get("complaint_ticket_v1")
    props = template_json_schema(template)["properties"]
    assert props["ticket_id"]["type"] == "string"  # required: no null
    assert props["ticket_id"]["pattern"] == "^TT-[0-9]+$"
    assert props["complaint_category"]["enum"][0] == "no_coverage"
    assert props["priority"]["type"] == ["string", "null"]
    assert props["priority"]["enum"][-1] is None and "urgent" in props["priority"]["enum"]
    assert props["priority"]["default"] == "normal"
    assert props["affected_vehicle_count"]["minimum"] == 1
    assert props["affected_vehicle_count"]["maximum"] == 100000
    assert props["occurred_at"]["format"] == "date-time"
    assert props["ticket_id"]["description"] == template.key("ticket_id").semantic_description  # type: ignore[union-attr]
    assert "type" not in props["other"]  # the agent accepts any 'other'


def _complaint(**changes: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"ticket_id": "TT-1", "complaint_category": "call_drop"}
    payload.update(changes)
    return {k: v for k, v in payload.items() if v is not Ellipsis}


CASES = [
    _complaint(),
    _complaint(affected_vehicle_count=40.0),  # an integral double from a protobuf client
    _complaint(affected_vehicle_count=40.5),
    _complaint(affected_vehicle_count=0),
    _complaint(affected_vehicle_count=100001),
    _complaint(affected_vehicle_count=True),
    _complaint(affected_vehicle_count="40"),
    _complaint(priority=None),
    _complaint(priority="urgent"),
    _complaint(priority="whenever"),
    _complaint(ticket_id="T-1"),
    _complaint(ticket_id=None),
    _complaint(ticket_id=Ellipsis),
    _complaint(complaint_category=Ellipsis),
    _complaint(occurred_at="2026-10-04T17:30:00Z"),
    _complaint(occurred_at="2026-10-04T17:30:00.25+02:00"),
    _complaint(occurred_at="yesterday"),
    _complaint(occurred_at="2026-10-04"),
    _complaint(vehicle_ids=["VIN-1", "VIN-2"]),
    _complaint(vehicle_ids="VIN-1"),
    _complaint(cross_domain="yes"),
    _complaint(cross_domain=False),
    _complaint(other=["a", "b"]),
    _complaint(other={"anything": 1}),
    _complaint(unknown_key=1),
    [],
    "text",
]


@pytest.mark.parametrize("payload", CASES)
def test_the_schema_and_our_validator_agree(payload: Any) -> None:
    template = TemplateRegistry.default().get("complaint_ticket_v1")
    assert _schema_accepts(template, payload) == _ours_accepts(template, payload)


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=200_000),
    st.sampled_from([0.5, 1.0, 2.0, 120.0, -3.25]),
    st.sampled_from(
        [
            "",
            "x",
            "TT-12",
            "CELL-0401",
            "SITE-07",
            "ALM-1",
            "major",
            "wireless",
            "suspend",
            "base_station_outage",
            "2026-10-04T17:30:00Z",
            "2026-10-04",
            "neighbour_outage",
        ]
    ),
    st.lists(st.sampled_from(["CELL-1", "cell-1", "SITE-2", "ALM-3", "x"]), max_size=3),
    st.just({"k": "v"}),
)


@settings(max_examples=300, deadline=None)
@given(index=st.integers(min_value=0, max_value=len(TEMPLATES) - 1), data=st.data())
def test_agreement_on_generated_payloads(index: int, data: st.DataObject) -> None:
    template = TEMPLATES[index]
    names = [*template.key_names, "not_a_key"]
    payload = data.draw(st.dictionaries(st.sampled_from(names), VALUES, max_size=len(names)))
    if data.draw(st.booleans()):  # half the cases start from a valid payload, so acceptance is exercised
        payload = {**example_payloads(template)[-1], **payload}
    assert _schema_accepts(template, payload) == _ours_accepts(template, payload), payload


def test_an_operators_template_with_every_constraint_kind() -> None:
    template = Template.from_dict(
        {
            "schema_id": "probe_v2",
            "scenario": "probe",
            "keys": [
                {
                    "key_name": "probe_id",
                    "key_type": "string",
                    "required": True,
                    "default_value": None,
                    "semantic_description": "Probe identifier. Format: P_<alnum>-<digits>.",
                },
                {
                    "key_name": "ratio",
                    "key_type": "number",
                    "required": False,
                    "default_value": None,
                    "semantic_description": "Loss ratio. Range: 0 to 0.5.",
                },
                {
                    "key_name": "day",
                    "key_type": "string",
                    "required": False,
                    "default_value": None,
                    "semantic_description": "Day of the probe. Format: date.",
                },
                {
                    "key_name": "sites",
                    "key_type": "array",
                    "required": True,
                    "default_value": None,
                    "semantic_description": "Sites. Acceptable values: a, b.",
                },
                {
                    "key_name": "extra",
                    "key_type": "object",
                    "required": False,
                    "default_value": None,
                    "semantic_description": "Anything else structured.",
                },
            ],
        }
    )
    schema = template_json_schema(template)
    Draft202012Validator.check_schema(schema)
    assert schema["properties"]["probe_id"]["pattern"] == "^P_[A-Za-z0-9]+-[0-9]+$"
    assert schema["properties"]["sites"]["items"] == {"type": "string", "enum": ["a", "b"]}
    for example in schema["examples"]:
        assert _schema_accepts(template, example) and _ours_accepts(template, example)
    for bad in (
        {"probe_id": "P_x-1", "sites": ["c"]},
        {"probe_id": "Px-1", "sites": ["a"]},
        {"probe_id": "P_x-1", "sites": ["a"], "ratio": 0.75},
        {"probe_id": "P_x-1", "sites": ["a"], "day": "5"},
    ):
        assert not _schema_accepts(template, bad) and not _ours_accepts(template, bad)


def test_patched_keys_are_marked() -> None:
    base = TemplateRegistry.default().get("fault_diagnosis_v1")
    patched = base.with_keys(
        [
            KeyDef.build(
                "backhaul_type", "string", "Backhaul kind. Acceptable values: fiber, microwave.", experimental=True
            ),
            KeyDef.build("old_key", "string", "Going away.", deprecated=True),
        ]
    )
    props = template_json_schema(patched)["properties"]
    assert "Experimental" in props["backhaul_type"]["description"]
    assert props["old_key"]["deprecated"] is True
    assert all("old_key" not in example for example in example_payloads(patched))


def test_placeholder_pattern_escapes_only_syntax_characters() -> None:
    assert placeholder_pattern("TT-<digits>") == "^TT-[0-9]+$"
    assert placeholder_pattern("a+b.c/<letters>") == r"^a\+b\.c\/[A-Za-z]+$"


def test_duration_format_and_unit_are_projected() -> None:
    template = Template.from_dict(
        {
            "schema_id": "hold_v1",
            "scenario": "hold",
            "keys": [
                {
                    "key_name": "hold_duration",
                    "key_type": "string",
                    "required": True,
                    "default_value": None,
                    "semantic_description": "How long to hold the change. Format: duration.",
                },
                {
                    "key_name": "throughput_mbps",
                    "key_type": "integer",
                    "required": False,
                    "default_value": None,
                    "semantic_description": "Minimum throughput. Unit: mbps. Range: 0 to 100.",
                },
                {
                    "key_name": "loss_ratio",
                    "key_type": "number",
                    "required": False,
                    "default_value": None,
                    "semantic_description": "Loss as a share of packets. Range: 0 to 1.",
                },
            ],
        }
    )
    schema = template_json_schema(template)
    Draft202012Validator.check_schema(schema)
    hold = schema["properties"]["hold_duration"]
    assert hold["format"] == "duration" and "[0-9]" in hold["pattern"] and "\\d" not in hold["pattern"]
    assert schema["examples"][0]["hold_duration"] == "PT2H"
    assert schema["properties"]["throughput_mbps"]["x-unit"] == "mbps"
    assert "Unit: mbps." in schema["properties"]["throughput_mbps"]["description"]
    assert "x-unit" not in schema["properties"]["loss_ratio"]
    for example in schema["examples"]:
        assert _schema_accepts(template, example) and _ours_accepts(template, example)
    for good, bad in (("PT90M", "90 minutes"), ("P1DT2H", "PT"), ("P2W", "P")):
        assert _schema_accepts(template, {"hold_duration": good}) and _ours_accepts(template, {"hold_duration": good})
        assert not _schema_accepts(template, {"hold_duration": bad}) and not _ours_accepts(
            template, {"hold_duration": bad}
        )
