"""Reading user messages per the schemas extension: first structured part, declared schemas, doubles."""

from __future__ import annotations

import pytest
from a2a.types import Message, Part, Role
from google.protobuf.json_format import MessageToDict
from google.protobuf.struct_pb2 import Struct, Value

from an_agent.a2a.inbound import accepts_our_output, integral_numbers, read_message
from an_agent.errors import SchemaError

DECLARED = {"energy_saving_adjust_v1", "fault_diagnosis_v1"}


def _data_part(data: dict[str, object], mime: str | None) -> Part:
    value = Value()
    value.struct_value.update(data)
    metadata = Struct()
    if mime:
        metadata.update({"mimeType": mime})
    return Part(data=value, metadata=metadata)


def _message(*parts: Part) -> dict[str, object]:
    """The ProtoJSON of a message built with the SDK's own types (as the executor sees it)."""
    return MessageToDict(Message(message_id="m1", role=Role.ROLE_USER, parts=list(parts)))


def test_first_structured_part_wins_and_integral_doubles_become_integers() -> None:
    message = _message(
        Part(text="reduce power tonight"),
        _data_part({"cell_ids": ["CELL-0401"], "action": "reduce", "duration_minutes": 30}, "application/json;schema=energy_saving_adjust_v1"),
        _data_part({"fault_type": "x"}, "application/json;schema=fault_diagnosis_v1"),
    )  # fmt: skip
    inbound = read_message(message, DECLARED)
    assert inbound.structured is not None and inbound.structured.schema_id == "energy_saving_adjust_v1"
    duration = inbound.structured.payload["duration_minutes"]
    assert duration == 30 and isinstance(duration, int)  # protobuf carried 30.0
    assert inbound.text == "reduce power tonight"
    assert inbound.ignored_parts == (2,)


def test_media_type_field_is_read_too_and_plain_data_is_not_structured() -> None:
    part = Part(media_type="application/json;schema=fault_diagnosis_v1")
    part.data.struct_value.update({"fault_type": "base_station_outage"})
    assert read_message(_message(part), DECLARED).structured is not None
    assert read_message(_message(_data_part({"a": 1}, None)), DECLARED).structured is None
    assert read_message(_message(_data_part({"a": 1}, "application/json")), DECLARED).structured is None


def test_undeclared_schema_and_non_object_data_are_structured_input_errors() -> None:
    with pytest.raises(SchemaError, match="'teleport_v1' is not declared") as info:
        read_message(_message(_data_part({"a": 1}, "application/json;schema=teleport_v1")), DECLARED)
    assert "energy_saving_adjust_v1" in info.value.problems[0]
    part = Part(data=Value(number_value=3), metadata=Struct())
    part.metadata.update({"mimeType": "application/json;schema=fault_diagnosis_v1"})
    with pytest.raises(SchemaError, match="must hold a JSON object"):
        read_message(_message(part), DECLARED)


def test_text_only() -> None:
    inbound = read_message(_message(Part(text="why did SITE-07 go down?"), Part(text="  ")), DECLARED)
    assert inbound.structured is None and inbound.text == "why did SITE-07 go down?"


def test_integral_numbers() -> None:
    assert integral_numbers({"a": [1.0, 2.5, {"b": -3.0}], "c": True, "d": "4.0"}) == {
        "a": [1, 2.5, {"b": -3}],
        "c": True,
        "d": "4.0",
    }


def test_parts_of_other_media_types_are_named_not_dropped() -> None:
    message = _message(
        Part(text="diagnose"),
        Part(url="https://example.net/a.png", media_type="image/png"),
        Part(text="<p>x</p>", media_type="text/html; charset=utf-8"),
        _data_part({"a": 1}, None),
        Part(text="plain", media_type="text/plain; charset=utf-8"),
    )
    inbound = read_message(message, DECLARED)
    assert inbound.unsupported == ("parts[1]: a file part (image/png)", "parts[2]: a text part of type text/html")
    assert inbound.text == "diagnose\n\nplain" and inbound.data == {"a": 1}


@pytest.mark.parametrize(
    ("accepted", "ok"),
    [
        ([], True),
        (["image/png"], False),
        (["image/png", "application/json;schema=fault_diagnosis_report_v1"], True),
        (["text/*"], True),
        (["*/*"], True),
        (["application/*"], True),
        (["image/*", "application/xml"], False),
    ],
)
def test_accepted_output_modes(accepted: list[str], ok: bool) -> None:
    assert accepts_our_output(accepted) is ok
