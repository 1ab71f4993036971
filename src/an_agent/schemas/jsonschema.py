"""Projection of a scenario template to a JSON Schema 2020-12 (the A2A face's ``schemas``, DESIGN.md).

The schema describes the payload object (the data part of an A2A message, the envelope's ``payload``
over NETCONF) and accepts what `validate_payload` accepts for the template's base keys:

- ``type: object`` with one property per key, ``required`` for the required keys and
  ``additionalProperties: false`` (unknown keys are refused; free text belongs in ``other``);
- a key's type from ``key_type``; an optional key also admits ``null``, which the validator reads as
  absent; ``integer`` admits integral doubles (``1.0``), as JSON Schema and the validator both do;
- the constraints its semantic description states (`an_agent.schemas.values.Constraints`):
  ``Acceptable values`` -> ``enum``, ``Range`` -> ``minimum``/``maximum``, ``Format: date-time`` /
  ``date`` / ``duration`` -> ``format`` plus an equivalent ``pattern`` (format assertion is optional in
  2020-12, so the pattern is what a generic validator enforces; for a duration it is the validator's
  ISO 8601 pattern, `values.DURATION_PATTERN`, and examples use ``PT2H``), an identifier format such as
  ``TT-<digits>`` -> ``pattern``; ``Item format`` and an array's enumeration apply to each item;
  ``Unit`` -> an ``x-unit`` annotation, and the description states it;
- ``description`` = the semantic description, ``default`` = ``default_value``; keys from a schema patch
  say so in their description, and deprecated ones carry ``deprecated: true``;
- ``other`` accepts anything (the validator sanitises whatever it holds); it should be a string or an
  array of strings in natural language, and its description says so;
- ``examples``: payloads built from the template's own constraints and example mappings, each checked
  against the validator's value check before it is used.

Known differences, on the safe side (a payload valid against the schema is accepted by the agent):
the date-time pattern is strict RFC 3339 (``T`` separator, seconds present) where the agent also takes
other ISO 8601 spellings; a key on trial (experimental or deprecated) is checked by the schema, while
the agent drops a non-conforming value of such a key with a warning instead of refusing the payload.
Constraint fields this module does not know (added to `Constraints` later) are left to the description,
which states them in words.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from an_agent.schemas.template import OTHER_KEY, KeyDef, Template
from an_agent.schemas.values import DURATION_PATTERN, Constraints, check_value

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

# ECMA-262 patterns (the JSON Schema regex dialect): [0-9] rather than \d, which is Unicode-wide in Python.
_DATE = r"[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])"
_DATE_TIME = _DATE + r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]+)?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])"
# The validator's ISO 8601 duration pattern, spelt in ASCII classes: ``\d`` is Unicode-wide in Python's re.
_KNOWN_FORMATS = {
    "date-time": f"^{_DATE_TIME}$",
    "date": f"^{_DATE}$",
    "duration": DURATION_PATTERN.replace(r"\d", "[0-9]"),
}
_PLACEHOLDERS = {"<digits>": ("[0-9]+", "1"), "<letters>": ("[A-Za-z]+", "a"), "<alnum>": ("[A-Za-z0-9]+", "a1")}
_ECMA_SPECIAL = set("\\^$.|?*+()[]{}/")
_EXAMPLE_MAPPING = re.compile(r"->\s*('[^']*'|\"[^\"]*\"|\[[^\]]*\]|-?\d+(?:\.\d+)?|true|false)")
_EXAMPLE_TIMES = {"date-time": "2026-01-01T00:00:00Z", "date": "2026-01-01", "duration": "PT2H"}
_OTHER_EXAMPLE = "free-text detail that no key of the template holds"


def template_json_schema(template: Template) -> dict[str, Any]:
    """The JSON Schema 2020-12 of ``template``'s payload object (module docstring), with ``examples``."""
    properties = {key.key_name: _key_schema(key) for key in template.keys}
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": template.schema_id,
        "description": f"Payload of scenario {template.scenario} (schema_id {template.schema_id}), "
        "draft-zhou-structured-data-schema-interaction.",
        "type": "object",
        "properties": properties,
        "required": [k.key_name for k in template.keys if k.required],
        "additionalProperties": False,
        "examples": example_payloads(template),
    }


def example_payloads(template: Template) -> list[dict[str, Any]]:
    """Valid payloads for ``template``: every offered key filled, then (if different) the required keys only.

    Values come from the key's default, then the example mappings of its description, then a value
    built from its constraints; the first that conforms to the key is used.
    """
    full: dict[str, Any] = {}
    for key in template.keys:
        if key.deprecated:
            continue
        full[key.key_name] = _OTHER_EXAMPLE if key.key_name == OTHER_KEY else example_value(key)
    minimal = {k.key_name: full[k.key_name] for k in template.keys if k.required}
    return [full] if minimal == full else [full, minimal]


