"""Choosing the template version for a client (draft-zhou section 5): the highest common one, or a clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from an_agent.errors import ConfigError, SchemaError
from an_agent.schemas.registry import TemplateRegistry, parse_version


@pytest.fixture
def registry(tmp_path: Path) -> TemplateRegistry:
    """The shipped templates plus fault_diagnosis_v2 and _v3 (an operator's directory)."""
    base = TemplateRegistry.default().get("fault_diagnosis_v1").to_dict()
    for version in (2, 3):
        doc = {**base, "schema_id": f"fault_diagnosis_v{version}"}
        (tmp_path / f"fault_diagnosis_v{version}.json").write_text(json.dumps(doc), encoding="utf-8")
    return TemplateRegistry.default([tmp_path])


@pytest.mark.parametrize(
    ("supported", "chosen"),
    [
        ((), "fault_diagnosis_v3"),
        (("1",), "fault_diagnosis_v1"),
        (("v1", "v2"), "fault_diagnosis_v2"),
        (("fault_diagnosis_v2", "4", "v1"), "fault_diagnosis_v2"),
        (("1", "2", "3", "9"), "fault_diagnosis_v3"),
    ],
)
def test_highest_common_version(registry: TemplateRegistry, supported: tuple[str, ...], chosen: str) -> None:
    assert registry.negotiate("fault_diagnosis", supported).schema_id == chosen
    # A schema_id in the request names the scenario once the client states its versions.
    if supported:
        assert registry.negotiate("fault_diagnosis_v1", supported).schema_id == chosen


def test_without_versions_an_exact_schema_id_is_kept(registry: TemplateRegistry) -> None:
    assert registry.negotiate("fault_diagnosis_v1").schema_id == "fault_diagnosis_v1"


def test_no_common_version_lists_what_the_agent_has(registry: TemplateRegistry) -> None:
    with pytest.raises(SchemaError) as info:
        registry.negotiate("fault_diagnosis", ["v7", "8"])
    assert "no common version of scenario 'fault_diagnosis': the client supports v7, v8" in str(info.value)
    assert info.value.problems == [
        "supported-version: the agent has fault_diagnosis_v1, fault_diagnosis_v2, fault_diagnosis_v3"
    ]


def test_unknown_scenario_lists_the_scenarios(registry: TemplateRegistry) -> None:
    with pytest.raises(SchemaError, match="no schema template for scenario 'nope'") as info:
        registry.negotiate("nope", ["1"])
    assert "fault_diagnosis" in info.value.problems[0]


@pytest.mark.parametrize("text", ["", "vv1", "1.5", "fault_diagnosis", "x_v"])
def test_bad_version_strings_are_refused(text: str) -> None:
    with pytest.raises(SchemaError, match="not a schema version"):
        parse_version(text)


def test_operator_templates_are_checked_with_every_problem_named(tmp_path: Path) -> None:
    ops = tmp_path / "ops"
    ops.mkdir()
    (ops / "a_broken.json").write_text('{"schema_id": ')
    (ops / "b_bad.json").write_text(json.dumps({"schema_id": "probe_v1", "scenario": "probe", "keys": [
        {"key_name": "Cell", "key_type": "string", "required": True, "semantic_description": "x"},
        {"key_name": "ratio", "key_type": "integer", "required": False, "semantic_description": "Range: 0.2 to 0.8."},
    ]}))  # fmt: skip
    (ops / "c_dup.json").write_text(
        (Path(__file__).parents[2] / "src/an_agent/schemas/templates/fault_diagnosis_v1.json").read_text()
    )
    (ops / "d_ok.json").write_text(json.dumps({"schema_id": "probe_v2", "scenario": "probe", "keys": [
        {"key_name": "ratio", "key_type": "integer", "required": False, "semantic_description": "Range: 0.2 to 0.8."},
    ]}))  # fmt: skip
    with pytest.raises(ConfigError) as info:
        TemplateRegistry.default([ops, tmp_path / "missing"])
    lines = str(info.value).splitlines()
    assert lines[0] == "operator schema templates refused (5 problems):"
    assert lines[1] == f"  {ops / 'a_broken.json'}: not JSON (line 1: Expecting value)"
    assert lines[2] == f"  {ops / 'b_bad.json'}: Cell: key_name must be a snake_case string"
    assert "c_dup.json: schema_id: fault_diagnosis_v1 is already defined by an-agent's templates" in lines[3]
    assert lines[4] == f"  {ops / 'd_ok.json'}: ratio: no integer value meets the constraints its description states"
    assert lines[5] == f"  {tmp_path / 'missing'}: not a directory"


def test_an_empty_template_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="holds no"):
        TemplateRegistry.default([tmp_path])
