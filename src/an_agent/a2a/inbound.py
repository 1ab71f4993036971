"""Reading an A2A user message per the input/output-schemas extension, section 2-3 (no SDK import).

A message is taken in its ProtoJSON form (``MessageToDict``). `read_message` finds:

- the structured input: the FIRST data part whose ``metadata.mimeType`` (the extension's spelling; A2A
  v1's own ``mediaType`` field is read too) is ``application/json;schema=<name>``. Further such parts
  are ignored, as the extension says. A name the agent does not declare, or data that is not a JSON
  object, is a structured-input error (`StructuredInputError`); the message then creates no task;
- the text: every text part, joined by blank lines (for the NL mapping or a prompt);
- the first data part that declares no schema (keys answering an ``input-required``);
- the parts of a media type no skill takes (`InboundMessage.unsupported`): file parts (``raw`` or
  ``url``), text parts whose ``mediaType`` is not ``text/plain``, data parts whose ``mediaType`` is not
  JSON. The face refuses such a message (A2A ``ContentTypeNotSupportedError``) rather than drop them.

Numbers arrive as JSON doubles from protobuf-based clients (``google.protobuf.Value`` has no integer):
`integral_numbers` turns every integral double back into an integer, which is the same JSON number,
so an integer key receives ``40`` rather than ``40.0``. Validating the payload is not done here: the
operation layer validates it once, on assignment, and its refusal names each failing key.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from an_agent.errors import SchemaError
from an_agent.schemas.validate import schema_id_from_media_type


@dataclass(frozen=True)
class StructuredInput:
    """The payload of the message's structured data part, for ``schema_id``."""

    schema_id: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class InboundMessage:
    """What a user message carries: at most one structured input, and its text."""

    structured: StructuredInput | None = None
    text: str = ""
    data: dict[str, Any] | None = None
    """The first data part that declares no schema (a JSON object, integral numbers as integers): keys
    answering an ``input-required`` that asks for payload keys."""
    ignored_parts: tuple[int, ...] = field(default=())
    """Indexes of further structured parts that were ignored (extension section 3)."""
    unsupported: tuple[str, ...] = field(default=())
    """One line per part of a media type the agent does not take, e.g. ``parts[1]: a file part (image/png)``."""


def integral_numbers(value: Any) -> Any:
    """``value`` with every integral float (``40.0``) replaced by the int (``40``), recursively."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [integral_numbers(v) for v in value]
    if isinstance(value, dict):
        return {k: integral_numbers(v) for k, v in value.items()}
    return value


def part_schema(part: Mapping[str, Any]) -> str | None:
    """The schema a part declares (``metadata.mimeType`` or ``mediaType``), or None."""
    metadata = part.get("metadata")
    declared = metadata.get("mimeType") if isinstance(metadata, Mapping) else None
    for mode in (declared, part.get("mediaType")):
        if isinstance(mode, str) and (schema := schema_id_from_media_type(mode)) is not None:
            return schema
    return None


def read_message(message: Mapping[str, Any], declared: Collection[str]) -> InboundMessage:
    """Read ``message`` (ProtoJSON) for an agent that declares the schemas ``declared``.

    Raises `SchemaError` (a structured-input error, nothing to create a task from) when the first
    structured part names an undeclared schema or its data is not an object.
    """
    structured: StructuredInput | None = None
    ignored: list[int] = []
    texts: list[str] = []
    plain: dict[str, Any] | None = None
    unsupported: list[str] = []
    for index, part in enumerate(message.get("parts") or []):
        if not isinstance(part, Mapping):
            continue
        media = _bare_media_type(part.get("mediaType"))
        if "raw" in part or "url" in part:
            unsupported.append(f"parts[{index}]: a file part ({media or 'no media type'})")
            continue
        if isinstance(part.get("text"), str):
            if media not in ("", "text/plain"):
                unsupported.append(f"parts[{index}]: a text part of type {media}")
                continue
            texts.append(part["text"])
            continue
        if "data" in part and media not in ("", "application/json"):
            unsupported.append(f"parts[{index}]: a data part of type {media}")
            continue
        schema = part_schema(part) if "data" in part else None
        if schema is None:
            if plain is None and isinstance(part.get("data"), dict):
                plain = integral_numbers(part["data"])
            continue
        if structured is not None:
            ignored.append(index)
            continue
        if schema not in declared:
            raise SchemaError(
                f"the schema {schema!r} is not declared in this agent's card",
                [f"parts[{index}].metadata.mimeType: declared schemas are {', '.join(sorted(declared))}"],
            )
        data = part["data"]
        if not isinstance(data, dict):
            raise SchemaError(
                f"the {schema} data part must hold a JSON object",
                [f"parts[{index}].data: expected an object of key-value pairs"],
            )
        structured = StructuredInput(schema, integral_numbers(data))
    return InboundMessage(
        structured=structured,
        text="\n\n".join(t for t in texts if t.strip()),
        data=plain,
        ignored_parts=tuple(ignored),
        unsupported=tuple(unsupported),
    )


def _bare_media_type(value: object) -> str:
    """A part's ``mediaType`` without its parameters, lower case ("" when absent)."""
    return value.split(";", 1)[0].strip().lower() if isinstance(value, str) else ""


_OUR_OUTPUT = ("text/plain", "application/json")
"""What results are in (the card's ``defaultOutputModes``): text, or JSON with or without a schema."""


def accepts_our_output(accepted: Collection[str]) -> bool:
    """Whether a client's ``acceptedOutputModes`` (empty: anything) take text/plain or JSON, ranges included
    (``text/*``, ``*/*``); a mode with parameters such as ``application/json;schema=<name>`` counts as its type."""
    if not accepted:
        return True
    for mode in accepted:
        bare = _bare_media_type(mode)
        kind, _, sub = bare.partition("/")
        if bare in _OUR_OUTPUT or bare == "*/*" or (sub == "*" and any(o.startswith(kind + "/") for o in _OUR_OUTPUT)):
            return True
    return False
