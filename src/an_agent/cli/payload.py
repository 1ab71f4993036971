"""Structured payloads from the command line: ``--payload FILE`` and ``--set key=value`` on a template.

A ``--set`` value is read according to the key's ``key_type`` in the negotiated template, so that
``--set duration_minutes=30`` is the number 30 and ``--set cell_ids=CELL-1,CELL-2`` a list:

=========  ==========================================================================
string     the text as given
integer    a JSON number (``30``, ``30.0``); anything else is passed on as text, and
number     validation then names the key
boolean    true/false, yes/no, 1/0
array      a JSON array (``["a","b"]``), else the text split on commas
object     a JSON object
=========  ==========================================================================

Keys the template does not have are passed on as text, and validation refuses them by name.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from an_agent.errors import ConfigError
from an_agent.schemas.template import Template

_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def add_version_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """``--schema-version V`` (repeatable), into ``args.schema_versions``."""
    parser.add_argument(
        "--schema-version",
        dest="schema_versions",
        action="append",
        default=[],
        metavar="V",
        help="a version this client supports (2, v2 or a schema_id; repeatable); default: the agent's newest",
    )


def read_payload_file(name: str) -> dict[str, Any]:
    """A payload object from a JSON file (or ``-`` for stdin); an envelope's ``payload`` is unwrapped."""
    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {name}: {exc.strerror}") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{name}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if isinstance(value, dict) and isinstance(value.get("payload"), dict) and "schema_id" in value:
        value = value["payload"]
    if not isinstance(value, dict):
        raise ConfigError(f"{name}: a payload is a JSON object of key-value pairs")
    return value


def parse_sets(template: Template, sets: Sequence[str]) -> dict[str, Any]:
    """``key=value`` arguments as payload members, typed by the template (module docstring)."""
    return parse_typed_sets({k.key_name: k.key_type for k in template.keys}, sets)


def json_schema_key_types(schema: Mapping[str, Any]) -> dict[str, str]:
    """The key types of a payload's JSON Schema (an A2A card's ``schemas`` entry), as template key types."""
    out: dict[str, str] = {}
    properties = schema.get("properties")
    for name, prop in (properties if isinstance(properties, dict) else {}).items():
        kind = prop.get("type") if isinstance(prop, dict) else None
        kinds = [kind] if isinstance(kind, str) else [k for k in kind or [] if isinstance(k, str)]
        real = [k for k in kinds if k != "null"]
        if real:
            out[name] = real[0]
    return out


def parse_typed_sets(key_types: Mapping[str, str], sets: Sequence[str]) -> dict[str, Any]:
    """``key=value`` arguments as payload members, each typed by ``key_types[key]`` when known."""
    out: dict[str, Any] = {}
    for item in sets:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE")
        key_type = key_types.get(name)
        out[name] = raw if key_type is None else coerce(key_type, raw)
    return out


def coerce(key_type: str, raw: str) -> Any:
    """The value ``raw`` stands for as a ``key_type``; text that does not fit is returned unchanged."""
    if key_type in ("integer", "number"):
        value = _json(raw)
        return value if isinstance(value, int | float) and not isinstance(value, bool) else raw
    if key_type == "boolean":
        lowered = raw.strip().lower()
        return True if lowered in _TRUE else False if lowered in _FALSE else raw
    if key_type == "array":
        value = _json(raw) if raw.lstrip().startswith("[") else None
        return value if isinstance(value, list) else [part.strip() for part in raw.split(",") if part.strip()]
    if key_type == "object":
        value = _json(raw)
        return value if isinstance(value, dict) else raw
    return raw


def _json(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return None
