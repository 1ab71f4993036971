"""Structured payloads on the wire: data-params ``application/json;schema=<id>`` and prompt sections.

A task carries its payload as a data-param (DESIGN.md, "Structured payloads"); a ``task-negotiate``
carries the proposed payload as JSON in the prompt's ``## environmental information`` section, so the
receiver checks feasibility of exactly what would be assigned, and a counter-proposal is a prompt of
the same shape. Both are validated against the scenario templates of `an_agent.schemas`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any

from an_agent.errors import SchemaError
from an_agent.model import DataParam, DataType, Task, build_prompt, parse_prompt
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import OTHER_KEY
from an_agent.schemas.validate import (
    ValidatedPayload,
    media_type,
    parse_envelope,
    schema_id_from_media_type,
    validate_payload,
)


@lru_cache(maxsize=1)
def templates() -> TemplateRegistry:
    """The shipped scenario templates (read once)."""
    return TemplateRegistry.default()


def envelope(schema_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """``{"schema_id", "payload"}``, checked against the template (a bug of ours raises `SchemaError`)."""
    value = {"schema_id": schema_id, "payload": payload}
    validate_payload(templates().get(schema_id), value)
    return value


def validate(value: Any, evolved_keys: bool = False) -> ValidatedPayload:
    """Validate an envelope against the base template its ``schema_id`` names; `SchemaError` on any problem.

    With ``evolved_keys`` (the agent's schema service has validated the payload against its evolved
    templates already) keys the base template lacks are accepted: left out of ``values`` (behaviours act
    on base keys only, and their counter-proposals must stay valid for any peer) and named in ``warnings``.
    """
    if not isinstance(value, dict) or not isinstance(value.get("schema_id"), str):
        raise SchemaError("not a structured payload", ['(data): expected {"schema_id": ..., "payload": {...}}'])
    template = templates().get(value["schema_id"])
    payload = value.get("payload")
    if not evolved_keys or not isinstance(payload, dict):
        return validate_payload(template, value)
    extra = sorted(k for k in payload if k != OTHER_KEY and template.key(k) is None)
    base = {k: v for k, v in payload.items() if k not in extra}
    validated = validate_payload(template, {**value, "payload": base})
    return replace(validated, warnings=validated.warnings + _not_acted_upon(template.schema_id, extra))


def _not_acted_upon(schema_id: str, keys: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"{k}: not a key of the base {schema_id}; accepted, not acted upon" for k in keys)


def base_view(validated: ValidatedPayload) -> ValidatedPayload:
    """``validated`` restricted to the keys of the base template its ``schema_id`` names.

    The agent's schema service may accept evolved keys; behaviours act on base keys only (their
    counter-proposals must stay valid for any peer), so the others are dropped from ``values`` and
    named in ``warnings``, as `validate` does with ``evolved_keys``.
    """
    if validated.schema_id not in templates().schema_ids:  # an operator's or a gateway's template: as admitted
        return validated
    template = templates().get(validated.schema_id)
    extra = sorted(k for k in validated.values if template.key(k) is None)
    if not extra:
        return validated
    values = {k: v for k, v in validated.values.items() if k not in extra}
    return replace(validated, values=values, warnings=validated.warnings + _not_acted_upon(template.schema_id, extra))


def data_param(param_id: str, value: dict[str, Any], description: str) -> DataParam:
    """The data-param carrying an envelope (see `envelope`)."""
    text = json.dumps(value, sort_keys=True)
    return DataParam(
        id=param_id,
        data_type=DataType.TEXT,
        description=description,
        data_size=str(len(text.encode("utf-8"))),
        format=media_type(value["schema_id"]),
        data=text,
    )


def task_payload(
    task: Task, lookup: Callable[[Sequence[str]], list[DataParam]], evolved_keys: bool = False
) -> ValidatedPayload | None:
    """The validated structured payload of ``task`` (from its ``msg-data``), or None when it carries none.

    ``evolved_keys`` as in `validate`.
    """
    for param in lookup(task.msg_data):
        schema_id = schema_id_from_media_type(param.format or "")
        if schema_id is None or param.data is None:
            continue
        value = parse_envelope(param.data)
        if isinstance(value, dict) and value.get("schema_id") != schema_id:
            raise SchemaError(
                f"data-param {param.id}: format names {schema_id} but the payload says {value.get('schema_id')!r}",
                [f"schema_id: expected {schema_id!r}"],
            )
        return validate(value, evolved_keys)
    return None


def proposal(target: str, description: str, value: dict[str, Any]) -> str:
    """A prompt proposing a task with its payload (FEASIBILITY content, counter-proposals)."""
    environment = json.dumps(value, sort_keys=True)
    return build_prompt(target_object=target, task_description=description, environment=environment)


def prompt_payload(content: str) -> dict[str, Any] | None:
    """The envelope in a prompt's environmental information, or None when there is none."""
    env = parse_prompt(content).environment
    if not env:
        return None
    try:
        value = json.loads(env)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) and "schema_id" in value else None


def other_text(payload: ValidatedPayload) -> str:
    """The payload's ``other`` fragments as one lower-case text (for words like 'cancel')."""
    return " ".join(f.lower() for f in payload.other.fragments) if payload.other else ""
