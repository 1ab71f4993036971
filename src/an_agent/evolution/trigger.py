"""The dual-gate evolution trigger (draft 6.2.1, "Threshold-Based Triggering").

A cluster triggers when its heat reaches ``heat_threshold`` AND, within the last ``window_days``,
it has fragments from at least ``min_distinct_clients`` clients OR at least ``min_occurrences``
fragments. A third, quality condition guards the centroid method against drift: the cluster's cohesion
(the mean similarity of its fragments to its centroid, ``|sum of unit vectors| / size``) must reach
``min_cohesion``, so a catch-all cluster of loosely related one-offs never triggers.

When one client sent at least ``personal_share`` of the window's fragments, the trigger is personal:
the patch it produces applies to that client only (a per-client patch stack, draft 6.2.2), which keeps
one client's habits out of the global schema.
"""

from __future__ import annotations

from dataclasses import dataclass

from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.pool import Cluster


@dataclass(frozen=True)
class GateResult:
    """Why a cluster did or did not trigger; ``client_id`` is set for a personal trigger."""

    passed: bool
    heat: float
    distinct_clients: int
    occurrences: int
    client_id: str | None
    cohesion: float = 1.0

    def describe(self) -> str:
        return (
            f"heat {self.heat:.1f}, {self.distinct_clients} distinct clients and {self.occurrences} "
            f"occurrences in the window, cohesion {self.cohesion:.2f}"
        )


def evaluate_gate(cluster: Cluster, now: float, config: EvolutionConfig) -> GateResult:
    """Evaluate both gates for ``cluster`` at ``now`` (its window is pruned to ``now`` first)."""
    cluster.prune_window(now, config.window_s)
    heat = cluster.heat_now(now, config.half_life_s)
    clients = len(cluster.window_clients)
    occurrences = len(cluster.window)
    cohesion = cluster.cohesion()
    passed = (
        heat >= config.heat_threshold
        and (clients >= config.min_distinct_clients or occurrences >= config.min_occurrences)
        and cohesion >= config.min_cohesion
    )
    top, share = cluster.top_client()
    personal = top if passed and share >= config.personal_share else None
    return GateResult(passed, heat, clients, occurrences, personal, cohesion)
