"""The Differential Semantic Pool (draft 6.2.1): clusters of ``other`` fragments with decaying heat.

Clustering is online and centroid-based, with a member check against drift: a fragment joins a
cluster only when (1) the similarity to its centroid (the normalised sum of its members' unit vectors)
reaches ``assign_threshold`` AND (2) the mean similarity to its ``MEMBER_NEIGHBOURS`` most similar
recent members (a sample of the last ``MEMBER_SAMPLE``) reaches ``member_threshold``. The best
centroid that passes both wins; otherwise the fragment starts a new cluster. Condition (2) is what keeps
noise out: a one-off that shares one word with an intent can come close to the centroid, but it is not
close to several of the intent's actual paraphrases. After each join the grown cluster's centroid is compared with the
others of its scenario and two clusters whose centroids reach ``merge_threshold`` are merged, so that
paraphrases which arrived before their cluster had a stable centroid still end up together — when they
make one idea (`SchemaPool.cohere`): across the two, fragments must be nearly as similar as inside the
larger one, so a tight group of another idea does not ride in on a shared word. Why this method and
these thresholds: docs/evolution.md (calibration, noise rejection).

Cost per fragment: its share of one matrix product per batch and scenario with the live centroids
(`SchemaPool.open_screen`, `centroid_index.Screen`) and of one more for the batch's merge search
(`SchemaPool.open_merge_screen`), both bounded by ``max_clusters_per_schema`` (cold clusters are
evicted, `SchemaPool.evictable`). The rest (its candidates' member checks on a contiguous sample,
`member_sample.MemberSample`; a grown cluster's partner search; eviction's ranking, array operations)
does not depend on the size of the clusters, nor on their number beyond those products.

Heat: +``heat_increment`` per fragment, exponential decay with ``half_life_hours``. The trigger's counts
(occurrences, distinct clients) are kept over a sliding window of ``window_days``.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from an_agent.evolution.centroid_index import CentroidIndex, Screen
from an_agent.evolution.cohesion import Admission
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.member_sample import MemberSample

MEMBER_SAMPLE = 32  # recent member vectors kept per cluster for the member check
MEMBER_NEIGHBOURS = 3  # members a fragment is compared with (mean of its best similarities)
# Two clusters merge only when their fragments are, on average, nearly as similar across the two as the
# larger one's fragments are to each other: >= MERGE_BETWEEN, or >= MERGE_RATIO x its inner similarity
# (`SchemaPool.cohere`). The test of the cohesion gate's "second idea" (cohesion.py: 0.30 / 0.75), a
# little looser because two halves of one loose intent must still meet; calibration: docs/evolution.md.
MERGE_BETWEEN = 0.28
MERGE_RATIO = 0.72
_CANDIDATES = 4  # nearest centroids tried, best first

ClusterState = Literal["collecting", "queued", "pending", "patched", "rejected", "evicted"]
Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]


def decayed(heat: float, since: float, now: float, half_life_s: float) -> float:
    """``heat`` measured at ``since``, decayed exponentially to ``now``."""
    if now <= since:
        return heat
    return heat * math.pow(0.5, (now - since) / half_life_s)


@dataclass(slots=True)  # no per-instance dict: a full pool holds thousands, read on every sweep
class Cluster:
    """One semantic cluster of a scenario's pool.

    ``window`` holds (time, client) of the fragments inside the trigger window, oldest first;
    ``window_clients`` counts them per client. ``clients`` counts every fragment since the cluster began.
    """

    cluster_id: str
    schema_id: str
    vector_sum: Vector
    size: int
    heat: float
    heat_at: float
    created: float
    last_seen: float
    state: ClusterState = "collecting"
    window: deque[tuple[float, str]] = field(default_factory=deque)
    window_clients: Counter[str] = field(default_factory=Counter)
    clients: Counter[str] = field(default_factory=Counter)
    members: MemberSample = field(default_factory=lambda: MemberSample(MEMBER_SAMPLE))
    # Set when the cluster's patch is made (its core's outlier test): later fragments must pass it (no drift).
    admission: Admission | None = None
    # Set when the patch's key is typed (`carriers.value_test`): later fragments must state a value of it.
    value_test: Callable[[str], bool] | None = None

    def admits(self, unit: Vector, centroid_similarity: float, affinity: float | None = None) -> bool:
        """True unless the cluster has a patch and ``unit`` would be set aside from its core.

        ``affinity``: ``member_affinity(unit)`` when the caller has it already.
        """
        if self.admission is None:
            return True
        return self.admission.admits(centroid_similarity, self.member_affinity(unit) if affinity is None else affinity)

    def add_members(self, units: Iterable[Vector] | Matrix) -> None:
        """Add vectors to the member sample (the oldest leave beyond ``MEMBER_SAMPLE``)."""
        self.members.extend(units)

    def member_affinity(self, unit: Vector) -> float:
        """Mean similarity of ``unit`` to its ``MEMBER_NEIGHBOURS`` most similar sampled members (1 if none)."""
        return self.members.affinity(unit, MEMBER_NEIGHBOURS)

    def admits_all(self, units: Matrix) -> bool:
        """`admits` for every row of ``units`` (one product for the member check of all of them)."""
        if self.admission is None or not len(units):
            return True
        centroid = (units @ self.centroid()).astype(np.float64)
        affinity = self.members.affinities(units, MEMBER_NEIGHBOURS).astype(np.float64)
        return all(self.admission.admits(float(c), float(a)) for c, a in zip(centroid, affinity, strict=True))

    def inner_similarity(self) -> float:
        """Mean similarity between two distinct members (1 for fewer than two).

        For unit vectors ``|sum|^2 = n + sum over ordered pairs of their similarity``, so this is exact
        over every member the cluster ever had, at the cost of one norm.
        """
        n = self.size
        if n < 2:
            return 1.0
        return (float(self.vector_sum @ self.vector_sum) - n) / (n * (n - 1))

    def heat_now(self, now: float, half_life_s: float) -> float:
        return decayed(self.heat, self.heat_at, now, half_life_s)

    def centroid(self) -> Vector:
        norm = float(np.linalg.norm(self.vector_sum))
        return (self.vector_sum / norm).astype(np.float32) if norm else self.vector_sum

    def cohesion(self) -> float:
        """Mean cosine similarity of the members to the centroid (1 for a single fragment)."""
        return float(np.linalg.norm(self.vector_sum)) / self.size if self.size else 0.0

    def prune_window(self, now: float, window_s: float) -> None:
        while self.window and self.window[0][0] < now - window_s:
            _, client = self.window.popleft()
            self.window_clients[client] -= 1
            if self.window_clients[client] <= 0:
                del self.window_clients[client]

    def note(self, when: float, client_id: str) -> None:
        self.window.append((when, client_id))
        self.window_clients[client_id] += 1
        self.clients[client_id] += 1

    def top_client(self) -> tuple[str | None, float]:
        """The client with most fragments in the window and its share of them."""
        if not self.window:
            return None, 0.0
        client, count = self.window_clients.most_common(1)[0]
        return client, count / len(self.window)

    @property
    def has_patch(self) -> bool:
        return self.state in ("pending", "patched", "rejected")


def between_similarity(a: Cluster, b: Cluster) -> float:
    """Mean similarity of a fragment of ``a`` to a fragment of ``b``, over all pairs (exact, one dot product)."""
    return float(a.vector_sum @ b.vector_sum) / (a.size * b.size) if a.size and b.size else 0.0


class SchemaPool:
    """The pool of one scenario (schema_id): its clusters and their centroid index."""

    def __init__(self, schema_id: str, dimension: int, config: EvolutionConfig) -> None:
        self.schema_id = schema_id
        self.config = config
        self.clusters: dict[str, Cluster] = {}
        self._index = CentroidIndex(dimension)
        self._screen: Screen | None = None

    # -- batches: one matrix product for a batch instead of one per fragment ---------------------
    def open_screen(self, units: Matrix) -> None:
        """Compare a batch of fragments (rows of ``units``) with every centroid at once.

        Until `close_screen`, ``choose(unit, column=i)`` for the batch's i-th fragment reads the
        similarities from this product (re-measuring those of clusters changed since), which is what
        keeps the cost per fragment flat when a scenario holds ``max_clusters_per_schema`` clusters.
        """
        self._screen = self._index.screen(units, self.config.assign_threshold)

    def open_merge_screen(self, clusters: Sequence[Cluster]) -> None:
        """`open_screen` for the centroids of ``clusters``: ``merge_partner(clusters[i], column=i)`` reads it."""
        self._screen = self._index.screen(np.stack([c.centroid() for c in clusters]), self.config.merge_threshold)

    def close_screen(self) -> None:
        self._screen = None

    def _put(self, cluster: Cluster) -> None:
        """(Re-)index ``cluster``: its centroid and its eviction keys; after every change to either."""
        self._index.put(cluster.cluster_id, cluster.centroid(), (cluster.heat, cluster.heat_at, cluster.last_seen))

    def _touch(self, cluster_id: str) -> None:
        if self._screen is not None:
            self._screen.touch(cluster_id, self._index.vector(cluster_id) if cluster_id in self.clusters else None)

    def _nearest(self, unit: Vector, column: int | None) -> list[tuple[str, float]]:
        if self._screen is None or column is None:
            return self._index.nearest_k(unit, _CANDIDATES)
        return self._screen.nearest(column, unit, _CANDIDATES)

    def choose(self, unit: Vector, column: int | None = None, text: str | None = None) -> Cluster | None:
        """The cluster ``unit`` joins (both conditions of the module docstring), or None to start one.

        ``column``: the fragment's position in the batch given to `open_screen` (same decision, cheaper).
        ``text``: the fragment's text, for the value test of a cluster behind a typed key (`Cluster.value_test`).
        """
        for cluster_id, sim in self._nearest(unit, column):
            if sim < self.config.assign_threshold:
                break
            cluster = self.clusters[cluster_id]
            affinity = cluster.member_affinity(unit)
            if affinity >= self.config.member_threshold and cluster.admits(unit, sim, affinity):
                if cluster.value_test is not None and text is not None and not cluster.value_test(text):
                    continue  # it shares the topic, not the value the key states (`carriers`)
                return cluster
        return None

    def start(self, cluster_id: str, unit: Vector, when: float, client_id: str) -> Cluster:
        """A new cluster holding one fragment."""
        cluster = Cluster(
            cluster_id=cluster_id,
            schema_id=self.schema_id,
            vector_sum=unit.astype(np.float32).copy(),
            size=1,
            heat=self.config.heat_increment,
            heat_at=when,
            created=when,
            last_seen=when,
        )
        cluster.note(when, client_id)
        cluster.add_members([cluster.vector_sum.copy()])
        self.clusters[cluster_id] = cluster
        self._put(cluster)
        self._touch(cluster_id)
        return cluster

    def join(self, cluster: Cluster, unit: Vector, when: float, client_id: str) -> None:
        """Add one fragment to ``cluster``: centroid, heat, window."""
        cluster.vector_sum = cluster.vector_sum + unit
        cluster.size += 1
        cluster.heat = cluster.heat_now(when, self.config.half_life_s) + self.config.heat_increment
        cluster.heat_at = max(when, cluster.heat_at)
        cluster.last_seen = max(when, cluster.last_seen)
        cluster.prune_window(when, self.config.window_s)
        cluster.note(when, client_id)
        cluster.add_members([unit])
        self._put(cluster)
        self._touch(cluster.cluster_id)

    def merge_partner(self, cluster: Cluster, column: int | None = None) -> tuple[Cluster | None, float]:
        """The cluster that ``cluster`` should merge with now, if any (never two clusters with patches).

        Centroids must reach ``merge_threshold`` and the members must pass the member check against each
        other (`cohere`), so a small cluster of one-offs does not ride into an intent on its centroid.
        ``column``: the cluster's column in the open merge screen (same answer, no full search; ignored
        once the cluster changed since). With it, a cluster with no partner in sight gets (None, -inf).
        """
        screen = self._screen
        if column is not None and screen is not None and screen.unchanged(cluster.cluster_id):
            if screen.alone(column, cluster.cluster_id):  # the common case: nothing near enough to merge
                return None, -math.inf
            ranked = screen.nearest(column, cluster.centroid(), 2)  # itself (~1.0) and the best other
            other_id, sim = next(((c, s) for c, s in ranked if c != cluster.cluster_id), (None, -math.inf))
        else:
            other_id, sim = self._index.nearest(cluster.centroid(), exclude=cluster.cluster_id)
        if other_id is None or sim < self.config.merge_threshold:
            return None, sim
        other = self.clusters[other_id]
        if other.has_patch and cluster.has_patch:
            return None, sim
        if not self.cohere(cluster, other):
            return None, sim
        return other, sim

    def cohere(self, a: Cluster, b: Cluster) -> bool:
        """True when two clusters make one idea and may merge.

        (1) The members of the smaller cluster pass, on average, the member check of the larger; and
        (2) the mean similarity across the two (`between_similarity`, over every fragment) reaches
        ``MERGE_BETWEEN`` or ``MERGE_RATIO`` times the larger cluster's own `Cluster.inner_similarity`.
        (1) alone let a tight pair of a weak intent ("send the energy report to the site owner") ride
        into an intent (high temperature at the site) on one close member each; (2) sees that the pair
        is much closer to itself than to the intent, as the cohesion gate's "second idea" test does.
        (3) A cluster with a patch (``admission`` set) takes in only fragments its core would keep.
        """
        small, large = (a, b) if a.size <= b.size else (b, a)
        between = between_similarity(a, b)  # first: one dot product, where (1) is a product per member
        if between < MERGE_BETWEEN and between < MERGE_RATIO * large.inner_similarity():
            return False
        if not small.members or not large.members:
            return True
        affinities = large.members.affinities(small.members.matrix, MEMBER_NEIGHBOURS)
        if float(np.mean(affinities.astype(np.float64))) < self.config.member_threshold:
            return False
        # (3) A cluster with a patch takes in only what its core would keep (no drift), fragment by fragment.
        return a.admits_all(b.members.matrix) and b.admits_all(a.members.matrix)

    def merge(self, a: Cluster, b: Cluster, now: float) -> tuple[Cluster, Cluster]:
        """Merge two clusters; returns (survivor, absorbed).

        The survivor is the one with a patch, else the larger, else the older: its id stays stable
        for the patches and queue entries that name it. Heat adds up (both decayed to ``now``).
        """

        def rank(c: Cluster) -> tuple[int, int, float]:
            return (1 if c.has_patch else 0, c.size, -c.created)

        keep, gone = (a, b) if rank(a) >= rank(b) else (b, a)
        half_life = self.config.half_life_s
        keep.heat = keep.heat_now(now, half_life) + gone.heat_now(now, half_life)
        keep.heat_at = max(now, keep.heat_at)
        keep.vector_sum = keep.vector_sum + gone.vector_sum
        keep.size += gone.size
        keep.created = min(keep.created, gone.created)
        keep.last_seen = max(keep.last_seen, gone.last_seen)
        keep.window = deque(sorted([*keep.window, *gone.window]))
        keep.window_clients.update(gone.window_clients)
        keep.clients.update(gone.clients)
        keep.add_members(gone.members.matrix)  # the sample stays bounded (the newest MEMBER_SAMPLE)
        keep.prune_window(now, self.config.window_s)
        if keep.state == "collecting" and gone.state == "queued":
            keep.state = "queued"
        self.remove(gone)
        self._put(keep)
        self._touch(keep.cluster_id)
        return keep, gone

    def add_loaded(self, cluster: Cluster) -> None:
        """Put back a cluster restored from the store."""
        self.clusters[cluster.cluster_id] = cluster
        self._put(cluster)
        self._touch(cluster.cluster_id)

    def remove(self, cluster: Cluster) -> None:
        self.clusters.pop(cluster.cluster_id, None)
        self._index.remove(cluster.cluster_id)
        self._touch(cluster.cluster_id)

    def evictable(self, now: float) -> list[Cluster]:
        """Clusters to drop from the index: cold and still collecting.

        A collecting cluster whose last fragment left the trigger window can no longer pass the
        occurrence gate on old fragments and its heat has decayed for a whole window; beyond
        ``max_clusters_per_schema`` the coldest collecting clusters go too, so the index stays bounded.
        """
        # Ranked from the index's arrays (kept with the centroids); a cluster's state is read only for
        # the clusters ranked first. Same list, same order as ranking the collecting clusters in
        # insertion order: the insertion order breaks ties of heat.
        ids, keys, seq = self._index.eviction_keys()
        cold = keys[:, 2] < now - self.config.window_s
        cold_rows = np.flatnonzero(cold)
        out = [self.clusters[ids[r]] for r in cold_rows[np.argsort(seq[cold_rows])].tolist()]
        out = [c for c in out if c.state == "collecting"]
        excess = len(self.clusters) - len(out) - self.config.max_clusters_per_schema
        if excess > 0:
            # heat_now of every cluster, as one array expression
            heat = keys[:, 0] * np.power(0.5, np.maximum(0.0, now - keys[:, 1]) / self.config.half_life_s)
            for r in np.lexsort((seq, heat)).tolist():
                cluster = self.clusters[ids[r]]
                if not cold[r] and cluster.state == "collecting":
                    out.append(cluster)
                    excess -= 1
                    if not excess:
                        break
        return out
