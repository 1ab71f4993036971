"""The A2A v1 agent card, generated from the YANG profile and the schema templates (never written by hand).

`build_card` returns the card as ProtoJSON (camelCase, the form served at
``/.well-known/agent-card.json``) plus the root ``schemas`` object of the input/output-schemas
extension (``https://raw.githubusercontent.com/facultyai/a2a-extension-object-schemas/refs/heads/main/v1``),
which the protobuf ``AgentCard`` has no field for; so the card is a plain JSON object here and the
SDK's card route is not used.

What comes from where:

- ``name``/``description``/``version`` = the profile's agent-name, description, version;
  ``provider`` only when a provider URL is given (A2A requires one; the profile has none);
- a skill per profile skill: ``id``/``name`` = skill-name, its description, tags and examples; input
  modes ``text/plain`` first, then ``application/json;schema=<schema_id>`` for each schema mode of the
  profile that names a template the agent serves (by schema_id or scenario); output modes likewise,
  where a schema mode is kept only when such a result schema is served. A mode naming a schema the
  agent does not serve is dropped, and so is an input mode other than text and JSON (the face refuses
  file parts), so the card never advertises what the agent refuses; the draft's short mode ``text`` is
  written ``text/plain``. Each accepted input schema adds one JSON example;
- ``schemas`` (root) and ``capabilities.extensions[0].params.schemas``: one JSON Schema 2020-12 per
  template (`an_agent.schemas.jsonschema`);
- ``supportedInterfaces``: the JSON-RPC URL first (preferred), HTTP+JSON when served (``/rest``), then the NETCONF
  face as a custom binding (A2A spec 5.8) identified by `NETCONF_BINDING`;
- ``capabilities.streaming``/``pushNotifications`` and ``securitySchemes`` state what the face
  implements (`CardOptions`), never what the profile's authentication list merely names.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from an_agent.model import AgentProfile, Skill
from an_agent.runtime.text_input import template_index
from an_agent.schemas.jsonschema import example_payloads, template_json_schema
from an_agent.schemas.template import Template
from an_agent.schemas.validate import media_type, schema_id_from_media_type

SCHEMAS_EXTENSION = "https://raw.githubusercontent.com/facultyai/a2a-extension-object-schemas/refs/heads/main/v1"
NETCONF_BINDING = "urn:ietf:params:netconf:base:1.1"
"""``protocolBinding`` of the NETCONF face: the RFC 6241 base capability URN (a URI, as spec 5.8 asks)."""
A2A_PROTOCOL_VERSION = "1.0"
TEXT = "text/plain"
JSON = "application/json"
_SHORT_MODES = {"text": TEXT, "json": JSON}


@dataclass(frozen=True)
class CardOptions:
    """Where the faces listen and what they implement; the card states exactly this."""

    jsonrpc_url: str
    http_json_url: str | None = None
    netconf_url: str | None = None  # e.g. ssh://127.0.0.1:8830
    streaming: bool = True
    push_notifications: bool = False
    basic_auth: bool = False
    bearer_auth: bool = False
    """Bearer tokens of the users file (``tokens:``) are accepted: they log in as their user."""
    provider_url: str | None = None


def build_card(profile: AgentProfile, templates: Sequence[Template], options: CardOptions) -> dict[str, Any]:
    """The agent card (module docstring). ``templates`` are the ones the agent serves, patches applied."""
    by_name = template_index(templates)
    schemas = {t.schema_id: template_json_schema(t) for t in templates}
    card: dict[str, Any] = {
        "name": profile.name,
        "description": profile.description,
        "supportedInterfaces": _interfaces(options),
        "version": profile.version,
        "capabilities": {
            "streaming": options.streaming,
            "pushNotifications": options.push_notifications,
            "extensions": [
                {
                    "uri": SCHEMAS_EXTENSION,
                    "description": "Structured task payloads: send a data part whose metadata mimeType is "
                    "application/json;schema=<name> with an object valid against schemas[<name>] "
                    "(draft-zhou-structured-data-schema-interaction templates).",
                    "required": False,
                    "params": {"schemas": schemas},
                }
            ],
        },
        "defaultInputModes": [TEXT, *(media_type(t.schema_id) for t in templates)],
        "defaultOutputModes": [TEXT, JSON],
        "skills": [_skill(profile, skill, by_name) for skill in profile.skills],
        "schemas": schemas,
    }
    if options.provider_url:
        card["provider"] = {"organization": profile.provider, "url": options.provider_url}
    schemes = _security_schemes(options)
    if schemes:
        card["securitySchemes"] = schemes
        # Alternatives, as in OpenAPI: any one requirement of the list satisfies it.
        card["securityRequirements"] = [{"schemes": {name: {"list": []}}} for name in schemes]
    return card


def _security_schemes(options: CardOptions) -> dict[str, Any]:
    """The HTTP schemes the face accepts (draft-zhou 7: protection in transit; both map to the same users)."""
    schemes: dict[str, Any] = {}
    if options.basic_auth:
        schemes["basic"] = {
            "httpAuthSecurityScheme": {
                "scheme": "Basic",
                "description": "The agent's NETCONF users and passwords (same access rules as NETCONF).",
            }
        }
    if options.bearer_auth:
        schemes["bearer"] = {
            "httpAuthSecurityScheme": {
                "scheme": "Bearer",
                "bearerFormat": "opaque (an-agent users token)",
                "description": "A token of a user of the agent (users file 'tokens'): the same user, groups and "
                "NACM rules as that user's password.",
            }
        }
    return schemes


def _interfaces(options: CardOptions) -> list[dict[str, str]]:
    out = [{"url": options.jsonrpc_url, "protocolBinding": "JSONRPC", "protocolVersion": A2A_PROTOCOL_VERSION}]
    if options.http_json_url:
        out.append(
            {"url": options.http_json_url, "protocolBinding": "HTTP+JSON", "protocolVersion": A2A_PROTOCOL_VERSION}
        )
    if options.netconf_url:
        # The same tasks over NETCONF (draft-wang-nmrg-magent-im); the version is that of the A2A task
        # model this binding shares (task ids and states map one to one).
        out.append(
            {"url": options.netconf_url, "protocolBinding": NETCONF_BINDING, "protocolVersion": A2A_PROTOCOL_VERSION}
        )
    return out


def _modes(modes: Sequence[str], by_name: dict[str, Template]) -> tuple[list[str], list[Template]]:
    """Card modes for profile modes, and the templates they name; unknown schema modes are dropped."""
    out: list[str] = []
    named: list[Template] = []
    for mode in modes:
        schema = schema_id_from_media_type(mode)
        if schema is not None:
            template = by_name.get(schema)
            if template is None:
                continue
            named.append(template)
            mode = media_type(template.schema_id)
        mode = _SHORT_MODES.get(mode, mode)
        if mode not in out:
            out.append(mode)
    return out, named


def _skill(profile: AgentProfile, skill: Skill, by_name: dict[str, Template]) -> dict[str, Any]:
    inputs, accepted = _modes(skill.input_modes, by_name)
    outputs, _ = _modes(skill.output_modes, by_name)
    # The face takes text and JSON data parts only (`an_agent.a2a.inbound`): another mode the profile
    # names (a file type) would be refused with ContentTypeNotSupportedError, so the card does not claim it.
    inputs = [TEXT, *(m for m in inputs if m != TEXT and m.split(";", 1)[0] == JSON)]
    examples = list(skill.examples)
    examples += [json.dumps(example_payloads(t)[0], sort_keys=True) for t in accepted]
    out: dict[str, Any] = {
        "id": skill.name,
        "name": skill.name,
        "description": skill.description or profile.description,
        "tags": skill.tags or [t for t in (profile.domain, profile.type) if t] or [skill.name],
    }
    if examples:  # empty repeated fields are omitted in ProtoJSON (spec 8.4.1)
        out["examples"] = examples
    out["inputModes"] = inputs
    out["outputModes"] = outputs or [TEXT, JSON]
    return out
