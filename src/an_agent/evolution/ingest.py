"""Pool upkeep for the engine: fragments into clusters, merges, eviction, pruning, restore.

Fragments are stored as text (no vectors: a 1.5 KB embedding per row would multiply the database and
make the write-through cost grow with it). A restored cluster therefore starts with an empty member
sample and is checked against its centroid only until its next fragments refill the sample.

`PoolKeeper.ingest_many` puts a batch of embedded fragments into their scenarios' `SchemaPool`s (each
joins or starts a cluster, in order; then the grown clusters merge where they meet), stores the
fragments, and hands each grown cluster to the trigger (a callback, so this module does not know about
patches). `sweep` evicts cold clusters and prunes old fragments: with the batch products, that
retention is what keeps the per-fragment cost flat (docs/evolution.md, "Retention").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController  # type: ignore[import-untyped]

from an_agent.evolution.carriers import CARRY_SHARE
from an_agent.evolution.pool import MEMBER_SAMPLE, Cluster, SchemaPool, Vector
from an_agent.evolution.state import EngineState

SWEEP_EVERY = 256  # fragments between two eviction sweeps

ClusterGrown = Callable[[Cluster, float], None]


@dataclass(frozen=True)
class Entry:
    """One sanitised, embedded fragment on its way into the pool (``ref``: the caller's reference)."""

    schema_id: str
    client_id: str
    text: str
    vector: Vector
    ref: int | None = None
    choices: Mapping[str, str] | None = None  # the request's values of its template's closed-set keys


_BLAS: list[Any] = []  # the ThreadpoolController, built on first use (it scans the loaded libraries)


def single_threaded_blas() -> AbstractContextManager[object]:
    """A context in which numpy's BLAS runs on one thread."""
    if not _BLAS:
        _BLAS.append(ThreadpoolController())
    limit: AbstractContextManager[object] = _BLAS[0].limit(limits=1, user_api="blas")
    return limit


def _follow(merged_into: dict[str, str], cluster_id: str) -> str:
    while cluster_id in merged_into:
        cluster_id = merged_into[cluster_id]
    return cluster_id


class PoolKeeper:
    """The Differential Semantic Pool side of the engine (module docstring)."""

    def __init__(self, state: EngineState, on_grown: ClusterGrown) -> None:
        self._s = state
        self._on_grown = on_grown
        self._since_sweep = 0

    def ingest_many(self, entries: Sequence[Entry], now: float) -> list[str]:
        """Put a batch of embedded fragments into the pool; returns the cluster each one ended in.

        Per scenario, the batch is compared with every centroid in one matrix product (`SchemaPool.
        open_screen`); fragments then join or start clusters one by one, in order. Merges are checked
        once per grown cluster after the batch, again with one product (`_merge_pass`), and the trigger
        of each grown cluster is evaluated after its merges. A batch of one fragment behaves exactly as
        the one-at-a-time rule of the pool's docstring.
        """
        if len(entries) < 2:
            return self._ingest_many(entries, now)
        # The batch's products are small: BLAS threads cost more in hand-offs than they save, and on a
        # busy machine a thread that waits for its preempted sibling makes a product 5-10x slower.
        with single_threaded_blas():
            return self._ingest_many(entries, now)

    def _ingest_many(self, entries: Sequence[Entry], now: float) -> list[str]:
        s = self._s
        by_schema: dict[str, list[int]] = {}
        for i, entry in enumerate(entries):
            by_schema.setdefault(entry.schema_id, []).append(i)
        columns: dict[int, int] = {}
        for schema_id, positions in by_schema.items():
            units = np.stack([np.asarray(entries[i].vector, dtype=np.float32) for i in positions])
            s.pool(schema_id).open_screen(units)
            columns.update((i, col) for col, i in enumerate(positions))
        grown: dict[str, Cluster] = {}
        landed: list[str] = []
        try:
            for i, entry in enumerate(entries):
                pool = s.pool(entry.schema_id)
                unit = np.asarray(entry.vector, dtype=np.float32)
                cluster = pool.choose(unit, columns[i], entry.text)
                if cluster is not None:
                    pool.join(cluster, unit, now, entry.client_id)
                else:
                    cluster_id = f"c{s.store.next_number('cluster'):05d}"
                    cluster = pool.start(cluster_id, unit, now, entry.client_id)
                s.store.add_fragment(
                    cluster.cluster_id, entry.schema_id, now, entry.client_id, entry.text, entry.ref, entry.choices
                )
                grown[cluster.cluster_id] = cluster
                landed.append(cluster.cluster_id)
        finally:
            for schema_id in by_schema:
                s.pool(schema_id).close_screen()
        merged_into: dict[str, str] = {}
        for schema_id in by_schema:
            pool = s.pool(schema_id)
            mine = [c for c in grown.values() if c.schema_id == schema_id]
            merged_into.update(self._merge_pass(pool, mine, now))
        # Survivors of merges may be clusters the batch did not touch: they grew too.
        final = {_follow(merged_into, c.cluster_id): c.schema_id for c in grown.values()}
        for cluster_id, schema_id in final.items():
            cluster = s.pool(schema_id).clusters[cluster_id]
            s.save_cluster(cluster)
            self._on_grown(cluster, now)
        self._since_sweep += len(entries)
        return [_follow(merged_into, cluster_id) for cluster_id in landed]

    def _merge_pass(self, pool: SchemaPool, grown: list[Cluster], now: float) -> dict[str, str]:
        """Merge each grown cluster as `_merge_around` would; returns {absorbed id: survivor id}.

        One matrix product gives every grown centroid's similarity to all centroids (`SchemaPool.
        open_merge_screen`); each cluster's partner search then reads its column, re-measuring only the
        clusters merges changed since, so a grown cluster costs a pass over one column, not a product
        with every centroid. A cluster changed by a merge of this pass searches the whole index.
        """
        s = self._s
        skip_new = s.config.merge_threshold >= s.config.assign_threshold
        todo = [c for c in grown if not (skip_new and c.size == 1)]
        if not todo:
            return {}
        merged_into: dict[str, str] = {}
        pool.open_merge_screen(todo)
        try:
            for column, cluster in enumerate(todo):
                if cluster.cluster_id not in pool.clusters:
                    continue  # absorbed by an earlier merge of this pass
                survivor, absorbed = self._merge_around(pool, cluster, now, column)
                for gone in absorbed:
                    merged_into[gone] = survivor.cluster_id
        finally:
            pool.close_screen()
        return merged_into

    def _merge_around(
        self, pool: SchemaPool, cluster: Cluster, now: float, column: int | None = None
    ) -> tuple[Cluster, list[str]]:
        """Merge ``cluster`` with its partners until none is left; (survivor, ids of the absorbed).

        ``column``: the cluster's column in the pool's open screen (its first search reads it).
        """
        s = self._s
        absorbed: list[str] = []
        while True:
            partner, similarity = pool.merge_partner(cluster, column)
            column = None  # after a merge the survivor's centroid is new: a full search
            if partner is None or not self._values_fit(cluster, partner):
                return cluster, absorbed
            keep, gone = s.merge_clusters(cluster, partner, now, f"centroid similarity {similarity:.2f}")
            absorbed.append(gone.cluster_id)
            cluster = keep

    def _values_fit(self, a: Cluster, b: Cluster) -> bool:
        """True unless one of the two is behind a typed key and most of the other's fragments state no value.

        The merge test's counterpart of `SchemaPool.choose`'s value test (`carriers`): a cluster of
        one-offs sharing a typed key's topic word does not ride in on its centroid. Only the newest
        ``MEMBER_SAMPLE`` fragments of the other are read (the cost stays bounded).
        """
        for keep, other in ((a, b), (b, a)):
            test = keep.value_test
            if test is None:
                continue
            texts = [f.text for f in self._s.store.fragments(other.cluster_id, limit=MEMBER_SAMPLE)]
            if texts and sum(1 for t in texts if test(t)) < CARRY_SHARE * len(texts):
                return False
        return True

    def maybe_sweep(self, now: float) -> None:
        """Sweep when enough fragments arrived since the last sweep."""
        if self._since_sweep >= SWEEP_EVERY:
            self.sweep(now)

    def sweep(self, now: float) -> None:
        """Evict cold clusters and (unless history is kept) prune fragments older than the window."""
        s = self._s
        self._since_sweep = 0
        evicted: list[str] = []
        for pool in s.pools.values():
            for cluster in pool.evictable(now):
                pool.remove(cluster)
                if s.keep_history:
                    cluster.state = "evicted"
                    s.save_cluster(cluster)
                else:
                    evicted.append(cluster.cluster_id)
        # Without history an evicted cluster's row goes (one batch of deletes); its fragments stay until
        # the window prune below takes them with the rest of their time: deleting them now would rewrite
        # a scattered page of the table and of each index per evicted cluster (most are one-offs), the
        # write-through cost that grew with the table. Nothing reads them: cluster ids are never reused.
        s.store.delete_clusters(evicted)
        if s.keep_history:
            return
        cut = now - s.config.window_s
        oldest = s.store.oldest_fragment_ts()
        if oldest is not None and oldest < cut:  # else nothing to prune: no pass over every cluster either
            waiting = [
                c.cluster_id for p in s.pools.values() for c in p.clusters.values() if c.state in ("queued", "pending")
            ]
            s.store.prune_fragments(cut, keep_clusters=waiting)

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
