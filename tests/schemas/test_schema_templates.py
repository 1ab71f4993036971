"""The shipped scenario templates: the draft's format, stated constraints, key names the corpus uses."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from an_agent.errors import ConfigError, SchemaError
from an_agent.schemas.anchors import example_mappings
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import Template
from an_agent.schemas.values import check_value, parse_constraints

SHIPPED = {
    "agent_query_v1",
    "fault_diagnosis_v1",
    "coverage_compensation_v1",
    "energy_saving_adjust_v1",
    "complaint_ticket_v1",
    "trouble_ticket_v1",
    "service_intent_v1",
    "intent_task_v1",
}
DRAFT_KEY_FIELDS = ["key_name", "key_type", "required", "default_value", "semantic_description"]


@pytest.fixture(scope="module")
def registry() -> TemplateRegistry:
    return TemplateRegistry.default()


def test_the_shipped_templates_ship_as_data_files(registry: TemplateRegistry) -> None:
    assert set(registry.schema_ids) == SHIPPED
    files = {p.name for p in (resources.files("an_agent.schemas") / "templates").iterdir()}
    assert {f"{s}.json" for s in SHIPPED} <= files


@pytest.mark.parametrize("schema_id", sorted(SHIPPED))
def test_template_is_exactly_in_the_drafts_format(registry: TemplateRegistry, schema_id: str) -> None:
    raw = json.loads((resources.files("an_agent.schemas") / "templates" / f"{schema_id}.json").read_text())
    assert list(raw) == ["schema_id", "scenario", "keys"]
    for key in raw["keys"]:
        assert list(key) == DRAFT_KEY_FIELDS
    template = registry.get(schema_id)
    assert template.to_dict() == raw  # lossless round trip
    other = template.key("other")
    assert other is not None and other.required is False and template.keys[-1] is other
    for key in template.keys:
        # Every description gives mapping examples; constraints are stated where they exist.
        assert example_mappings(key), key.key_name
        if key.default_value is not None:
            assert check_value(key.key_type, key.constraints, key.default_value) is None


def test_corpus_key_names_are_kept(registry: TemplateRegistry) -> None:
    corpus = Path(__file__).parents[1] / "evolution" / "data" / "dev_other_corpus.jsonl"
    for line in corpus.read_text().splitlines():
        row = json.loads(line)
        template = registry.get(row["schema_id"])
        assert set(row["payload"]) <= set(template.key_names)


def test_enumerations_and_ranges_are_parsed_from_the_descriptions(registry: TemplateRegistry) -> None:
    action = registry.get("energy_saving_adjust_v1").key("action")
    assert action is not None and action.constraints.enum == ("suspend", "resume", "reduce")
    power = registry.get("coverage_compensation_v1").key("tx_power_delta_db")
    assert power is not None and (power.constraints.minimum, power.constraints.maximum) == (-10, 10)
    cells = registry.get("coverage_compensation_v1").key("target_cell_ids")
    assert cells is not None and cells.constraints.item_format == "CELL-<digits>"
    ticket = registry.get("complaint_ticket_v1").key("ticket_id")
    assert ticket is not None and ticket.constraints.value_format == "TT-<digits>"
    when = registry.get("fault_diagnosis_v1").key("occurred_at")
    assert when is not None and when.constraints.value_format == "date-time"


def test_constraint_phrases() -> None:
    c = parse_constraints("Level. Acceptable values: low, high or 'max'. Range: 1-9. Format: date.")
    assert c.enum == ("low", "high", "max") and (c.minimum, c.maximum) == (1, 9) and c.value_format == "date"
    assert parse_constraints("Offset. Range: -10 to -2.5 dB.").minimum == -10
    assert parse_constraints("Offset. Range: -10 to -2.5 dB.").unit is None  # old descriptions read as before
    # Values with dots inside (a standard's designations, versions): the list ends at a dot before a space.
    fibre = parse_constraints("Fibre type. Acceptable values: G.652.D, G.655, G.657.A1. Induced by evolution.")
    assert fibre.enum == ("G.652.D", "G.655", "G.657.A1")
    assert check_value("string", fibre, "G.655") is None and check_value("string", fibre, "G") is not None
    assert parse_constraints("Units: w_per_m2. Unit: w_per_m2. Range: 0 to 5000.").unit == "w_per_m2"


def test_unit_and_duration_phrases() -> None:
    c = parse_constraints("Minimum throughput. Unit: mbps. Range: 0 to 100.")
    assert c.unit == "mbps" and (c.minimum, c.maximum) == (0, 100)
    hold = parse_constraints("How long to hold. Format: duration. Example: PT2H.")
    assert hold.value_format == "duration"
    assert check_value("string", hold, "PT2H") is None and check_value("string", hold, "P1DT30M") is None
    assert check_value("string", hold, "P1W") is None
    for bad in ("2 hours", "PT", "P", "PT2X", "T2H"):
        assert check_value("string", hold, bad) == f"{bad!r} does not match the format duration", bad


def test_scenario_lookup(registry: TemplateRegistry) -> None:
    assert registry.resolve("fault_diagnosis").schema_id == "fault_diagnosis_v1"
    assert registry.resolve("fault_diagnosis_v1").scenario == "fault_diagnosis"
    with pytest.raises(SchemaError) as exc:
        registry.resolve("flight_booking")
    assert "fault_diagnosis" in exc.value.problems[0]


def test_newest_version_of_a_scenario_wins(tmp_path: Path) -> None:
    v2 = json.loads((resources.files("an_agent.schemas") / "templates" / "fault_diagnosis_v1.json").read_text())
    v2["schema_id"] = "fault_diagnosis_v2"
    (tmp_path / "v2.json").write_text(json.dumps(v2))
    registry = TemplateRegistry.default([tmp_path])
    assert registry.resolve("fault_diagnosis").schema_id == "fault_diagnosis_v2"
    assert registry.get("fault_diagnosis_v1").schema_id == "fault_diagnosis_v1"


def test_an_invalid_template_lists_every_problem() -> None:
    bad = {
        "schema_id": "",
        "scenario": "x",
        "keys": [
            {"key_name": "Bad Name", "key_type": "string", "required": True, "semantic_description": "d"},
            {"key_name": "n", "key_type": "float", "required": "yes", "semantic_description": ""},
            {"key_name": "r", "key_type": "string", "required": False, "semantic_description": "Range: 1 to 5."},
            {
                "key_name": "d",
                "key_type": "integer",
                "required": False,
                "default_value": 99,
                "semantic_description": "Range: 1 to 5.",
            },
            {"key_name": "d", "key_type": "integer", "required": False, "semantic_description": "again"},
            {"key_name": "other", "key_type": "string", "required": True, "semantic_description": "free text"},
        ],
    }
    with pytest.raises(SchemaError) as exc:
        Template.from_dict(bad)
    assert exc.value.problems == [
        "schema_id: must be a non-empty string",
        "Bad Name: key_name must be a snake_case string",
        "n: key_type must be one of string, integer, number, boolean, array, object",
        "n: required must be true or false",
        "n: semantic_description must be a non-empty string",
        "r: a Range is stated but key_type is string",
        "d: default_value 99 does not conform to the key",
        "d: key names must be unique",
        "other: the reserved key must be optional (required: false) and of type string or array",
    ]


def test_a_broken_template_file_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ConfigError, match=r"broken\.json"):
        TemplateRegistry.default([tmp_path])