def example_value(key: KeyDef) -> Any:
    """A value that conforms to ``key`` (type and stated constraints)."""
    candidates = [key.default_value, *_mapping_examples(key.semantic_description), _built(key)]
    for value in candidates:
        if value is not None and check_value(key.key_type, key.constraints, value) is None:
            return value
    raise ValueError(f"{key.key_name}: no example value satisfies the key's constraints")


def _key_schema(key: KeyDef) -> dict[str, Any]:
    description = key.semantic_description
    if key.experimental:
        description = f"{description} (Experimental key from a schema patch, on trial.)"
    if key.constraints.unit is not None and "Unit:" not in description:
        description = f"{description} Unit: {key.constraints.unit}."
    schema: dict[str, Any] = {"description": description}
    if key.key_name == OTHER_KEY:
        schema["description"] = f"{description} (A string or an array of strings; any content is accepted.)"
        return schema
    schema.update(_typed(key.key_type, key.constraints))
    if not key.required:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    if key.default_value is not None:
        schema["default"] = key.default_value
    if key.deprecated:
        schema["deprecated"] = True
    return schema


def _typed(key_type: str, c: Constraints) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": key_type}
    if key_type == "string":
        schema.update(_string_constraints(c.enum, c.value_format))
    elif key_type in ("integer", "number"):
        if c.unit is not None:
            # An annotation (2020-12 ignores unknown keywords when validating): the unit for tools and people.
            schema["x-unit"] = c.unit
        if c.minimum is not None:
            schema["minimum"] = _number(c.minimum)
        if c.maximum is not None:
            schema["maximum"] = _number(c.maximum)
    elif key_type == "array" and (c.enum or c.item_format):
        schema["items"] = {"type": "string", **_string_constraints(c.enum, c.item_format)}
    return schema


def _string_constraints(enum: tuple[str, ...], fmt: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if enum:
        out["enum"] = list(enum)
    if fmt in _KNOWN_FORMATS:
        out["format"] = fmt
        out["pattern"] = _KNOWN_FORMATS[fmt]
    elif fmt:
        out["pattern"] = placeholder_pattern(fmt)
    return out


def placeholder_pattern(fmt: str) -> str:
    """An anchored ECMA-262 pattern for an identifier format such as ``CELL-<digits>``."""
    out: list[str] = []
    pos = 0
    for match in re.finditer(r"<[a-z]+>", fmt):
        out.append(_ecma_escape(fmt[pos : match.start()]))
        known = _PLACEHOLDERS.get(match.group(0))
        out.append(known[0] if known else _ecma_escape(match.group(0)))
        pos = match.end()
    out.append(_ecma_escape(fmt[pos:]))
    return "^" + "".join(out) + "$"


def _ecma_escape(text: str) -> str:
    # Only syntax characters: ECMA-262 with the u flag refuses escapes such as "\-" outside a class.
    return "".join("\\" + ch if ch in _ECMA_SPECIAL else ch for ch in text)


def _number(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def _mapping_examples(description: str) -> list[Any]:
    """The right-hand sides of ``'...' -> VALUE`` example mappings, decoded (undecodable ones skipped)."""
    values: list[Any] = []
    for match in _EXAMPLE_MAPPING.finditer(description):
        token = match.group(1)
        if token in ("true", "false"):
            values.append(token == "true")
            continue
        try:
            values.append(ast.literal_eval(token))
        except (ValueError, SyntaxError):
            continue
    return values


def _built(key: KeyDef) -> Any:
    c = key.constraints
    if key.key_type == "string":
        return _built_string(c.enum, c.value_format)
    if key.key_type in ("integer", "number"):
        low = 1 if c.minimum is None else c.minimum
        if c.maximum is not None and low > c.maximum:
            low = c.maximum
        return int(-(-low // 1)) if key.key_type == "integer" else _number(low)
    if key.key_type == "boolean":
        return True
    if key.key_type == "array":
        return [_built_string(c.enum, c.item_format)]
    return {}


def _built_string(enum: tuple[str, ...], fmt: str | None) -> str:
    if enum:
        return enum[0]
    if fmt in _EXAMPLE_TIMES:
        return _EXAMPLE_TIMES[fmt]
    if fmt:
        text = fmt
        for placeholder, (_, sample) in _PLACEHOLDERS.items():
            text = text.replace(placeholder, sample)
        return text
    return "example"
