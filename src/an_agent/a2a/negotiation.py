"""Choosing the schema for a scenario from an A2A agent card, and checking a payload against it, client side.

The card's root ``schemas`` (the input/output-schemas extension) name each
schema ``<scenario>_v<N>``; a client that supports some versions of a
scenario takes the highest one both sides have, and validates its payload
against that JSON Schema 2020-12 before sending anything. Pure functions of
the card and the payload, so they live apart from the client's transport
(`an_agent.a2a.client.A2AAgentClient`, which caches the choice per card).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from an_agent.a2a.inbound import integral_numbers
from an_agent.errors import SchemaError
from an_agent.schemas.registry import parse_version

_VERSION = re.compile(r"^(.*)_v(\d+)$")


@dataclass(frozen=True)
class NegotiatedSchema:
    """The schema chosen for a scenario: its id, its JSON Schema from the card, and what the agent offers."""

    schema_id: str
    scenario: str
    json_schema: dict[str, Any]
    offered: tuple[str, ...]


def scenario_version(name: str) -> tuple[str, int | None]:
    """``fault_diagnosis_v2`` -> (``fault_diagnosis``, 2); a bare scenario name has no version."""
    match = _VERSION.match(name)
    return (match.group(1), int(match.group(2))) if match else (name, None)


def wanted_versions(scenario: str, supported_versions: Collection[str]) -> tuple[str, tuple[int, ...]]:
    """The scenario's name and the versions asked for (sorted; empty: any): what a negotiation depends on.

    ``supported_versions`` are 2, v2 or schema_ids; without them a ``scenario``
    that names a version (a schema_id) asks for that one.
    """
    wanted = tuple(sorted({parse_version(v) for v in supported_versions}))
    name, pinned = scenario_version(scenario)
    if pinned is not None and not wanted:
        wanted = (pinned,)
    return name, wanted


def choose_schema(
    schemas: Mapping[str, dict[str, Any]], agent: object, scenario: str, name: str, wanted: tuple[int, ...]
) -> NegotiatedSchema:
    """The highest version of scenario ``name`` in ``schemas`` (the card's) among ``wanted`` (empty: any).

    ``agent`` names the agent and ``scenario`` what was asked, in the
    `SchemaError` raised when the agent has no such scenario or no common
    version, naming what it has.
    """
    offered = sorted((scenario_version(s)[1] or 0, s) for s in schemas if scenario_version(s)[0] == name)
    if not offered:
        raise SchemaError(
            f"the agent {agent} declares no schema for {scenario!r}",
            [f"schemas: the agent declares {', '.join(sorted(schemas)) or 'none'}"],
        )
    common = [(v, s) for v, s in offered if not wanted or v in wanted]
    if not common:
        raise SchemaError(
            f"no common version of scenario {name!r}: the client supports " + ", ".join(f"v{v}" for v in wanted),
            [f"schemas: the agent has {', '.join(s for _, s in offered)}"],
        )
    schema_id = common[-1][1]
    return NegotiatedSchema(schema_id, name, schemas[schema_id], tuple(s for _, s in offered))


def validate_payload(negotiated: NegotiatedSchema, payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` checked against the negotiated JSON Schema; `SchemaError` names each failing key."""
    value = integral_numbers(dict(payload))
    problems = []
    validator = Draft202012Validator(negotiated.json_schema)
    for error in sorted(validator.iter_errors(value), key=lambda e: [str(p) for p in e.absolute_path]):
        where = ".".join(str(p) for p in error.absolute_path) or "payload"
        problems.append(f"{where}: {error.message}")
    if problems:
        raise SchemaError(f"the payload does not fit {negotiated.schema_id} (checked before sending)", problems)
    out: dict[str, Any] = value
    return out
