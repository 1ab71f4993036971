"""A JSON Schema declared by an A2A agent card, projected back onto a scenario template.

The inverse of `an_agent.schemas.jsonschema.template_json_schema`, for the A2A gateway: a remote agent
declares its payloads as JSON Schemas (the input/output-schemas extension); our NETCONF face serves
templates (draft-zhou 4.1). Each property becomes a key:

- ``key_type`` from ``type`` (``["string", "null"]`` reads as an optional string);
- ``required`` from the schema's ``required`` list;
- ``semantic_description`` = the property's ``description`` (or its title, or a sentence naming it),
  followed by the constraint phrases templates state their checks in: ``enum`` -> ``Acceptable
  values: ...``, ``minimum``+``maximum`` -> ``Range: ... to ...``, ``format`` date-time / date /
  duration -> ``Format: ...``, ``x-unit`` -> ``Unit: ...``; an array's ``items.enum`` -> its
  acceptable values. A phrase the description already holds is not repeated;
- ``default`` -> ``default_value``.

The scenario is the schema name without its version (``transport_capacity_v1`` -> ``transport_capacity``).
What a template cannot express — a property name that is not snake_case, a type that is not one of
the template types, ``$ref``, a schema that is not an object with properties — is a problem:
`template_from_json_schema` raises one `SchemaError` listing every problem, so a gateway refuses to
start on a card it could only half understand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from an_agent.errors import SchemaError
from an_agent.schemas.template import KeyDef, Template, is_snake_case
from an_agent.schemas.values import KEY_TYPES

_VERSIONED = re.compile(r"^(.+)_v\d+$")
_FORMATS = ("date-time", "date", "duration")


def template_from_json_schema(name: str, schema: Any) -> Template:
    """The template of the JSON Schema named ``name`` (module docstring); `SchemaError` listing problems."""
    where = f"the card's schema {name!r}"
    if not isinstance(schema, Mapping):
        raise SchemaError(f"{where} is not a JSON Schema object", ["(top level): not an object"])
    problems: list[str] = []
    if not is_snake_case(name):
        problems.append(f"{name}: a schema name must be snake_case (it becomes the template's schema_id)")
    if schema.get("type", "object") != "object":
        problems.append(f"type: {schema.get('type')!r}: a payload schema must describe an object")
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        problems.append("properties: a payload schema needs at least one property (a template needs keys)")
        properties = {}
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        problems.append("required: must be a list of property names")
        required = []
    for missing in sorted(set(required) - set(properties)):
        problems.append(f"required: {missing!r} is not a property")
    keys = [_key(str(prop), value, str(prop) in required, problems) for prop, value in properties.items()]
    if problems:
        raise SchemaError(f"{where} cannot be served as a template", problems)
    matched = _VERSIONED.match(name)
    return Template(schema_id=name, scenario=matched.group(1) if matched else name, keys=tuple(k for k in keys if k))


def _key(name: str, schema: Any, required: bool, problems: list[str]) -> KeyDef | None:
    if not isinstance(schema, Mapping):
        problems.append(f"{name}: the property's schema is not an object")
        return None
    before = len(problems)
    if not is_snake_case(name):
        problems.append(f"{name}: property names must be snake_case to be template keys")
    if "$ref" in schema:
        problems.append(f"{name}: $ref is not supported (a template states each key inline)")
    key_type = _type(name, schema, problems)
    if len(problems) > before or key_type is None:
        return None
    text = str(schema.get("description") or schema.get("title") or f"{name.replace('_', ' ')} (from the agent card)")
    text = text.strip().rstrip(".") + "."
    phrases = _phrases(key_type, schema)
    description = " ".join([text, *(p for p in phrases if p.split(":")[0] + ":" not in text)])
    default = schema.get("default")
    return KeyDef.build(name, key_type, description, required=required, default_value=default)  # type: ignore[arg-type]


def _type(name: str, schema: Mapping[str, Any], problems: list[str]) -> str | None:
    declared = schema.get("type")
    if declared is None and name == "other":
        return "string"
    types = [declared] if isinstance(declared, str) else list(declared) if isinstance(declared, list) else []
    kinds = [t for t in types if t != "null"]
    if len(kinds) != 1 or kinds[0] not in KEY_TYPES:
        problems.append(f"{name}: type {declared!r} is not one of {', '.join(KEY_TYPES)} (optionally with null)")
        return None
    return str(kinds[0])


def _phrases(key_type: str, schema: Mapping[str, Any]) -> list[str]:
    phrases = []
    enum = schema.get("enum")
    items = schema.get("items")
    if key_type == "array" and isinstance(items, Mapping):
        enum = items.get("enum")
    if isinstance(enum, list) and [v for v in enum if v is not None]:
        phrases.append("Acceptable values: " + ", ".join(str(v) for v in enum if v is not None) + ".")
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float) and isinstance(high, int | float):
        phrases.append(f"Range: {_number(low)} to {_number(high)}.")
    if schema.get("format") in _FORMATS:
        phrases.append(f"Format: {schema['format']}.")
    if isinstance(schema.get("x-unit"), str):
        phrases.append(f"Unit: {schema['x-unit']}.")
    return phrases


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
