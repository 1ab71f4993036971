"""Who is asking: the `Principal` every operation receives from the face that authenticated it."""

from __future__ import annotations

from dataclasses import dataclass

ADMIN_GROUP = "admin"
"""Members may do everything (users not in a users file, e.g. ``--user``, are members)."""


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
        """The principal of a user known to no users file (``--user``, ``--authorized-keys``): an administrator."""
        return cls(name, frozenset({ADMIN_GROUP}))

    @property
    def is_admin(self) -> bool:
        return ADMIN_GROUP in self.groups

    def may_read_client(self, client_id: str) -> bool:
        """Whether ``client_id``'s personal schema patches may be served to this principal: its own (its
        name, or an agent name it is given explicitly) or an administrator's (draft-zhou 6)."""
        return self.is_admin or client_id == self.name or client_id in self.agent_names

    def may_speak_for(self, agent_name: str) -> bool:
        """True when ``agent_name`` may appear as this principal's ``task-sendFrom``."""
        return self.is_admin or not self.agent_names or agent_name in self.agent_names

    def default_sender(self) -> str | None:
        """The ``task-sendFrom`` of a request that names none: the user's own name when it may use it,
        else its only agent; None when it has several and must choose."""
        if self.may_speak_for(self.name):
            return self.name
        if len(self.agent_names) == 1:
            return next(iter(self.agent_names))
        return None
