"""Events of schema evolution, for NETCONF notifications, logs and the replay report.

Kinds:

``cluster-triggered``       a cluster passed the dual gate (detail: heat and counts)
``trigger-queued``          ... but the convergence guard is full: the trigger waits
``trigger-dequeued``        a queued trigger goes ahead because a slot freed up
``trigger-dropped``         ... but the cluster's core is not cohesive: no patch (detail: core and cohesion)
``clusters-merged``         two clusters' centroids met; ``cluster_id`` survives, detail names the other
``fragments-released``      at its patch, the fragments a cluster's core set aside left it (detail: how many, where to)
``patch-published``         a patch appeared (``patch`` holds it as delivered to clients)
``patch-pending-approval``  a synthesised patch waits for an authorised user
``patch-approved``          ... an authorised user published it
``patch-rejected``          ... an authorised user rejected it
``key-state-changed``       a patch key moved (``previous_state`` -> ``state``)
``withdrawn-key-used``      a client sent a withdrawn key inside its compatibility window

A server turns ``patch-published`` and ``key-state-changed`` into NETCONF notifications.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from an_agent.clock import to_rfc3339


@dataclass(frozen=True)
class EvolutionEvent:
    """One thing that happened to the pool, a patch or a key; ``time`` is seconds since the epoch."""

    kind: str
    time: float
    schema_id: str
    cluster_id: str | None = None
    patch_id: str | None = None
    client_id: str | None = None
    key_name: str | None = None
    state: str | None = None
    previous_state: str | None = None
    detail: str = ""
    patch: dict[str, Any] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: every field, ``time`` as RFC 3339, absent values omitted."""
        out: dict[str, Any] = {"kind": self.kind, "time": to_rfc3339(self.time), "schema_id": self.schema_id}
        for name in ("cluster_id", "patch_id", "client_id", "key_name", "state", "previous_state"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.detail:
            out["detail"] = self.detail
        return out
