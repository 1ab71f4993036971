"""The pool's search mechanics: member sample, screen, merge screen, eviction order, cluster rows.

Each structure is checked against the plain computation it replaces (a deque stacked into a matrix, a
full search over the centroid index, the two-pass eviction list), with fake vectors, through the paths
that change it: join, start, merge, removal (eviction), re-indexing (release, restore from the store).
"""

from __future__ import annotations

from collections import deque
from pathlib import Path

import numpy as np
import pytest

from an_agent.evolution.centroid_index import CentroidIndex
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.member_sample import MemberSample
from an_agent.evolution.pool import MEMBER_NEIGHBOURS, Cluster, SchemaPool
from an_agent.store.evolution import ClusterRow, EvolutionStore

DIM = 16


def units(rng: np.random.Generator, n: int, dim: int = DIM) -> np.ndarray:
    v = rng.normal(size=(n, dim)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def deque_affinity(members: deque[np.ndarray], unit: np.ndarray) -> float:
    """The member check as it was computed from a deque (stacked per call)."""
    if not members:
        return 1.0
    sims = np.stack(list(members)) @ unit
    k = min(MEMBER_NEIGHBOURS, len(sims))
    return float(np.mean(np.partition(sims, len(sims) - k)[-k:]))


# -- member sample ------------------------------------------------------------------------------
def test_member_sample_is_the_deque_it_replaces_through_every_kind_of_change() -> None:
    rng = np.random.default_rng(3)
    sample, reference = MemberSample(8), deque(maxlen=8)
    probes = units(rng, 5)
    for step in range(300):
        kind = rng.integers(0, 10)
        if kind == 0:
            sample.clear()
            reference.clear()
        elif kind <= 2:  # a merge or a release: a block of vectors, sometimes more than the limit
            block = units(rng, int(rng.integers(1, 13)))
            sample.extend(block)
            reference.extend(block)
        else:  # a join: one vector
            v = units(rng, 1)[0]
            sample.extend([v])
            reference.append(v)
        assert len(sample) == len(reference) and bool(sample) == bool(reference)
        if reference:
            assert np.array_equal(sample.matrix, np.stack(list(reference)))
            assert all(np.array_equal(a, b) for a, b in zip(sample, reference, strict=True))
        for p in probes:  # bit for bit: the same matrix, the same product, the same decision
            assert sample.affinity(p, MEMBER_NEIGHBOURS) == deque_affinity(reference, p), step


def test_member_sample_views_stay_valid_after_later_changes() -> None:
    rng = np.random.default_rng(4)
    sample = MemberSample(4)
    sample.extend(units(rng, 3))
    kept = list(sample)
    copies = [v.copy() for v in kept]
    matrix, matrix_copy = sample.matrix, sample.matrix.copy()
    for _ in range(20):  # fills, moves to new buffers, clears: rows handed out are never written again
        sample.extend(units(rng, 3))
        sample.clear()
        sample.extend([units(rng, 1)[0]])
    assert all(np.array_equal(a, b) for a, b in zip(kept, copies, strict=True))
    assert np.array_equal(matrix, matrix_copy)


def test_member_affinities_of_many_vectors_are_the_one_by_one_affinities() -> None:
    rng = np.random.default_rng(5)
    sample = MemberSample(32)
    sample.extend(units(rng, 20))
    probes = units(rng, 12)
    one_by_one = [sample.affinity(p, MEMBER_NEIGHBOURS) for p in probes]
    assert sample.affinities(probes, MEMBER_NEIGHBOURS) == pytest.approx(one_by_one, abs=1e-6)
    assert list(MemberSample(4).affinities(probes, MEMBER_NEIGHBOURS)) == [1.0] * 12  # no members: no check


def test_member_sample_refuses_a_zero_limit() -> None:
    with pytest.raises(ValueError, match="at least one"):
        MemberSample(0)


# -- screen -------------------------------------------------------------------------------------
def full_search(index: CentroidIndex, unit: np.ndarray, floor: float, k: int) -> list[tuple[str, float]]:
    """The k best clusters at or above ``floor``, from one product over every centroid."""
    ranked = [(c, s) for c, s in index.nearest_k(unit, len(index)) if s >= floor]
    return ranked[:k]


def test_screen_answers_as_a_full_search_while_the_centroids_change() -> None:
    rng = np.random.default_rng(6)
    anchors = units(rng, 6)
    index = CentroidIndex(DIM, capacity=4)  # grows while the screen is open
    for i in range(30):  # half near an anchor (no two alike: exact ties are not what this is about)
        v = units(rng, 1)[0] if i % 2 else anchors[i % 6] + 0.3 * units(rng, 1)[0]
        index.put(f"c{i}", (v / np.linalg.norm(v)).astype(np.float32))
    batch = units(rng, 60)
    batch[::2] = anchors[rng.integers(0, 6, 30)] + 0.4 * batch[::2]
    batch = (batch / np.linalg.norm(batch, axis=1, keepdims=True)).astype(np.float32)
    floor = 0.3
    screen = index.screen(batch, floor)
    live = {f"c{i}" for i in range(30)}
    fresh = 100
    for column, v in enumerate(batch):
        expected = full_search(index, v, floor, 4)
        got = [(c, s) for c, s in screen.nearest(column, v, 4) if s >= floor]
        assert [c for c, _ in got] == [c for c, _ in expected], column
        assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-6)
        # The changes a batch makes: joins move a centroid, starts add one, merges and evictions remove one.
        action = column % 4
        if action == 0 and got:  # a join: the cluster's centroid moves towards the fragment
            cid = got[0][0]
            moved = index.vector(cid)
            assert moved is not None
            new = moved + v
            index.put(cid, (new / np.linalg.norm(new)).astype(np.float32))
            screen.touch(cid, index.vector(cid))
        elif action == 1:  # a start
            cid = f"c{fresh}"
            fresh += 1
            index.put(cid, v)
            screen.touch(cid, index.vector(cid))
            live.add(cid)
        elif action == 2 and len(live) > 5:  # a merge's absorbed cluster or an eviction
            cid = sorted(live)[int(rng.integers(0, len(live)))]
            index.remove(cid)
            screen.touch(cid, None)
            live.discard(cid)
        assert {c for c in live if screen.unchanged(c)} <= live


