"""Who is asking: the `Principal` every operation receives from the face that authenticated it."""

from __future__ import annotations

from dataclasses import dataclass

ADMIN_GROUP = "admin"
"""Members may do everything (until access control lands, every authenticated user is one)."""


@dataclass(frozen=True)
class Principal:
    """An authenticated caller: user name, groups, and the agent names it may speak for.

    ``agent_names`` empty means "any agent name": the value a ``task-sendFrom``
    may carry is then not restricted (the access-control issue narrows it).
    """

    name: str
    groups: frozenset[str] = frozenset()
    agent_names: frozenset[str] = frozenset()

    @classmethod
    def authenticated(cls, name: str) -> Principal:
        """The principal of a user the transport authenticated (for now: an administrator)."""
        return cls(name, frozenset({ADMIN_GROUP}))

    @property
    def is_admin(self) -> bool:
        return ADMIN_GROUP in self.groups

    def may_speak_for(self, agent_name: str) -> bool:
        """True when ``agent_name`` may appear as this principal's ``task-sendFrom``."""
        return self.is_admin or not self.agent_names or agent_name in self.agent_names
