"""Differential Semantic Pool: centroid assignment, merging, heat decay, windows, eviction, the dual gate."""

from __future__ import annotations

import math

import numpy as np
import pytest

from an_agent.errors import ConfigError
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.pool import MERGE_BETWEEN, MERGE_RATIO, CentroidIndex, SchemaPool, between_similarity, decayed
from an_agent.evolution.trigger import evaluate_gate

HOUR = 3600.0
DAY = 86400.0


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_heat_halves_every_half_life() -> None:
    assert decayed(80.0, 0.0, 24 * HOUR, 24 * HOUR) == pytest.approx(40.0)
    assert decayed(80.0, 0.0, 48 * HOUR, 24 * HOUR) == pytest.approx(20.0)
    assert decayed(80.0, 10.0, 5.0, 24 * HOUR) == 80.0  # no decay backwards


def test_join_adds_increment_on_top_of_decayed_heat() -> None:
    pool = SchemaPool("s", 3, EvolutionConfig())
    c = pool.start("c1", unit(1, 0, 0), 0.0, "a")
    pool.join(c, unit(1, 0.1, 0), 24 * HOUR, "b")
    assert c.heat_now(24 * HOUR, pool.config.half_life_s) == pytest.approx(15.0)  # 10 -> 5, +10
    assert c.size == 2 and dict(c.window_clients) == {"a": 1, "b": 1}


def test_a_fragment_joins_the_nearest_centroid_above_the_threshold() -> None:
    pool = SchemaPool("s", 3, EvolutionConfig(assign_threshold=0.9, member_threshold=0.9))
    pool.start("x", unit(1, 0, 0), 0, "a")
    pool.start("y", unit(0, 1, 0), 0, "a")
    cluster = pool.choose(unit(1, 0.2, 0))
    assert cluster is not None and cluster.cluster_id == "x"
    assert pool.choose(unit(1, 1, 0)) is None  # 0.71 to both centroids: starts its own cluster


def test_noise_close_to_the_centroid_but_not_to_the_members_is_rejected() -> None:
    # Two paraphrase families pull the centroid between them; a one-off that sits near that centroid
    # (it "shares a word" with both) but near none of the members must not join.
    config = EvolutionConfig(assign_threshold=0.6, member_threshold=0.8)
    pool = SchemaPool("s", 3, config)
    c = pool.start("c", unit(1, 0, 0), 0, "a")
    for i, v in enumerate([unit(1, 0.05, 0), unit(0, 1, 0), unit(0.05, 1, 0), unit(1, 0, 0.02)]):
        pool.join(c, v, i, f"k{i}")
    noise = unit(1, 1, 0)
    assert float(c.centroid() @ noise) >= config.assign_threshold
    assert c.member_affinity(noise) < config.member_threshold
    assert pool.choose(noise) is None
    paraphrase = unit(1, 0.03, 0.01)
    assert pool.choose(paraphrase) is c and c.member_affinity(paraphrase) > 0.99


def test_clusters_whose_centroids_meet_merge_and_keep_the_larger_id() -> None:
    config = EvolutionConfig(merge_threshold=0.85)
    pool = SchemaPool("s", 2, config)
    big = pool.start("big", unit(1, 0), 0, "a")
    pool.join(big, unit(1, 0), 1, "b")
    small = pool.start("small", unit(0.6, 0.8), 2, "c")
    assert pool.merge_partner(small)[0] is None  # 0.6 < 0.85
    pool.join(small, unit(1, 0.05), 3, "d")  # its centroid moves towards big: 0.88
    partner, sim = pool.merge_partner(small)
    assert partner is big and sim >= 0.85
    keep, gone = pool.merge(small, partner, 3)
    assert keep is big and gone.cluster_id == "small"
    assert keep.size == 4 and set(keep.window_clients) == {"a", "b", "c", "d"}
    assert set(pool.clusters) == {"big"}
    assert keep.heat_now(3, config.half_life_s) == pytest.approx(40.0, rel=1e-3)


def test_a_tight_group_closer_to_itself_than_to_a_cluster_does_not_merge_into_it() -> None:
    # A weak intent's pair ("send the energy report to the site owner") has a close member in an
    # intent's cluster each, so the member check passes; across the two, the fragments are far less
    # similar than the cluster's own fragments are to each other: two ideas, no merge.
    config = EvolutionConfig(member_threshold=0.2)
    pool = SchemaPool("s", 4, config)
    intent = pool.start("intent", unit(1, 0.6, 0, 0), 0, "a")
    for i, v in enumerate([unit(1, -0.6, 0, 0), unit(1, 0, 0.6, 0), unit(1, 0, -0.6, 0), unit(1, 0.3, 0.3, 0)]):
        pool.join(intent, v, i, f"c{i}")
    pair = pool.start("pair", unit(0.2, 1, 0, 0.3), 0, "p")
    pool.join(pair, unit(0.2, 1, 0, -0.3), 1, "q")
    assert np.mean([intent.member_affinity(v) for v in pair.members]) >= config.member_threshold  # the old check
    between = between_similarity(intent, pair)
    assert between < MERGE_BETWEEN and between < MERGE_RATIO * intent.inner_similarity()
    assert not pool.cohere(intent, pair)
    # Another part of the same idea (its fragments as close to the cluster's as those are to each other).
    half = pool.start("half", unit(1, 0.5, -0.2, 0), 0, "h")
    pool.join(half, unit(1, -0.4, 0.3, 0), 1, "g")
    assert between_similarity(intent, half) >= MERGE_RATIO * intent.inner_similarity()
    assert pool.cohere(intent, half)