def test_screen_lists_every_similarity_at_the_floor_and_none_far_below() -> None:
    index = CentroidIndex(2)
    angles = np.linspace(0, np.pi, 50)
    for i, a in enumerate(angles):
        index.put(f"c{i}", np.array([np.cos(a), np.sin(a)], dtype=np.float32))
    probe = np.array([[1.0, 0.0]], dtype=np.float32)
    screen = index.screen(probe, 0.5)
    got = dict(screen.nearest(0, probe[0], 50))
    expected = {f"c{i}" for i, a in enumerate(angles) if np.cos(a) >= 0.5}
    assert expected <= set(got) and all(s >= 0.5 - 1e-5 for s in got.values())


def test_a_removed_changed_cluster_leaves_the_others_in_order() -> None:
    index = CentroidIndex(2)
    index.put("x", np.array([1, 0], dtype=np.float32))
    screen = index.screen(np.array([[0, 1]], dtype=np.float32), -1.0)
    same = np.array([0, 1], dtype=np.float32)
    for cid in ("a", "b", "c"):  # three started clusters with equal similarity: ties in start order
        index.put(cid, same)
        screen.touch(cid, same)
    index.remove("a")
    screen.touch("a", None)
    assert [c for c, _ in screen.nearest(0, same, 4)] == ["b", "c", "x"]
    index.put("a", same)  # an id back (a restore): after the others
    screen.touch("a", same)
    assert [c for c, _ in screen.nearest(0, same, 4)] == ["b", "c", "a", "x"]


# -- the pool through its screens ---------------------------------------------------------------
def grown_pool(rng: np.random.Generator, config: EvolutionConfig) -> tuple[SchemaPool, np.ndarray]:
    anchors = units(rng, 5)
    pool = SchemaPool("s", DIM, config)
    for i in range(40):
        v = anchors[i % 5] + 0.5 * units(rng, 1)[0] if i % 3 else units(rng, 1)[0]
        v = (v / np.linalg.norm(v)).astype(np.float32)
        chosen = pool.choose(v)
        pool.join(chosen, v, i, "a") if chosen is not None else pool.start(f"c{i}", v, i, "a")
    return pool, anchors


def test_merge_partners_from_the_merge_screen_are_those_of_a_full_search() -> None:
    rng = np.random.default_rng(7)
    config = EvolutionConfig(merge_threshold=0.45, assign_threshold=0.5, member_threshold=0.3)
    pool, anchors = grown_pool(rng, config)
    for j, anchor in enumerate(anchors):  # two halves of each idea, started apart: they should meet
        for half in ("a", "b"):
            noisy = anchor + 0.4 * units(rng, 3)
            noisy = (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)
            c = pool.start(f"{half}{j}", noisy[0], 50, "a")
            for v in noisy[1:]:
                pool.join(c, v, 51, "b")
    todo = [c for c in pool.clusters.values() if c.cluster_id[0] in "ab"] + sorted(
        pool.clusters.values(), key=lambda c: -c.size
    )[:4]
    pool.open_merge_screen(todo)
    merged = 0
    for column, cluster in enumerate(todo):
        if cluster.cluster_id not in pool.clusters:
            continue
        screened = pool.merge_partner(cluster, column)
        full = pool.merge_partner(cluster)
        assert screened[0] is full[0], cluster.cluster_id
        if full[0] is not None:
            assert screened[1] == pytest.approx(full[1], abs=1e-6)
            keep, _ = pool.merge(cluster, full[0], 100)
            merged += 1
            # The survivor changed: its own column is stale, so it searches the whole index.
            assert pool.merge_partner(keep, column)[0] is pool.merge_partner(keep)[0]
    pool.close_screen()
    assert merged  # the case the screen must get right happened


