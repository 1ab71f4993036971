"""Hostile structured payloads (issue 10): very deep JSON and broken Unicode get precise invalid-value errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.errors import SchemaError
from an_agent.model import AgentProfile
from an_agent.schemas.validate import MAX_JSON_DEPTH, parse_envelope
from an_agent.server import AgentServer, ServerConfig
from rawnc import RawSession, error_fields
from support import IRTF


def _deep(depth: int) -> str:
    return '{"schema_id": "energy_saving_adjust_v1", "payload": {"cell_ids": ["CELL-0401"], "action": "suspend", ' + (
        '"other": ' + "[" * depth + "]" * depth + "}}"
    )


def test_deep_json_is_refused_before_parsing() -> None:
    with pytest.raises(SchemaError) as info:
        parse_envelope(_deep(200_000))
    assert f"nested deeper than {MAX_JSON_DEPTH}" in info.value.problems[0]


def test_json_at_the_depth_limit_is_accepted() -> None:
    text = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_envelope(text) is not None
    assert parse_envelope('["[[[[", "{{{{"]') == ["[[[[", "{{{{"]  # brackets inside strings do not count


def test_invalid_utf8_is_refused_with_its_offset() -> None:
    with pytest.raises(SchemaError) as info:
        parse_envelope(b'{"payload": "caf\xe9"}')
    assert "UTF-8" in info.value.problems[0] and "offset 16" in info.value.problems[0]


def test_lone_surrogate_escape_is_refused() -> None:
    with pytest.raises(SchemaError) as info:
        parse_envelope('{"payload": {"other": "x\\ud800y"}}')
    assert "surrogate" in info.value.problems[0] and "payload.other" in info.value.problems[0]


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    with AgentServer(ServerConfig(state_dir=tmp_path / "state", port=0, profile=profile, schemas="validate")) as srv:
        yield srv


@pytest.mark.parametrize("data", [_deep(100_000), _deep(5_000)])
def test_deep_json_over_netconf_is_invalid_value(server: AgentServer, data: str) -> None:
    raw = RawSession(server.port)
    try:
        escaped = data.replace("&", "&amp;").replace("<", "&lt;")
        reply = raw.rpc(
            f'<edit-config><target><running/></target><config><data-params xmlns="{IRTF}"><id>p1</id>'
            f"<dataType>text</dataType><format>application/json;schema=energy_saving_adjust_v1</format>"
            f'<data>{escaped}</data></data-params><tasks xmlns="{IRTF}"><task><task-id>t1</task-id>'
            f"<task-sendFrom>me</task-sendFrom><content>## target object\nCELL-0401\n## task description\nx</content>"
            f"<msg-data>p1</msg-data></task></tasks></config></edit-config>"
        )
        fields = error_fields(reply)
        assert fields["tag"] == "invalid-value", fields
        assert "nested deeper than" in (fields["message"] or "")
        assert raw.rpc("<get/>") is not None
    finally:
        raw.close()


def test_the_limit_is_documented_in_json_terms() -> None:
    assert json.loads("[" * 10 + "]" * 10) is not None and MAX_JSON_DEPTH >= 32