def test_inner_similarity_is_the_mean_over_distinct_pairs() -> None:
    pool = SchemaPool("s", 3, EvolutionConfig())
    vectors = [unit(1, 0, 0), unit(1, 1, 0), unit(0, 1, 1)]
    c = pool.start("c", vectors[0], 0, "a")
    assert c.inner_similarity() == 1.0
    for v in vectors[1:]:
        pool.join(c, v, 0, "b")
    pairs = [float(vectors[i] @ vectors[j]) for i in range(3) for j in range(i + 1, 3)]
    assert c.inner_similarity() == pytest.approx(np.mean(pairs), abs=1e-6)


def test_two_clusters_with_patches_never_merge() -> None:
    pool = SchemaPool("s", 2, EvolutionConfig(merge_threshold=0.5))
    a = pool.start("a", unit(1, 0), 0, "x")
    b = pool.start("b", unit(1, 0.1), 0, "y")
    a.state = b.state = "patched"
    assert pool.merge_partner(a)[0] is None
    b.state = "collecting"
    assert pool.merge_partner(a)[0] is b


def test_window_forgets_old_fragments() -> None:
    config = EvolutionConfig(window_days=7)
    pool = SchemaPool("s", 2, config)
    c = pool.start("c", unit(1, 0), 0, "a")
    pool.join(c, unit(1, 0), 1 * DAY, "b")
    c.prune_window(7.5 * DAY, config.window_s)
    assert list(c.window) == [(1 * DAY, "b")] and dict(c.window_clients) == {"b": 1}
    assert dict(c.clients) == {"a": 1, "b": 1}  # lifetime counts stay


def test_cold_collecting_clusters_are_evicted_and_the_index_is_bounded() -> None:
    config = EvolutionConfig(max_clusters_per_schema=3, window_days=1)
    pool = SchemaPool("s", 8, config)
    rng = np.random.default_rng(1)
    for i in range(6):
        pool.start(f"c{i}", unit(*rng.normal(size=8)), i * HOUR, "a")
    pool.clusters["c0"].state = "patched"
    gone = {c.cluster_id for c in pool.evictable(6 * HOUR)}
    assert gone == {"c1", "c2", "c3"}  # the coldest collecting ones, never the patched one
    assert {c.cluster_id for c in pool.evictable(3 * DAY)} == {"c1", "c2", "c3", "c4", "c5"}


def test_centroid_index_grows_and_reuses_slots() -> None:
    index = CentroidIndex(2, capacity=2)
    for i in range(5):
        index.put(f"c{i}", unit(1, i))
    assert len(index) == 5
    index.remove("c4")
    assert index.nearest(unit(1, 4), exclude="c3")[0] == "c2"
    index.put("new", unit(0, 1))
    assert index.nearest(unit(0, 1))[0] == "new"
    assert index.nearest(unit(1, 0))[1] == pytest.approx(1.0)


def test_empty_index_has_no_nearest() -> None:
    assert CentroidIndex(2).nearest(unit(1, 0)) == (None, -math.inf)