def test_reindexing_during_a_batch_keeps_screened_choices_exact() -> None:
    # Release and restore put a cluster back into the index with a new centroid (`add_loaded`).
    rng = np.random.default_rng(8)
    config = EvolutionConfig(assign_threshold=0.45, member_threshold=0.3)
    plain, anchors = grown_pool(np.random.default_rng(8), config)
    screened, _ = grown_pool(np.random.default_rng(8), config)
    batch = anchors[rng.integers(0, 5, 50)] + 0.5 * units(rng, 50)
    batch = (batch / np.linalg.norm(batch, axis=1, keepdims=True)).astype(np.float32)
    screened.open_screen(batch)
    for column, v in enumerate(batch):
        decisions = []
        for pool, col in ((plain, None), (screened, column)):
            if column % 10 == 5:  # a release: the largest cluster loses its oldest members, re-indexed
                big = max(pool.clusters.values(), key=lambda c: (c.size, c.cluster_id))
                big.vector_sum = (big.vector_sum - big.members.matrix[0]).astype(np.float32)
                big.size -= 1
                pool.add_loaded(big)
            if column == 30:  # a restore: a cluster read back from the store
                restored = Cluster("r1", "s", anchors[0] * 3, 3, 30.0, column, column, column)
                pool.add_loaded(restored)
            chosen = pool.choose(v, col)
            decisions.append(chosen.cluster_id if chosen is not None else None)
            if chosen is not None:
                pool.join(chosen, v, 100 + column, "b")
            else:
                pool.start(f"n{column}", v, 100 + column, "b")
        assert decisions[0] == decisions[1], column
    screened.close_screen()


def reference_evictable(pool: SchemaPool, now: float) -> list[Cluster]:
    """Eviction as it was written before (two passes, a set of ids)."""
    window_s = pool.config.window_s
    out = [c for c in pool.clusters.values() if c.state == "collecting" and c.last_seen < now - window_s]
    excess = len(pool.clusters) - len(out) - pool.config.max_clusters_per_schema
    if excess > 0:
        gone = {c.cluster_id for c in out}
        rest = [c for c in pool.clusters.values() if c.state == "collecting" and c.cluster_id not in gone]
        heat = np.array([c.heat for c in rest]) * np.power(
            0.5, np.maximum(0.0, now - np.array([c.heat_at for c in rest])) / pool.config.half_life_s
        )
        out.extend(rest[int(i)] for i in np.argsort(heat, kind="stable")[:excess])
    return out


def test_eviction_picks_the_same_clusters_in_the_same_order() -> None:
    rng = np.random.default_rng(9)
    config = EvolutionConfig(max_clusters_per_schema=20, window_days=1)
    pool = SchemaPool("s", DIM, config)
    for i, v in enumerate(units(rng, 60)):
        pool.start(f"c{i:03d}", v, (i // 6) * 3600.0, "a")  # six at a time: equal heat, ties broken by age
    for c in list(pool.clusters.values())[::7]:
        c.state = "patched"
    for c in list(pool.clusters.values())[3::5]:
        pool.join(c, units(rng, 1)[0], 12 * 3600.0, "b")
    pool.merge(pool.clusters["c010"], pool.clusters["c050"], 13 * 3600.0)  # heat adds up, one cluster goes
    released = pool.clusters["c020"]  # a release takes heat off and re-indexes the cluster
    released.heat, released.heat_at = 1.0, 14 * 3600.0
    pool.add_loaded(released)
    pool.add_loaded(Cluster("r1", "s", units(rng, 1)[0], 1, 10.0, 0.0, 0.0, 0.0))  # restored from the store
    for now in (10 * 3600.0, 30 * 3600.0, 40 * 3600.0):
        assert [c.cluster_id for c in pool.evictable(now)] == [c.cluster_id for c in reference_evictable(pool, now)]
    for cluster in pool.evictable(30 * 3600.0):  # a sweep: the index's arrays follow the removals
        pool.remove(cluster)
    assert [c.cluster_id for c in pool.evictable(40 * 3600.0)] == [
        c.cluster_id for c in reference_evictable(pool, 40 * 3600.0)
    ]


# -- cluster rows -------------------------------------------------------------------------------
def row(cluster_id: str, size: int, state: str = "collecting") -> ClusterRow:
    return ClusterRow(cluster_id, "s", state, size, 1.0 * size, 2.0, 3.0, 4.0, np.full(4, size, np.float32).tobytes())


def test_saving_a_cluster_again_updates_its_row_and_deleting_many_takes_only_those(tmp_path: Path) -> None:
    store = EvolutionStore(tmp_path / "e.db")
    for i in range(5):
        store.save_cluster(row(f"c{i}", 1))
    store.save_cluster(row("c2", 7, "queued"))
    rows = {r.cluster_id: r for r in store.clusters()}
    assert len(rows) == 5 and rows["c2"] == row("c2", 7, "queued")
    store.delete_clusters(["c1", "c3"])
    store.delete_clusters([])
    assert sorted(r.cluster_id for r in store.clusters()) == ["c0", "c2", "c4"]
    store.close()
