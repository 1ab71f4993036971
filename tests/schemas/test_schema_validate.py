"""Payload validation: one problem line per offending key; 'other' always accepted; lenient patch keys."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from an_agent.errors import SchemaError
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import KeyDef, Template
from an_agent.schemas.validate import media_type, parse_envelope, schema_id_from_media_type, validate_payload

REGISTRY = TemplateRegistry.default()
COVERAGE = REGISTRY.get("coverage_compensation_v1")


def problems(template: Template, payload: Any, **kwargs: Any) -> list[str]:
    with pytest.raises(SchemaError) as exc:
        validate_payload(template, {"schema_id": template.schema_id, "payload": payload}, **kwargs)
    return exc.value.problems


def test_every_corpus_payload_is_valid() -> None:
    corpus = Path(__file__).parents[1] / "evolution" / "data"
    for name in (
        "dev_other_corpus.jsonl",
        "field_other_corpus.jsonl",
        "heldout_noise_corpus.jsonl",
        "heldout_blind_corpus.jsonl",
    ):
        for line in (corpus / name).read_text().splitlines():
            row = json.loads(line)
            result = validate_payload(
                REGISTRY.get(row["schema_id"]), {"schema_id": row["schema_id"], "payload": row["payload"]}
            )
            assert result.other.fragments == (row["payload"]["other"],)


def test_each_offending_key_gets_one_line() -> None:
    payload = {
        "neighbor_cell_ids": ["CELL-0302", "cell 3"],
        "tx_power_delta_db": 25,
        "antenna_tilt_delta_deg": "up",
        "duration_minutes": 12.5,
        "compensation_reason": "boredom",
        "colour": "blue",
        "other": {"free": "form"},
    }
    assert problems(COVERAGE, payload) == [
        "target_cell_ids: required key is missing",
        "neighbor_cell_ids: item 1: 'cell 3' does not match the format CELL-<digits>",
        "tx_power_delta_db: 25 is outside the range -10 to 10",
        "antenna_tilt_delta_deg: expected a number, got string 'up'",
        "duration_minutes: expected an integer, got 12.5",
        "compensation_reason: 'boredom' is not one of neighbour_outage, coverage_hole, capacity_overload, interference",
        "colour: not a key of coverage_compensation_v1; put free text in 'other'",
    ]


def test_types_follow_json_schema() -> None:
    fault = REGISTRY.get("fault_diagnosis_v1")
    assert problems(fault, {"fault_type": True}) == ["fault_type: expected a string, got boolean True"]
    assert problems(fault, {"fault_type": None}) == ["fault_type: required key is null"]
    assert problems(fault, {"fault_type": "unknown", "occurred_at": "yesterday"}) == [
        "occurred_at: 'yesterday' does not match the format date-time"
    ]
    assert problems(COVERAGE, {"target_cell_ids": ["CELL-1"], "tx_power_delta_db": float("nan")}) == [
        "tx_power_delta_db: expected a number, got number nan"
    ]
    ok = validate_payload(
        COVERAGE,
        {
            "schema_id": COVERAGE.schema_id,
            "payload": {
                "target_cell_ids": ["CELL-1"],
                "duration_minutes": 60.0,
                "tx_power_delta_db": -2.5,
                "neighbor_cell_ids": None,
            },
        },
    )
    assert ok.values == {"target_cell_ids": ["CELL-1"], "duration_minutes": 60.0, "tx_power_delta_db": -2.5}


def test_envelope_problems() -> None:
    with pytest.raises(SchemaError) as exc:
        validate_payload(COVERAGE, {"schema_id": "fault_diagnosis_v1", "payload": []})
    assert exc.value.problems == [
        "schema_id: expected 'coverage_compensation_v1', got 'fault_diagnosis_v1'",
        "payload: must be a JSON object of key-value pairs",
    ]
    with pytest.raises(SchemaError):
        validate_payload(COVERAGE, ["not", "an", "object"])
    with pytest.raises(SchemaError, match="not valid JSON"):
        parse_envelope("{")


@pytest.mark.parametrize("other", ["a string", ["two", "strings"], 42, {"nested": ["x"]}, [1, None, "z"], True])
def test_other_is_always_accepted(other: Any) -> None:
    result = validate_payload(
        COVERAGE, {"schema_id": COVERAGE.schema_id, "payload": {"target_cell_ids": ["CELL-1"], "other": other}}
    )
    assert result.other.fragments
    assert all(isinstance(f, str) for f in result.other.fragments)
    if not isinstance(other, str) and not (isinstance(other, list) and all(isinstance(i, str) for i in other)):
        assert any("converted" in w for w in result.warnings)


def test_experimental_keys_are_lenient_and_withdrawn_keys_accepted_with_a_warning() -> None:
    trial = KeyDef.build("roaming", "boolean", "Roaming users affected.", experimental=True)
    template = COVERAGE.with_keys([trial])
    result = validate_payload(
        template, {"schema_id": COVERAGE.schema_id, "payload": {"target_cell_ids": ["CELL-1"], "roaming": "yes"}}
    )
    assert "roaming" not in result.values and result.nonconforming["roaming"].startswith("expected true or false")
    assert any(w.startswith("roaming: value ignored (experimental key)") for w in result.warnings)
    old = KeyDef.build("legacy_flag", "boolean", "Old key.")
    result = validate_payload(
        COVERAGE,
        {"schema_id": COVERAGE.schema_id, "payload": {"target_cell_ids": ["CELL-1"], "legacy_flag": True}},
        compat_keys={"legacy_flag": old},
    )
    assert result.values["legacy_flag"] is True and result.compat_keys_used == ("legacy_flag",)
    assert any("withdrawn key accepted" in w for w in result.warnings)


def test_with_keys_never_removes_or_retypes_base_keys() -> None:
    clash = KeyDef.build("tx_power_delta_db", "string", "A retyped duplicate.")
    template = COVERAGE.with_keys([clash], refined={"duration_minutes": "Refined. Range: 1 to 60."})
    assert template.key("tx_power_delta_db") == COVERAGE.key("tx_power_delta_db")
    assert template.key_names == COVERAGE.key_names
    refined = template.key("duration_minutes")
    assert refined is not None and refined.key_type == "integer" and refined.constraints.maximum == 60


def test_media_type() -> None:
    assert media_type("fault_diagnosis_v1") == "application/json;schema=fault_diagnosis_v1"
    assert schema_id_from_media_type('application/json; schema="fault_diagnosis_v1"') == "fault_diagnosis_v1"
    assert schema_id_from_media_type("Application/JSON;schema=x_v2") == "x_v2"
    assert schema_id_from_media_type("text/plain") is None
