"""Who may change a published schema (draft section 8: schema updates require authorisation).

Every schema change that adds or changes keys — publishing a synthesised patch, approving or rejecting
a pending one, withdrawing a key by hand — is checked by an `UpdatePolicy` with the acting user. The
engine's own automatic publications act as `EVOLUTION_ACTOR`; the operator who enables automatic
evolution authorises that actor through the policy. Changes that touch security-relevant keys
(credentials, payment, identity, access control) are never automatic: they wait for an administrator.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

EVOLUTION_ACTOR = "an-agent:evolution"

ChangeKind = Literal["publish-patch", "approve-patch", "reject-patch", "withdraw-key"]


@dataclass(frozen=True)
class SchemaChange:
    """A proposed change of a published schema, as shown to the policy."""

    kind: ChangeKind
    schema_id: str
    patch_id: str
    client_id: str | None  # set when the change only affects one client's patch stack
    key_names: tuple[str, ...]
    adds_keys: bool
    security_relevant: bool


class UpdatePolicy(Protocol):
    """Decides whether ``actor`` may make ``change``."""

    def authorize(self, actor: str, change: SchemaChange) -> bool: ...


class DefaultUpdatePolicy:
    """Administrators may make any change; the evolution actor may publish non-security patches.

    ``automatic=False`` turns automatic publication off: every synthesised patch then waits, as
    ``pending``, for an administrator to approve it.
    """

    def __init__(self, admins: Iterable[str] = (), automatic: bool = True) -> None:
        self.admins = frozenset(admins)
        self.automatic = automatic

    def authorize(self, actor: str, change: SchemaChange) -> bool:
        if actor in self.admins:
            return True
        return (
            actor == EVOLUTION_ACTOR
            and self.automatic
            and change.kind == "publish-patch"
            and not change.security_relevant
        )
