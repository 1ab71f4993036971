"""A topology agent whose work an A2A agent does (``a2a_upstream``): its login, card, profile and templates.

The lab reads the upstream's agent card when it builds the agent (`upstream_profile`) and when it serves
it (`served_templates`): the card's JSON Schemas (input/output-schemas extension) become templates the
agent serves over ``get-schema-template`` and its A2A card, as under ``an-agent serve --a2a-upstream``.
Each problem is a `ConfigError` naming the agent, so a lab with an upstream that is down or declares a
schema the gateway cannot serve refuses to start and says which agent.
"""

from __future__ import annotations

from pathlib import Path

from an_agent.a2a.client import A2AAgentClient
from an_agent.agents.gateway import Auth, card_profile, card_templates, open_upstream, write_templates
from an_agent.errors import ConfigError
from an_agent.lab.services import read_login, read_token
from an_agent.lab.spec import AgentSpec
from an_agent.model import AgentProfile

UPSTREAM_TEMPLATES = "upstream-templates"
"""The directory of an agent's state dir that holds the templates projected from its upstream's card."""


def upstream_auth(spec: AgentSpec) -> Auth:
    """The gateway's login on its upstream (``a2a_upstream_auth``): Basic, a bearer token, or none."""
    auth = spec.a2a_upstream_auth
    if auth is None:
        return None
    label = f"a2a_upstream_auth {auth.kind}"
    return read_login(auth.file, label) if auth.kind == "basic" else read_token(auth.file, label)


def open_spec_upstream(spec: AgentSpec) -> A2AAgentClient:
    """A client of ``spec``'s upstream with its card read; `ConfigError` naming the agent when it cannot be."""
    assert spec.a2a_upstream is not None
    try:
        return open_upstream(spec.a2a_upstream, spec.a2a_upstream_trust, upstream_auth(spec))
    except ConfigError as exc:
        raise ConfigError(f"agent {spec.name}: {exc}") from None


def upstream_profile(spec: AgentSpec) -> AgentProfile:
    """The profile of a topology agent whose work an A2A agent does: from its card (name and role the topology's)."""
    client = open_spec_upstream(spec)
    try:
        return card_profile(client.card, name=spec.name, role=spec.role)
    finally:
        client.close()


def served_templates(spec: AgentSpec, state_dir: Path) -> list[Path]:
    """The template directories agent ``spec`` serves beside the shipped ones: its ``templates`` and, for an
    ``a2a_upstream``, the card's schemas projected to templates in ``state_dir`` (those not shipped)."""
    directories = list(spec.templates)
    if not spec.a2a_upstream:
        return directories
    from an_agent.schemas.registry import TemplateRegistry

    client = open_spec_upstream(spec)
    try:
        try:
            templates = card_templates(client.card, spec.a2a_upstream)
        except ConfigError as exc:
            raise ConfigError(f"agent {spec.name}: {exc}") from None
    finally:
        client.close()
    shipped = {t.schema_id for t in TemplateRegistry.default().templates()}
    directory = write_templates(templates, state_dir / UPSTREAM_TEMPLATES, shipped)
    return directories + ([directory] if any(directory.glob("*.json")) else [])
