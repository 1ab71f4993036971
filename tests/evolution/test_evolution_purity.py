"""Cluster purity (issue 14, round 2): at a patch the cluster becomes its core, and it does not drift after.

Logic with hand-made vectors and the fake embedder; the corpora with the real model are in
test_evolution_replay.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from an_agent.evolution.cohesion import Core, admission_of, core_of
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.engine import EvolutionEngine
from an_agent.evolution.pool import SchemaPool
from an_agent.evolution.release import release_set_aside

SCHEMA = "energy_saving_adjust_v1"


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_the_admission_test_is_the_cores_outlier_test() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        base = rng.normal(size=16)
        rows = base + rng.normal(scale=rng.uniform(0.5, 2.0), size=(12, 16))
        rows[-1] = rng.normal(size=16)  # a stranger
        vectors = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
        admission = admission_of(vectors)
        assert admission is not None
        loo = [
            float(vectors[i] @ (total := vectors.sum(axis=0) - vectors[i]) / np.linalg.norm(total))
            for i in range(len(vectors))
        ]
        sims = vectors @ vectors.T
        np.fill_diagonal(sims, -np.inf)
        knn = np.sort(sims, axis=1)[:, -3:].mean(axis=1)
        refused = {i for i in range(len(vectors)) if not admission.admits(loo[i], float(knn[i]))}
        assert refused == set(core_of(vectors).outliers)
    assert admission_of(vectors[:3]) is None  # below 4 fragments nothing is set aside


def test_after_its_patch_a_cluster_takes_only_what_its_core_would_keep() -> None:
    # Loose thresholds (as on MiniLM): before the patch, a fragment close to one member joins.
    config = EvolutionConfig(assign_threshold=0.3, member_threshold=0.2)
    pool = SchemaPool("s", 3, config)
    core = [unit(1, 0.1, 0), unit(1, -0.1, 0.05), unit(1, 0, -0.1), unit(1, 0.05, 0.1), unit(1, -0.05, -0.05)]
    cluster = pool.start("c", core[0], 0, "a")
    for i, v in enumerate(core[1:]):
        pool.join(cluster, v, i, f"k{i}")
    drifting = unit(1, 2, 0)  # 0.45 to the centroid and the members: joins by the ordinary rule
    assert pool.choose(drifting) is cluster
    cluster.admission = admission_of(np.stack(core))
    assert pool.choose(drifting) is None  # ... but the core would set it aside
    assert pool.choose(unit(1, 0.08, 0.02)) is cluster  # a paraphrase still joins
    # The same rule for merges: a group the core would not keep does not ride in.
    group = pool.start("g", drifting, 0, "x")
    pool.join(group, unit(1, 1.9, 0.1), 1, "y")
    assert not pool.cohere(cluster, group)
    cluster.admission = None
    assert pool.cohere(cluster, group)


def test_at_a_patch_the_set_aside_fragments_leave_the_cluster(engine: EvolutionEngine) -> None:
    texts = [
        "hot cabinet alarm",
        "cabinet alarm hot",
        "hot alarm cabinet today",
        "cabinet hot alarm now",
        "hot cabinet",
    ]
    landed = engine.ingest([(f"c{i}", SCHEMA, t) for i, t in enumerate(texts)])
    assert len(set(landed)) == 1
    state = engine._state
    cluster = state.pools[SCHEMA].clusters[landed[0]]
    fragments = engine.store.fragments(cluster.cluster_id)
    vectors = state.phrases.embed([f.text for f in fragments])
    core = Core((0, 1, 2, 3), (4,), (), 0.9, 5)  # the last fragment set aside
    heat_before = cluster.heat_now(engine.clock.now(), engine.config.half_life_s)
    events: list[str] = []
    engine.on_event(lambda e: events.append(f"{e.kind} {e.cluster_id} {e.detail}"))
    went = release_set_aside(state, cluster, fragments, vectors, core, engine.clock.now())
    engine._flush()  # events are delivered after the transaction, by the engine
    assert len(went) == 1 and went[0] != cluster.cluster_id
    assert events == [
        f"fragments-released {cluster.cluster_id} 1 of 5 fragments set aside by the core left for {went[0]}"
    ]
    assert cluster.size == 4 and np.allclose(cluster.vector_sum, vectors[:4].sum(axis=0), atol=1e-5)
    assert "c4" not in cluster.clients and "c4" not in cluster.window_clients and len(cluster.window) == 4
    assert cluster.heat_now(engine.clock.now(), engine.config.half_life_s) == pytest.approx(heat_before - 10)
    assert cluster.admission is not None and len(cluster.members) == 4
    assert [f.text for f in engine.store.fragments(went[0])] == ["hot cabinet"]
    assert [f.text for f in engine.store.fragments(cluster.cluster_id)] == texts[:4]
    # The store says the same after a restart of the pool: size and centroid were saved.
    row = next(r for r in engine.store.clusters() if r.cluster_id == cluster.cluster_id)
    assert row.size == 4
