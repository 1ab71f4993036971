"""Validation of a structured data-param against its scenario template.

A task's data-param with format ``application/json;schema=<schema_id>`` carries the envelope
``{"schema_id": ..., "payload": {...}}``. `validate_payload` checks it against a template (the base
template, or the effective one with the patches that apply to the client):

- every required key is present (and not null); every key present is defined by the template;
- each value conforms to its key_type and to the enumeration, range and format its semantic
  description states (`an_agent.schemas.values`);
- ``other`` is always accepted, whatever it holds, and returned sanitised (`sanitize_other`).

Problems are collected, not raised one by one: `SchemaError.problems` has one line per offending key,
starting with the key name, so an ``<rpc-error>`` message can list them all.

Keys from schema patches are lenient while they are on trial: a value of an experimental or deprecated
key that does not conform is dropped with a warning instead of refusing the payload, because the
draft's lifecycle measures ``value_type_correctness`` of such keys, which presupposes receiving them.
Withdrawn keys still inside their compatibility window (``compat_keys``) are accepted the same way,
with a warning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from an_agent.errors import SchemaError
from an_agent.schemas.sanitize import DEFAULT_MAX_FRAGMENT_CHARS, DEFAULT_MAX_FRAGMENTS, SanitizedOther, sanitize_other
from an_agent.schemas.template import OTHER_KEY, KeyDef, Template
from an_agent.schemas.values import check_value

MEDIA_TYPE_PREFIX = "application/json;schema="
_MEDIA = re.compile(r"^\s*application/json\s*;\s*schema\s*=\s*\"?([A-Za-z0-9_.\-]+)\"?\s*$", re.IGNORECASE)


def media_type(schema_id: str) -> str:
    """The data-param format of a payload for ``schema_id``: ``application/json;schema=<schema_id>``."""
    return MEDIA_TYPE_PREFIX + schema_id


def schema_id_from_media_type(fmt: str) -> str | None:
    """The schema_id named by a data-param format, or None when it is not a structured payload."""
    match = _MEDIA.match(fmt)
    return match.group(1) if match else None


MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in a payload (the templates need 3)."""

# A JSON string (skipped whole, so brackets inside it do not count) or a bracket.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_envelope(data: str | bytes) -> Any:
    """Decode the JSON text of a data-param; `SchemaError` when it is not JSON.

    Refused with a precise problem line, before or instead of parsing: bytes
    that are not UTF-8 (with the byte offset), nesting deeper than
    `MAX_JSON_DEPTH` (the standard parser would exhaust the interpreter's
    recursion limit on it), and ``\\uD800``-style escapes of lone surrogates,
    which no UTF-8 text can hold (with the path of the string).
    """
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(
                "the structured payload is not valid UTF-8",
                [f"(data): not valid UTF-8: {exc.reason} at byte offset {exc.start} (byte 0x{data[exc.start]:02x})"],
            ) from None
    _check_depth(data)
    try:
        value = json.loads(data)
    except json.JSONDecodeError as exc:
        raise SchemaError("the structured payload is not valid JSON", [f"(data): {exc}"]) from None
    _check_unicode(value, "")
    return value


def _check_depth(text: str) -> None:
    depth = 0
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                raise SchemaError(
                    "the structured payload is nested too deeply",
                    [f"(data): nested deeper than {MAX_JSON_DEPTH} levels at character {match.start()}"],
                )
        elif token in "]}":
            depth -= 1


