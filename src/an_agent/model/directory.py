"""``an-agent-directory``: the summary of an agent's profile that a directory keeps (`DirectoryEntry`)
and a query for agents (`AgentQuery`), with their XML (draft-wang 4.1, 5.1: registration and discovery).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from lxml import etree

from an_agent.model import _xml as x
from an_agent.model.ns import AN_AGENT_DIRECTORY_NS as NS


@dataclass(frozen=True)
class DirectoryEntry:
    """One registered agent: where to reach it and what it can do (YANG grouping ``agent-summary``)."""

    name: str
    address: str | None = None
    port: int | None = None
    a2a_url: str | None = None
    domain: str | None = None
    provider: str | None = None
    skills: tuple[str, ...] = ()
    """Skill names and tags."""
    schemas: tuple[str, ...] = ()
    """schema-ids accepted in data-params."""
    registered_by: str | None = None
    registered_at: float | None = None

    def fill(self, parent: etree._Element, *, state: bool = False) -> etree._Element:
        """Append the summary's leaves to ``parent`` in YANG order (with registered-by/at when ``state``)."""
        x.leaf(parent, "name", self.name, NS)
        x.leaf(parent, "address", self.address, NS)
        x.leaf(parent, "port", self.port, NS)
        x.leaf(parent, "a2a-url", self.a2a_url, NS)
        x.leaf(parent, "domain", self.domain, NS)
        x.leaf(parent, "provider", self.provider, NS)
        x.leaf_list(parent, "skill", self.skills, NS)
        x.leaf_list(parent, "schema", self.schemas, NS)
        if state:
            x.leaf(parent, "registered-by", self.registered_by, NS)
            x.time_leaf(parent, "registered-at", self.registered_at, NS)
        return parent

    @classmethod
    def from_xml(cls, el: etree._Element) -> DirectoryEntry:
        """The entry in ``el`` (a ``register-agent`` input, a ``find-agents`` output ``agent``, or state)."""
        port = x.text(el, "port", NS)
        return cls(
            name=x.required_text(el, "name", NS),
            address=x.text(el, "address", NS),
            port=int(port) if port else None,
            a2a_url=x.text(el, "a2a-url", NS),
            domain=x.text(el, "domain", NS),
            provider=x.text(el, "provider", NS),
            skills=tuple(x.texts(el, "skill", NS)),
            schemas=tuple(e.text or "" for e in el.iterchildren(x.qname("schema", NS))),
            registered_by=x.text(el, "registered-by", NS),
            registered_at=x.time_text(el, "registered-at", NS),
        )

    def to_dict(self) -> dict[str, object]:
        """JSON form for people and scripts (``an-agent agents find --json``)."""
        return {
            "name": self.name,
            "address": self.address,
            "port": self.port,
            "a2a_url": self.a2a_url,
            "domain": self.domain,
            "provider": self.provider,
            "skills": list(self.skills),
            "schemas": list(self.schemas),
        }


@dataclass(frozen=True)
class AgentQuery:
    """``find-agents`` input: every criterion given must match (case-insensitive); None matches all."""

    skill: str | None = None
    domain: str | None = None
    schema: str | None = None
    provider: str | None = None
    names: tuple[str, ...] = field(default=(), compare=False)
    """Not on the wire: a caller's own restriction (its ``talks_to`` policy) applied after the answer."""

    def matches(self, entry: DirectoryEntry) -> bool:
        """Whether ``entry`` fits: a skill name or tag, the domain, a schema-id or its scenario, the provider."""

        def same(a: str | None, b: str | None) -> bool:
            return a is not None and b is not None and a.casefold() == b.casefold()

        if self.skill is not None and not any(same(self.skill, s) for s in entry.skills):
            return False
        if self.domain is not None and not same(self.domain, entry.domain):
            return False
        if self.schema is not None and not any(
            same(self.schema, s) or same(self.schema, _scenario(s)) for s in entry.schemas
        ):
            return False
        return self.provider is None or same(self.provider, entry.provider)

    def describe(self) -> str:
        """The criteria in words (for a failure reason)."""
        said = [
            f"{k} {v!r}"
            for k, v in (
                ("skill", self.skill),
                ("domain", self.domain),
                ("schema", self.schema),
                ("provider", self.provider),
            )
            if v
        ]
        return ", ".join(said) or "any agent"

    def to_xml(self) -> etree._Element:
        rpc = x.root("find-agents", NS)
        for name, value in (
            ("skill", self.skill),
            ("domain", self.domain),
            ("schema", self.schema),
            ("provider", self.provider),
        ):
            x.leaf(rpc, name, value, NS)
        return rpc

    @classmethod
    def from_xml(cls, el: etree._Element) -> AgentQuery:
        return cls(
            x.text(el, "skill", NS), x.text(el, "domain", NS), x.text(el, "schema", NS), x.text(el, "provider", NS)
        )


def _scenario(schema_id: str) -> str:
    head, sep, tail = schema_id.rpartition("_v")
    return head if sep and tail.isdigit() else schema_id


def entries_from(parent: etree._Element, tag: str) -> list[DirectoryEntry]:
    """The entries of the ``tag`` children of ``parent`` (``agent`` of a reply, ``registered-agent`` of state)."""
    return [DirectoryEntry.from_xml(e) for e in parent.iterchildren(x.qname(tag, NS))]


def entries_to(parent: etree._Element, tag: str, entries: Iterable[DirectoryEntry], *, state: bool = False) -> None:
    for entry in entries:
        entry.fill(x.child(parent, tag, NS), state=state)
