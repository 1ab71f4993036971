"""The directory role's registry (module ``an-agent-directory``): who is registered, register, deregister, find.

`Directory` keeps the entries in memory and in ``directory.json`` in the state directory (mode 0600,
written whole on each change), so a directory that restarts still knows the agents that did not stop.
Authorization is the operation layer's (`Operations.register_agent` and friends): NACM exec on the RPC,
then an entry may only be written by a principal that may speak for that agent name, or an admin.
`entry_of_profile` is what an agent registers for itself.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path

from lxml import etree

from an_agent._files import write_private
from an_agent._lxml import default_ns
from an_agent.errors import ConfigError, RpcError
from an_agent.model import AN_AGENT_DIRECTORY_NS, AgentProfile
from an_agent.model.directory import AgentQuery, DirectoryEntry, entries_to
from an_agent.runtime.principal import Principal
from an_agent.schemas.validate import schema_id_from_media_type

FILE = "directory.json"

Observer = Callable[[str, str, dict[str, object]], None]
"""Told of each registration, removal and query a directory answered: ``(kind, text, details)`` with kind
``registered``, ``deregistered`` or ``find`` (a lab journals them: `Directory.observe`)."""


def entry_of_profile(profile: AgentProfile, address: str, port: int, a2a_url: str | None = None) -> DirectoryEntry:
    """The entry an agent registers for itself: its profile's skills (names and tags) and schemas."""
    skills = dict.fromkeys(s for skill in profile.skills for s in (skill.name, *skill.tags))
    schemas = dict.fromkeys(
        sid for skill in profile.skills for mode in skill.input_modes if (sid := schema_id_from_media_type(mode))
    )
    return DirectoryEntry(
        profile.name, address, port, a2a_url, profile.domain, profile.provider, tuple(skills), tuple(schemas)
    )


class Directory:
    """Registered agents by name (module docstring). Thread-safe."""

    def __init__(self, state_dir: Path, now: Callable[[], float]) -> None:
        self._path = state_dir / FILE
        self._now = now
        self._lock = threading.Lock()
        self._entries: dict[str, DirectoryEntry] = {}
        self._observers: list[Observer] = []
        self.version = 0
        """Bumped after each change (part of `Operations.data_version`)."""
        if self._path.exists():
            try:
                for item in json.loads(self._path.read_text(encoding="utf-8")):
                    entry = DirectoryEntry(
                        **{**item, "skills": tuple(item["skills"]), "schemas": tuple(item["schemas"])}
                    )
                    self._entries[entry.name] = entry
            except (OSError, ValueError, TypeError, KeyError) as exc:
                raise ConfigError(
                    f"directory state {self._path} is unreadable ({exc}); delete it to start empty"
                ) from None

    def observe(self, observer: Observer) -> None:
        """Call ``observer`` after each registration, removal and query answered through the RPCs."""
        self._observers.append(observer)

    def announce(self, kind: str, text: str, **details: object) -> None:
        """Tell the observers (`DirectoryOperations` calls it once an RPC succeeded)."""
        for observer in list(self._observers):
            observer(kind, text, details)

    def register(self, entry: DirectoryEntry, user: str) -> DirectoryEntry:
        """Add or refresh ``entry`` (registered by ``user`` now); returns what is stored."""
        stored = replace(entry, registered_by=user, registered_at=self._now())
        with self._lock:
            self._entries[entry.name] = stored
            self._save()
            self.version += 1
        return stored

    def deregister(self, name: str) -> bool:
        """Remove ``name``; False when it was not registered."""
        with self._lock:
            found = self._entries.pop(name, None) is not None
            if found:
                self._save()
                self.version += 1
        return found

    def get(self, name: str) -> DirectoryEntry | None:
        with self._lock:
            return self._entries.get(name)

    def find(self, query: AgentQuery) -> list[DirectoryEntry]:
        """The entries ``query`` matches, by name."""
        with self._lock:
            entries = sorted(self._entries.values(), key=lambda e: e.name)
        return [e for e in entries if query.matches(e)]

    def state(self) -> etree._Element:
        """``/an-agent-directory:directory`` with every registered agent."""
        root = etree.Element(f"{{{AN_AGENT_DIRECTORY_NS}}}directory", nsmap=default_ns(AN_AGENT_DIRECTORY_NS))
        entries_to(root, "registered-agent", self.find(AgentQuery()), state=True)
        return root

    def _save(self) -> None:
        write_private(self._path, json.dumps([asdict(e) for e in self._entries.values()], indent=1).encode("utf-8"))


class DirectoryOperations:
    """The directory RPCs for one principal, authorised (module docstring); `Operations.directory` holds it."""

    def __init__(self, directory: Directory, exec_check: Callable[[Principal, str], None]) -> None:
        self.registry = directory
        self._exec = exec_check

    def register(self, principal: Principal, entry: DirectoryEntry) -> DirectoryEntry:
        """register-agent: only for an agent name the principal may speak for (or an admin)."""
        self._exec(principal, "an-agent-directory:register-agent")
        self._owner(principal, entry.name)
        stored = self.registry.register(entry, principal.name)
        self.registry.announce(
            "registered",
            f"{entry.name} registered by {principal.name}: {entry.address}:{entry.port}, domain {entry.domain}, "
            f"skills {', '.join(entry.skills) or 'none'}",
            name=entry.name,
            skills=list(entry.skills),
            schemas=list(entry.schemas),
        )
        return stored

    def deregister(self, principal: Principal, name: str) -> None:
        """deregister-agent; `RpcError` data-missing when ``name`` is not registered."""
        self._exec(principal, "an-agent-directory:deregister-agent")
        self._owner(principal, name)
        if not self.registry.deregister(name):
            raise RpcError.data_missing(f"agent {name!r} is not registered in this directory", path=_entry_path(name))
        self.registry.announce("deregistered", f"{name} deregistered by {principal.name}", name=name)

    def find(self, principal: Principal, query: AgentQuery) -> list[DirectoryEntry]:
        """find-agents: the registered agents matching every criterion given."""
        self._exec(principal, "an-agent-directory:find-agents")
        found = self.registry.find(query)
        names = [e.name for e in found]
        self.registry.announce(
            "find",
            f"{principal.name} asked for {query.describe()}: {', '.join(names) or 'no agent fits'}",
            asked_by=principal.name,
            found=names,
        )
        return found

    @staticmethod
    def _owner(principal: Principal, name: str) -> None:
        explicit = principal.is_admin or name == principal.name or name in principal.agent_names
        if not explicit:
            raise RpcError.access_denied(
                f"{principal.name} may not register or remove agent {name!r}: only a user who speaks for it "
                "or an administrator may",
                _entry_path(name),
            )


def _entry_path(name: str) -> str:
    return f"/an-agent-directory:directory/registered-agent[name='{name}']"