class TestDualGate:
    config = EvolutionConfig()  # heat 50 AND (5 clients OR 10 occurrences in 7 days)

    def feed(self, clients: list[str], spacing: float) -> tuple[SchemaPool, float]:
        pool = SchemaPool("s", 2, self.config)
        c = pool.start("c", unit(1, 0), 0, clients[0])
        t = 0.0
        for client in clients[1:]:
            t += spacing
            pool.join(c, unit(1, 0), t, client)
        return pool, t

    def test_heat_alone_is_not_enough(self) -> None:
        pool, t = self.feed(["a", "b", "a", "b", "a", "b", "a"], 60)  # heat ~70, 2 clients, 7 occurrences
        gate = evaluate_gate(pool.clusters["c"], t, self.config)
        assert gate.heat >= 50 and not gate.passed

    def test_five_distinct_clients_pass_once_the_heat_is_there(self) -> None:
        pool, t = self.feed(["a", "b", "c", "d", "e"], 60)
        gate = evaluate_gate(pool.clusters["c"], t, self.config)
        assert gate.distinct_clients == 5 and gate.heat < 50 and not gate.passed  # 5 x 10, minus 4 minutes of decay
        pool.join(pool.clusters["c"], unit(1, 0), t + 60, "a")
        gate = evaluate_gate(pool.clusters["c"], t + 60, self.config)
        assert gate.passed and gate.client_id is None and gate.distinct_clients == 5

    def test_ten_occurrences_from_one_client_pass_as_personal(self) -> None:
        pool, t = self.feed(["a"] * 10, 600)
        gate = evaluate_gate(pool.clusters["c"], t, self.config)
        assert gate.passed and gate.client_id == "a"

    def test_spread_out_fragments_never_gather_the_heat(self) -> None:
        pool, t = self.feed(["a", "b", "c", "d", "e", "f"], 2 * DAY)  # 6 clients, but heat stays ~13
        gate = evaluate_gate(pool.clusters["c"], t, self.config)
        assert gate.heat < 50 and not gate.passed

    def test_occurrences_outside_the_window_do_not_count(self) -> None:
        pool, t = self.feed(["a"] * 9, 3600)
        cluster = pool.clusters["c"]
        pool.join(cluster, unit(1, 0), t + 8 * DAY, "a")  # the other nine left the window meanwhile
        gate = evaluate_gate(cluster, t + 8 * DAY, self.config)
        assert gate.occurrences == 1 and not gate.passed


def test_an_incoherent_cluster_does_not_trigger() -> None:
    config = EvolutionConfig(assign_threshold=0.0)
    pool = SchemaPool("s", 6, config)
    axes = np.eye(6, dtype=np.float32)
    c = pool.start("c", axes[0], 0, "a")
    for i in range(1, 6):
        pool.join(c, axes[i], 0, f"client{i}")
    gate = evaluate_gate(c, 0, config)
    assert gate.heat >= 50 and gate.distinct_clients >= 5
    assert gate.cohesion == pytest.approx(6**0.5 / 6) and not gate.passed  # 0.41 < 0.55
    assert evaluate_gate(c, 0, config.with_overrides({"min_cohesion": 0.4})).passed


def test_config_overrides_are_checked() -> None:
    config = EvolutionConfig().with_overrides({"assign_threshold": "0.4", "heat_threshold": None})
    assert config.assign_threshold == 0.4 and config.heat_threshold == 50
    with pytest.raises(ConfigError, match="unknown evolution setting"):
        EvolutionConfig().with_overrides({"nope": 1})
    with pytest.raises(ConfigError, match="half_life_hours"):
        EvolutionConfig(half_life_hours=0)
    with pytest.raises(ConfigError, match="expected int"):
        EvolutionConfig().with_overrides({"min_occurrences": "many"})


def test_screened_choices_are_the_unscreened_ones() -> None:
    # A batch compared with the centroids in one product must decide exactly as one fragment at a time,
    # although the clusters it joins and starts change the centroids while the batch is placed.
    rng = np.random.default_rng(5)
    config = EvolutionConfig(assign_threshold=0.5, member_threshold=0.45)
    anchors = rng.normal(size=(6, 16)).astype(np.float32)
    batch = [anchors[int(i)] + rng.normal(scale=0.5, size=16).astype(np.float32) for i in rng.integers(0, 6, 120)]
    batch += [rng.normal(size=16).astype(np.float32) for _ in range(20)]  # one-offs: they start clusters
    rng.shuffle(batch)
    batch = [(v / np.linalg.norm(v)).astype(np.float32) for v in batch]
    plain, screened = SchemaPool("s", 16, config), SchemaPool("s", 16, config)
    for pool in (plain, screened):  # some clusters before the batch
        for i, v in enumerate(batch[:20]):
            chosen = pool.choose(v)
            pool.join(chosen, v, i, "a") if chosen is not None else pool.start(f"c{i}", v, i, "a")
    screened.open_screen(np.stack(batch[20:]))
    decisions: dict[str, list[str | None]] = {"plain": [], "screened": []}
    for column, v in enumerate(batch[20:]):
        for name, pool, col in (("plain", plain, None), ("screened", screened, column)):
            if column in (40, 80):  # a merge and an eviction while the batch is placed
                largest = sorted(pool.clusters.values(), key=lambda c: (-c.size, c.cluster_id))
                pool.merge(largest[0], largest[1], 100 + column)
                pool.remove(largest[-1])
            chosen = pool.choose(v, col)
            decisions[name].append(chosen.cluster_id if chosen is not None else None)
            if chosen is not None:
                pool.join(chosen, v, 100 + column, "b")
            else:
                pool.start(f"n{column}", v, 100 + column, "b")
    screened.close_screen()
    assert decisions["plain"] == decisions["screened"]
    assert None in decisions["plain"] and len(set(decisions["plain"])) > 3  # both kinds of decision happened
