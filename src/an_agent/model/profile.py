"""The agent profile: ``/irtf-agent:agent`` (config false), draft-wang-nmrg-magent-im section 5.1.

A profile file is the RFC 7951 JSON of that container,
``{"irtf-agent:agent": {...}}``, or a YAML document of the same shape.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from an_agent.errors import ConfigError, RpcError
from an_agent.model import _xml as x
from an_agent.model._dict import DictReader


@dataclass
class Skill:
    """One ``skills/skill`` entry (key ``skill-name``)."""

    name: str
    description: str | None = None
    tags: list[str] = field(default_factory=list)
    input_modes: list[str] = field(default_factory=list)
    output_modes: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def to_xml(self) -> etree._Element:
        el = etree.Element(x.qname("skill"))
        x.leaf(el, "skill-name", self.name)
        x.leaf(el, "skill-description", self.description)
        x.leaf_list(el, "skill-tags", self.tags)
        x.leaf_list(el, "input-modes", self.input_modes)
        x.leaf_list(el, "output-modes", self.output_modes)
        x.leaf_list(el, "examples", self.examples)
        return el

    @classmethod
    def from_xml(cls, el: etree._Element) -> Skill:
        return cls(
            name=x.required_text(el, "skill-name"),
            description=x.text(el, "skill-description"),
            tags=x.texts(el, "skill-tags"),
            input_modes=x.texts(el, "input-modes"),
            output_modes=x.texts(el, "output-modes"),
            examples=x.texts(el, "examples"),
        )

    def to_dict(self) -> dict[str, Any]:
        return _drop_empty(
            {
                "skill-name": self.name,
                "skill-description": self.description,
                "skill-tags": self.tags,
                "input-modes": self.input_modes,
                "output-modes": self.output_modes,
                "examples": self.examples,
            }
        )

    @classmethod
    def from_dict(cls, value: object, where: str) -> Skill:
        r = DictReader(value, where, _SKILL_MEMBERS)
        return cls(
            name=r.required_str("skill-name"),
            description=r.string("skill-description"),
            tags=r.str_list("skill-tags"),
            input_modes=r.str_list("input-modes"),
            output_modes=r.str_list("output-modes"),
            examples=r.str_list("examples"),
        )


_SKILL_MEMBERS = frozenset({"skill-name", "skill-description", "skill-tags", "input-modes", "output-modes", "examples"})


@dataclass
class AuthMethod:
    """One ``authentication/authentication-methods`` entry (key ``accessinfo-id``)."""

    accessinfo_id: str
    scheme: str | None = None
    jwtinfo: str | None = None
    oauth: str | None = None

    def to_xml(self) -> etree._Element:
        el = etree.Element(x.qname("authentication-methods"))
        x.leaf(el, "accessinfo-id", self.accessinfo_id)
        x.leaf(el, "scheme", self.scheme)
        x.leaf(el, "jwtinfo", self.jwtinfo)
        x.leaf(el, "oauth", self.oauth)
        return el

    @classmethod
    def from_xml(cls, el: etree._Element) -> AuthMethod:
        return cls(
            accessinfo_id=x.required_text(el, "accessinfo-id"),
            scheme=x.text(el, "scheme"),
            jwtinfo=x.text(el, "jwtinfo"),
            oauth=x.text(el, "oauth"),
        )

    def to_dict(self) -> dict[str, Any]:
        return _drop_empty(
            {"accessinfo-id": self.accessinfo_id, "scheme": self.scheme, "jwtinfo": self.jwtinfo, "oauth": self.oauth}
        )

    @classmethod
    def from_dict(cls, value: object, where: str) -> AuthMethod:
        r = DictReader(value, where, frozenset({"accessinfo-id", "scheme", "jwtinfo", "oauth"}))
        return cls(
            accessinfo_id=r.required_str("accessinfo-id"),
            scheme=r.string("scheme"),
            jwtinfo=r.string("jwtinfo"),
            oauth=r.string("oauth"),
        )


@dataclass
class Capability:
    """``capability``: which interaction mechanisms the agent supports."""

    streaming: bool | None = None
    push_notifications: bool | None = None
    negotiate: list[str] = field(default_factory=list)
    """Supported negotiation types, e.g. ``acp-task-feasibility-negotiation-v1.0``."""

    def is_empty(self) -> bool:
        return self.streaming is None and self.push_notifications is None and not self.negotiate


@dataclass
class AgentProfile:
    """``/irtf-agent:agent``: who the agent is and what it can do (read-only on the wire).

    ``name``, ``description``, ``version`` and ``provider`` are mandatory in the
    YANG; the rest is optional. Lists keep their order.
    """

    name: str
    description: str
    version: str
    provider: str
    alias: str | None = None
    type: str | None = None
    skills: list[Skill] = field(default_factory=list)
    domain: str | None = None
    capability: Capability = field(default_factory=Capability)
    management_object: str | None = None
    auth_methods: list[AuthMethod] = field(default_factory=list)

    # ---- XML --------------------------------------------------------------------

    def to_xml(self) -> etree._Element:
        """The ``<agent xmlns="urn:ietf:params:xml:ns:yang:irtf-agent">`` element, children in YANG order."""
        el = x.root("agent")
        x.leaf(el, "name", self.name)
        x.leaf(el, "alias", self.alias)
        x.leaf(el, "description", self.description)
        x.leaf(el, "type", self.type)
        if self.skills:
            skills = x.child(el, "skills")
            for skill in self.skills:
                skills.append(skill.to_xml())
        x.leaf(el, "version", self.version)
        x.leaf(el, "provider", self.provider)
        x.leaf(el, "domain", self.domain)
        if not self.capability.is_empty():
            cap = x.child(el, "capability")
            x.leaf(cap, "streaming", self.capability.streaming)
            x.leaf(cap, "push-notifications", self.capability.push_notifications)
            x.leaf_list(cap, "negotiate", self.capability.negotiate)
        x.leaf(el, "management-object", self.management_object)
        if self.auth_methods:
            auth = x.child(el, "authentication")
            for method in self.auth_methods:
                auth.append(method.to_xml())
        return el

    @classmethod
    def from_xml(cls, el: etree._Element) -> AgentProfile:
        """Parse ``<agent>``, or a ``<data>`` reply that contains it.

        Raises RpcError (missing-element) when a mandatory leaf or the agent itself is absent.
        """
        agent = x.descend(el, "agent")
        if agent is None:
            raise RpcError.missing_element("agent", "the reply holds no /irtf-agent:agent", error_type="application")
        cap = x.find(agent, "capability")
        skills = x.find(agent, "skills")
        auth = x.find(agent, "authentication")
        return cls(
            name=x.required_text(agent, "name"),
            alias=x.text(agent, "alias"),
            description=x.required_text(agent, "description"),
            type=x.text(agent, "type"),
            skills=[] if skills is None else [Skill.from_xml(s) for s in x.children(skills, "skill")],
            version=x.required_text(agent, "version"),
            provider=x.required_text(agent, "provider"),
            domain=x.text(agent, "domain"),
            capability=Capability()
            if cap is None
            else Capability(
                streaming=x.bool_text(cap, "streaming"),
                push_notifications=x.bool_text(cap, "push-notifications"),
                negotiate=x.texts(cap, "negotiate"),
            ),
            management_object=x.text(agent, "management-object"),
            auth_methods=[]
            if auth is None
            else [AuthMethod.from_xml(m) for m in x.children(auth, "authentication-methods")],
        )

    # ---- RFC 7951 JSON / YAML -----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The RFC 7951 JSON object ``{"irtf-agent:agent": {...}}`` (what `from_dict` reads)."""
        capability = _drop_empty(
            {
                "streaming": self.capability.streaming,
                "push-notifications": self.capability.push_notifications,
                "negotiate": self.capability.negotiate,
            }
        )
        body = _drop_empty(
            {
                "name": self.name,
                "alias": self.alias,
                "description": self.description,
                "type": self.type,
                "skills": {"skill": [s.to_dict() for s in self.skills]} if self.skills else None,
                "version": self.version,
                "provider": self.provider,
                "domain": self.domain,
                "capability": capability or None,
                "management-object": self.management_object,
                "authentication": {"authentication-methods": [m.to_dict() for m in self.auth_methods]}
                if self.auth_methods
                else None,
            }
        )
        return {"irtf-agent:agent": body}

    @classmethod
    def from_dict(cls, document: object, where: str = "profile") -> AgentProfile:
        """Read ``{"irtf-agent:agent": {...}}`` (JSON or YAML loaded); ``"agent"`` without prefix is accepted.

        Raises ConfigError naming the offending member (unknown, missing, wrong type).
        """
        top = DictReader(document, where, frozenset({"agent"}))
        found = top.member("agent")
        if found is None:
            raise ConfigError(f"{where}: expected a top-level 'irtf-agent:agent' object")
        r = DictReader(found[1], found[0], _AGENT_MEMBERS)
        skills: list[Skill] = []
        if (container := r.member("skills")) is not None:
            sr = DictReader(container[1], container[0], frozenset({"skill"}))
            skills = [Skill.from_dict(v, p) for p, v in sr.objects("skill")]
        capability = Capability()
        if (container := r.member("capability")) is not None:
            cr = DictReader(container[1], container[0], frozenset({"streaming", "push-notifications", "negotiate"}))
            capability = Capability(cr.boolean("streaming"), cr.boolean("push-notifications"), cr.str_list("negotiate"))
        auth: list[AuthMethod] = []
        if (container := r.member("authentication")) is not None:
            ar = DictReader(container[1], container[0], frozenset({"authentication-methods"}))
            auth = [AuthMethod.from_dict(v, p) for p, v in ar.objects("authentication-methods")]
        profile = cls(
            name=r.required_str("name"),
            alias=r.string("alias"),
            description=r.required_str("description"),
            type=r.string("type"),
            skills=skills,
            version=r.required_str("version"),
            provider=r.required_str("provider"),
            domain=r.string("domain"),
            capability=capability,
            management_object=r.string("management-object"),
            auth_methods=auth,
        )
        _check_unique(where, "skill-name", [s.name for s in skills])
        _check_unique(where, "accessinfo-id", [m.accessinfo_id for m in auth])
        return profile

    @classmethod
    def from_json(cls, text: str, where: str = "profile") -> AgentProfile:
        """Parse an RFC 7951 JSON profile; raises ConfigError on bad JSON or content."""
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON: {exc}") from None
        return cls.from_dict(document, where)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def load(cls, path: Path) -> AgentProfile:
        """Read a profile file: ``.json``, or ``.yaml``/``.yml`` of the same shape."""
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read profile {path}: {exc.strerror}") from None
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml  # only profile files in YAML need it

            try:
                document = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise ConfigError(f"{path}: not valid YAML: {exc}") from None
            return cls.from_dict(document, str(path))
        return cls.from_json(text, str(path))


PROFILE_MEMBERS: tuple[str, ...] = (
    "name",
    "alias",
    "description",
    "type",
    "skills",
    "version",
    "provider",
    "domain",
    "capability",
    "management-object",
    "authentication",
)
"""The draft's nodes of /irtf-agent:agent, in YANG order (augmentations such as schema-templates excluded)."""

_AGENT_MEMBERS = frozenset(PROFILE_MEMBERS)


def _drop_empty(members: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in members.items() if v is not None and v != [] and v != {}}


def _check_unique(where: str, key: str, values: list[str]) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ConfigError(f"{where}: duplicate {key} {value!r} (list keys must be unique)")
        seen.add(value)