def _check_unicode(value: Any, path: str) -> None:
    """Refuse strings (keys or values) holding lone surrogates; ``path`` names where (``payload.other[2]``)."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is not None:
            raise SchemaError(
                "the structured payload holds text that is not valid Unicode",
                [f"{path or '(data)'}: lone surrogate \\u{ord(found.group()):04x} at character {found.start()}"],
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key, f"{path}.{key}".lstrip(".") + " (key)")
            _check_unicode(item, f"{path}.{key}".lstrip("."))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_unicode(item, f"{path}[{index}]")


@dataclass(frozen=True)
class ValidatedPayload:
    """An accepted payload.

    ``values`` holds the template keys present in the payload (without ``other``), as sent; values of
    lenient keys that did not conform are left out and listed in ``nonconforming`` (key -> why).
    ``other`` holds the sanitised fragments; ``warnings`` is for the requester and the log.
    """

    schema_id: str
    values: dict[str, Any]
    other: SanitizedOther
    warnings: tuple[str, ...] = ()
    nonconforming: dict[str, str] = field(default_factory=dict)
    compat_keys_used: tuple[str, ...] = ()


def validate_payload(
    template: Template,
    envelope: Any,
    *,
    compat_keys: Mapping[str, KeyDef] | None = None,
    max_other_chars: int = DEFAULT_MAX_FRAGMENT_CHARS,
    max_other_fragments: int = DEFAULT_MAX_FRAGMENTS,
) -> ValidatedPayload:
    """Validate an envelope ``{"schema_id", "payload"}`` against ``template`` (module docstring).

    Raises `SchemaError` whose ``problems`` has one line per offending key (envelope problems are
    reported under ``schema_id`` or ``payload``).
    """
    compat_keys = compat_keys or {}
    if not isinstance(envelope, Mapping):
        raise SchemaError(
            f"a structured payload for {template.schema_id} must be a JSON object",
            ['(data): expected {"schema_id": ..., "payload": {...}}'],
        )
    problems: list[str] = []
    schema_id = envelope.get("schema_id")
    if schema_id != template.schema_id:
        problems.append(f"schema_id: expected {template.schema_id!r}, got {schema_id!r}")
    payload = envelope.get("payload")
    if not isinstance(payload, Mapping):
        problems.append("payload: must be a JSON object of key-value pairs")
        raise SchemaError(f"invalid structured payload for {template.schema_id}", problems)

    warnings: list[str] = []
    values: dict[str, Any] = {}
    nonconforming: dict[str, str] = {}
    compat_used: list[str] = []
    for key in template.keys:
        if key.key_name == OTHER_KEY:
            continue
        present = key.key_name in payload and payload[key.key_name] is not None
        if not present:
            if key.required:
                state = "is null" if key.key_name in payload else "is missing"
                problems.append(f"{key.key_name}: required key {state}")
            continue
        value = payload[key.key_name]
        problem = check_value(key.key_type, key.constraints, value)
        if problem is None:
            values[key.key_name] = value
        elif key.experimental or key.deprecated:
            nonconforming[key.key_name] = problem
            state = "experimental" if key.experimental else "deprecated"
            warnings.append(f"{key.key_name}: value ignored ({state} key): {problem}")
        else:
            problems.append(f"{key.key_name}: {problem}")
        if key.deprecated:
            warnings.append(f"{key.key_name}: deprecated key, it will be withdrawn")

    for name in payload:
        if name == OTHER_KEY or template.key(name) is not None:
            continue
        compat = compat_keys.get(name)
        if compat is None:
            problems.append(f"{name}: not a key of {template.schema_id}; put free text in 'other'")
            continue
        compat_used.append(name)
        value = payload[name]
        problem = None if value is None else check_value(compat.key_type, compat.constraints, value)
        if problem is None:
            values[name] = value
        else:
            nonconforming[name] = problem
        warnings.append(f"{name}: withdrawn key accepted for backward compatibility only; stop sending it")

    if problems:
        raise SchemaError(f"invalid structured payload for {template.schema_id}", problems)
    other = sanitize_other(payload.get(OTHER_KEY), max_other_chars, max_other_fragments)
    warnings.extend(f"other: {note}" for note in other.notes)
    return ValidatedPayload(
        schema_id=template.schema_id,
        values=values,
        other=other,
        warnings=tuple(warnings),
        nonconforming=nonconforming,
        compat_keys_used=tuple(compat_used),
    )
