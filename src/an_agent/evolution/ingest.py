"""Pool upkeep for the engine: fragments into clusters, merges, eviction, pruning, restore.

Fragments are stored as text (no vectors: a 1.5 KB embedding per row would multiply the database and
make the write-through cost grow with it). A restored cluster therefore starts with an empty member
sample and is checked against its centroid only until its next fragments refill the sample.

`PoolKeeper` puts each embedded fragment into its scenario's `SchemaPool` (join or start a cluster,
then merge around it), stores the fragment, and hands the grown cluster to the trigger (a callback, so
this module does not know about patches). `sweep` evicts cold clusters and prunes old fragments:
that retention is what keeps the per-fragment cost flat (docs/evolution.md, "Retention").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.pool import Cluster, SchemaPool, Vector
from an_agent.evolution.state import EngineState

SWEEP_EVERY = 256  # fragments between two eviction sweeps

ClusterGrown = Callable[[Cluster, float], None]


class PoolKeeper:
    """The Differential Semantic Pool side of the engine (module docstring)."""

    def __init__(self, state: EngineState, on_grown: ClusterGrown) -> None:
        self._s = state
        self._on_grown = on_grown
        self._since_sweep = 0

    def ingest_one(self, schema_id: str, client_id: str, text: str, vector: Vector, now: float, ref: int | None) -> str:
        """Put one fragment into the pool; returns the id of the cluster it ended in."""
        s = self._s
        pool = s.pool(schema_id)
        unit = np.asarray(vector, dtype=np.float32)
        cluster = pool.choose(unit)
        if cluster is not None:
            pool.join(cluster, unit, now, client_id)
        else:
            cluster_id = f"c{s.store.next_number('cluster'):05d}"
            cluster = pool.start(cluster_id, unit, now, client_id)
        s.store.add_fragment(cluster.cluster_id, schema_id, now, client_id, text, ref)
        cluster = self._merge_around(pool, cluster, now)
        s.save_cluster(cluster)
        self._on_grown(cluster, now)
        self._since_sweep += 1
        return cluster.cluster_id

    def _merge_around(self, pool: SchemaPool, cluster: Cluster, now: float) -> Cluster:
        s = self._s
        if cluster.size == 1 and s.config.merge_threshold >= s.config.assign_threshold:
            return cluster  # a new one-fragment cluster was below the join threshold to every centroid
        while True:
            partner, similarity = pool.merge_partner(cluster)
            if partner is None:
                return cluster
            keep, gone = pool.merge(cluster, partner, now)
            s.store.move_fragments(gone.cluster_id, keep.cluster_id)
            s.store.delete_cluster(gone.cluster_id, with_fragments=False)
            queued_ids = {q.cluster_id for q in s.store.queue()}
            if gone.cluster_id in queued_ids:
                s.store.dequeue(gone.cluster_id)
                if keep.state == "queued" and keep.cluster_id not in queued_ids:
                    top, share = keep.top_client()
                    personal = top if share >= s.config.personal_share else None
                    s.store.enqueue(keep.cluster_id, keep.schema_id, personal, now)
            s.emit(
                EvolutionEvent(
                    "clusters-merged",
                    now,
                    keep.schema_id,
                    cluster_id=keep.cluster_id,
                    detail=f"{gone.cluster_id} merged into {keep.cluster_id} (centroid similarity {similarity:.2f})",
                )
            )
            cluster = keep

    def maybe_sweep(self, now: float) -> None:
        """Sweep when enough fragments arrived since the last sweep."""
        if self._since_sweep >= SWEEP_EVERY:
            self.sweep(now)

    def sweep(self, now: float) -> None:
        """Evict cold clusters and (unless history is kept) prune fragments older than the window."""
        s = self._s
        self._since_sweep = 0
        for pool in s.pools.values():
            for cluster in pool.evictable(now):
                pool.remove(cluster)
                if s.keep_history:
                    cluster.state = "evicted"
                    s.save_cluster(cluster)
                else:
                    s.store.delete_cluster(cluster.cluster_id, with_fragments=True)
        if not s.keep_history:
            waiting = [
                c.cluster_id for p in s.pools.values() for c in p.clusters.values() if c.state in ("queued", "pending")
            ]
            s.store.prune_fragments(now - s.config.window_s, keep_clusters=waiting)

    def load(self) -> None:
        """Restore the live clusters (centroids, windows, client counts) from the store."""
        s = self._s
        now = s.clock.now()
        for row in s.store.clusters(exclude_states=("evicted",)):
            vector = np.frombuffer(row.centroid, dtype=np.float32).copy()
            cluster = Cluster(
                row.cluster_id,
                row.schema_id,
                vector,
                row.size,
                row.heat,
                row.heat_at,
                row.created,
                row.last_seen,
                row.state,  # type: ignore[arg-type]  # stored as text; written from the same Literal
            )
            for fragment in s.store.fragments(row.cluster_id, since=now - s.config.window_s):
                cluster.window.append((fragment.ts, fragment.client_id))
                cluster.window_clients[fragment.client_id] += 1
            cluster.clients.update(s.store.client_counts(row.cluster_id))
            s.pool(row.schema_id).add_loaded(cluster)
