"""Schema patches and their keys: the records the engine keeps, their wire form, and persistence rows.

A patch (draft 6.2.2, "Patch Packaging") carries ``patch_id``, ``parent_schema_id``, ``timestamp`` and
``expiration``, plus ``new_keys`` and/or ``modified_keys``. Here ``expiration`` is the moment the
patch's content is next decided: the end of the trial while a key is experimental, the next
re-evaluation once its keys are stable, the end of the grace period once deprecated. A client should
fetch the template again by then. ``client_id`` is null for a global patch and names the client for a
per-client patch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from an_agent.clock import to_rfc3339
from an_agent.evolution.lifecycle import PUBLISHED_STATES, KeyState
from an_agent.schemas.template import KeyDef, Template
from an_agent.store.evolution import KeyRow, PatchRow


@dataclass
class PatchKey:
    """One key of a patch: a new key (``kind="new"``) or a refined existing one (``kind="modified"``)."""

    uid: str
    patch_id: str
    schema_id: str
    client_id: str | None
    kind: str
    state: KeyState
    state_since: float
    decision_at: float | None
    extensions: int
    key: KeyDef

    @property
    def published(self) -> bool:
        return self.state in PUBLISHED_STATES

    def wire_key(self) -> KeyDef:
        """The key as clients see it: flags follow the state."""
        return KeyDef.build(
            self.key.key_name,
            self.key.key_type,
            self.key.semantic_description,
            required=False if self.kind == "new" else self.key.required,
            default_value=self.key.default_value,
            experimental=self.state == "experimental" or (self.kind == "new" and self.state == "proposed"),
            deprecated=self.state == "deprecated",
        )

    def to_dict(self) -> dict[str, Any]:
        """The draft's key object plus ``experimental`` (always present, as in the replay format)."""
        out = self.wire_key().to_dict()
        out["experimental"] = bool(out.get("experimental", False))
        return out

    def to_row(self) -> KeyRow:
        definition = self.key.to_dict()
        return KeyRow(
            self.uid,
            self.patch_id,
            self.schema_id,
            self.client_id,
            self.key.key_name,
            self.kind,
            self.state,
            self.state_since,
            self.decision_at,
            self.extensions,
            definition,
        )

    @classmethod
    def from_row(cls, row: KeyRow) -> PatchKey:
        d = row.definition
        key = KeyDef.build(
            d["key_name"],
            d["key_type"],
            d["semantic_description"],
            required=bool(d["required"]),
            default_value=d.get("default_value"),
        )
        return cls(
            row.key_uid,
            row.patch_id,
            row.schema_id,
            row.client_id,
            row.kind,
            row.state,  # type: ignore[arg-type]
            row.state_since,
            row.decision_at,
            row.extensions,
            key,
        )


@dataclass
class Patch:
    """A synthesised schema patch and its lifecycle bookkeeping.

    ``state``: ``pending`` (waits for an authorised user), ``active`` (delivered), ``closed`` (all its
    new keys withdrawn or retired), ``rejected``.
    """

    patch_id: str
    schema_id: str
    cluster_id: str
    client_id: str | None
    created: float
    expiration: float | None
    state: str
    authorised_by: str | None = None
    conflict: dict[str, Any] | None = None
    keys: list[PatchKey] = field(default_factory=list)

    def to_dict(self, include_unpublished: bool = False) -> dict[str, Any]:
        """The patch in the replay / ``schema_update_suggestion`` form."""
        visible = [k for k in self.keys if include_unpublished or k.published]
        return {
            "patch_id": self.patch_id,
            "parent_schema_id": self.schema_id,
            "cluster_id": self.cluster_id,
            "client_id": self.client_id,
            "timestamp": to_rfc3339(self.created),
            "expiration": to_rfc3339(self.expiration) if self.expiration is not None else None,
            "state": self.state,
            "new_keys": [k.to_dict() for k in visible if k.kind == "new"],
            "modified_keys": [k.to_dict() for k in visible if k.kind == "modified"],
        }

    def to_row(self) -> PatchRow:
        body = {"authorised_by": self.authorised_by, "conflict": self.conflict}
        return PatchRow(
            self.patch_id,
            self.schema_id,
            self.cluster_id,
            self.client_id,
            self.created,
            self.expiration,
            self.state,
            body,
        )

    @classmethod
    def from_row(cls, row: PatchRow, keys: list[PatchKey]) -> Patch:
        return cls(
            row.patch_id,
            row.schema_id,
            row.cluster_id,
            row.client_id,
            row.created,
            row.expiration,
            row.state,
            row.body.get("authorised_by"),
            row.body.get("conflict"),
            keys,
        )

    def refresh_expiration(self) -> None:
        """Expiration = the earliest pending decision of its published new keys (see module docstring)."""
        due = [k.decision_at for k in self.keys if k.kind == "new" and k.published and k.decision_at is not None]
        if due:
            self.expiration = min(due)


def effective_template(base: Template, patches: list[Patch]) -> Template:
    """``base`` with the published keys of ``patches`` (in order) applied: new keys added, refinements applied."""
    refined: dict[str, str] = {}
    extra: dict[str, KeyDef] = {}
    for patch in patches:
        for pk in patch.keys:
            if not pk.published:
                continue
            if pk.kind == "new":
                extra[pk.key.key_name] = pk.wire_key()
            elif pk.key.key_name in extra:
                extra[pk.key.key_name] = extra[pk.key.key_name].with_description(pk.key.semantic_description)
            else:
                refined[pk.key.key_name] = pk.key.semantic_description
    return base.with_keys(extra.values(), refined)
