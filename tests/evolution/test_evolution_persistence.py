"""All pool, patch, metric and queue state survives closing and re-opening the SQLite store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_evolution_lifecycle import DAY, ENERGY, HOT, envelope, new_key, trigger

from an_agent.clock import ManualClock
from an_agent.errors import StoreError
from an_agent.evolution.engine import EvolutionEngine
from an_agent.store.evolution import EvolutionStore
from conftest import SMALL, FakeEmbedder


def open_engine(path: Path, clock: ManualClock, **overrides: object) -> EvolutionEngine:
    config = SMALL.with_overrides(overrides) if overrides else SMALL
    return EvolutionEngine(EvolutionStore(path), FakeEmbedder(), config=config, clock=clock)


def test_pool_heat_and_window_survive_a_restart(tmp_path: Path, clock: ManualClock) -> None:
    db = tmp_path / "evolution.db"
    engine = open_engine(db, clock)
    engine.accept_payload("a", envelope(HOT))
    clock.advance(60)
    engine.accept_payload("b", envelope(HOT))
    before = engine.clusters()
    engine.close()

    clock.advance(60)
    engine = open_engine(db, clock)
    try:
        after = engine.clusters()
        assert [(c.cluster_id, c.size, c.distinct_clients, c.state) for c in after] == [
            (c.cluster_id, c.size, c.distinct_clients, c.state) for c in before
        ]
        assert after[0].heat == pytest.approx(before[0].heat, rel=1e-3)
        # The third fragment triggers only if the restored window remembers the first two.
        engine.accept_payload("a", envelope(HOT))
        assert len(engine.patches()) == 1 and engine.clusters()[0].size == 3
    finally:
        engine.close()


def test_patches_key_states_metrics_and_queue_survive_a_restart(tmp_path: Path, clock: ManualClock) -> None:
    db = tmp_path / "evolution.db"
    engine = open_engine(db, clock, max_experimental_keys=1)
    patch = trigger(engine, clock)
    key = new_key(patch)
    for i in range(3):
        engine.accept_payload(f"user{i}", envelope(**{key: True}))
    for client in ("a", "b", "a"):
        engine.accept_payload(client, envelope("roaming partner users affected"))
    metrics, queued, patches = engine.key_metrics(patch["patch_id"], key), engine.queued(), engine.patches()
    assert len(queued) == 1
    engine.close()

    engine = open_engine(db, clock, max_experimental_keys=1)
    try:
        assert engine.patches() == patches
        assert engine.key_metrics(patch["patch_id"], key) == metrics
        assert engine.queued() == queued
        assert engine.template(ENERGY, "x").key(key) is not None
        engine.accept_payload("user9", envelope(**{key: True}))
        clock.advance(7 * DAY)
        engine.tick()  # 7 payloads: 4 use the key (57 %) -> promoted; the queued trigger then goes ahead
        assert engine.key_state(patch["patch_id"], key) == "stable"
        assert engine.queued() == [] and len(engine.patches()) == 2
    finally:
        engine.close()

    engine = open_engine(db, clock)
    try:
        assert engine.key_state(patch["patch_id"], key) == "stable" and len(engine.patches()) == 2
    finally:
        engine.close()


def test_store_uses_wal_and_reports_unusable_paths(tmp_path: Path) -> None:
    store = EvolutionStore(tmp_path / "s.db")
    store.close()
    mode = sqlite3.connect(tmp_path / "s.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    (tmp_path / "file").write_text("x")
    with pytest.raises(StoreError, match="cannot open evolution database"):
        EvolutionStore(tmp_path / "file" / "db.sqlite")


def test_failed_transaction_leaves_nothing_behind(tmp_path: Path) -> None:
    store = EvolutionStore(tmp_path / "s.db")
    try:
        with pytest.raises(RuntimeError), store.transaction():
            store.add_fragment("c1", ENERGY, 1.0, "a", "text", None)
            raise RuntimeError("crash in the middle")
        assert store.fragments("c1") == []
        with store.transaction(), store.transaction():  # nested: only the outer one commits
            store.add_fragment("c1", ENERGY, 1.0, "a", "text", 7)
        assert [f.ref for f in store.fragments("c1")] == [7]
    finally:
        store.close()


def test_an_evicted_clusters_fragments_stay_until_they_leave_the_window(tmp_path: Path, clock: ManualClock) -> None:
    # Retention (docs/evolution.md, section 10): eviction deletes the cluster's row; its fragments go
    # with the window prune, as every fragment does (no scattered deletes per evicted one-off).
    engine = open_engine(tmp_path / "evolution.db", clock, max_clusters_per_schema=1)
    try:
        first = engine.ingest([("a", ENERGY, "the landlord changed the gate code")])[0]
        clock.advance(3600)
        second = engine.ingest([("b", ENERGY, "cooling fans are noisy at night")])[0]
        engine.tick()  # beyond the cap: the colder (older) cluster is evicted
        assert [c.cluster_id for c in engine.clusters()] == [second]
        assert [f.text for f in engine.store.fragments(first)] == ["the landlord changed the gate code"]
        clock.advance(8 * DAY)
        engine.tick()  # both fragments left the 7-day window
        assert engine.store.fragments(first) == [] and engine.store.fragments(second) == []
    finally:
        engine.close()


def test_the_window_prune_keeps_the_fragments_of_a_waiting_cluster(tmp_path: Path, clock: ManualClock) -> None:
    # The prune runs only when a fragment is older than the window (a sweep inside the first window skips
    # it and its pass over the clusters); then it spares the fragments of queued and pending clusters.
    engine = open_engine(tmp_path / "evolution.db", clock)
    try:
        waiting = engine.ingest([("a", ENERGY, "the landlord changed the gate code")])[0]
        other = engine.ingest([("b", ENERGY, "cooling fans are noisy at night")])[0]
        assert engine.store.oldest_fragment_ts() == clock.now()
        engine.tick()  # inside the window: nothing pruned
        assert len(engine.store.fragments(waiting)) == len(engine.store.fragments(other)) == 1
        engine._state.pool(ENERGY).clusters[waiting].state = "queued"
        clock.advance(8 * DAY)
        engine.tick()
        assert len(engine.store.fragments(waiting)) == 1 and engine.store.fragments(other) == []
    finally:
        engine.close()
    empty = EvolutionStore(tmp_path / "empty.db")
    assert empty.oldest_fragment_ts() is None
    empty.close()
