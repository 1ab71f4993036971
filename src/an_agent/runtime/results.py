"""Results structured by a declared response schema (draft-zhou 3.2 step 5).

A skill declares what it answers in its ``output-modes``
(``application/json;schema=<response schema>``, the A2A object-schemas
convention). When a task's structured payload was of a schema that skill
accepts (its ``input-modes``), a finished JSON result is labelled with that
response schema, on both faces, instead of plain ``application/json``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

from an_agent.errors import AnAgentError, SchemaError
from an_agent.model import AgentProfile, TaskResult
from an_agent.runtime.schemas import SchemaService
from an_agent.schemas import schema_id_from_media_type
from an_agent.schemas.validate import ValidatedPayload

log = logging.getLogger(__name__)


def response_schema(profile: AgentProfile, input_schema: str) -> str | None:
    """The schema a skill declares in its output-modes, for the first skill accepting ``input_schema``."""
    wanted = f"application/json;schema={input_schema}"
    for skill in profile.skills:
        if wanted not in skill.input_modes:
            continue
        for mode in skill.output_modes:
            schema = schema_id_from_media_type(mode)
            if schema is not None:
                return schema
    return None


def check_result(
    profile: AgentProfile, schemas: SchemaService | None, payload: ValidatedPayload | None, data: dict[str, Any]
) -> None:
    """Raise `SchemaError` when ``data`` is not what the skill that took ``payload`` declares it answers.

    The declared response schema is `response_schema`'s; nothing is checked when the task carries no
    structured payload, the skill declares none, or the agent serves no template of it.
    """
    if payload is None or schemas is None:
        return
    schema = response_schema(profile, payload.schema_id)
    if schema is None or schema not in {t.schema_id for t in schemas.engine.registry.templates()}:
        return
    try:
        schemas.engine.validate(profile.name, {"schema_id": schema, "payload": data})
    except SchemaError as exc:
        raise SchemaError(
            f"the result is not a valid {schema} (the skill's declared response): {exc}", exc.problems
        ) from None


def label_result(
    profile: AgentProfile, schemas: SchemaService, payload: ValidatedPayload | None, result: TaskResult
) -> TaskResult:
    """``result`` with format ``application/json;schema=<response schema>`` when that applies (module docstring).

    The result data must be a JSON object; when the agent has a template of
    the response schema it must also validate against it, else the result
    stays plain ``application/json`` and a warning is logged (the behaviour
    answered something else than its skill declares).
    """
    if result.format != "application/json" or payload is None or not result.data:
        return result
    schema = response_schema(profile, payload.schema_id)
    if schema is None:
        return result
    try:
        data = json.loads(result.data)
    except ValueError:
        return result
    if not isinstance(data, dict):
        return result
    if schema in {t.schema_id for t in schemas.engine.registry.templates()}:
        try:
            schemas.engine.validate(profile.name, {"schema_id": schema, "payload": data})
        except AnAgentError as exc:
            log.warning("result is not a valid %s payload, left as application/json: %s", schema, exc)
            return result
    return replace(result, format=f"application/json;schema={schema}")
