"""Synthesis embeds what it needs ahead, in one call, and remembers it (`state.CachedEmbedder`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from an_agent.clock import ManualClock
from an_agent.evolution.engine import EvolutionEngine
from an_agent.evolution.state import CachedEmbedder
from an_agent.schemas.embedding import Vectors
from an_agent.store.evolution import EvolutionStore
from conftest import SMALL, FakeEmbedder


class RecordingEmbedder(FakeEmbedder):
    """The fake model, recording the texts of each call."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        return super().embed(texts)


def test_the_cache_computes_each_text_once_and_prefetches_in_one_call() -> None:
    inner = RecordingEmbedder()
    cache = CachedEmbedder(inner)
    cache.prefetch(["battery backup", "generator", "battery backup"])
    assert inner.batches == [["battery backup", "generator"]]
    vectors = cache.embed(["generator", "battery backup", "mains power"])
    assert inner.batches[1:] == [["mains power"]]  # only the unknown text
    np.testing.assert_array_equal(vectors, inner.embed(["generator", "battery backup", "mains power"]))


def test_remembered_fragments_are_served_without_the_model_and_do_not_push_phrases_out() -> None:
    inner = RecordingEmbedder()
    cache = CachedEmbedder(inner, limit=10, recent_limit=3)
    cache.prefetch(["cooling failure"])
    fragments = [f"fragment {i}" for i in range(5)]
    cache.remember(fragments, FakeEmbedder().embed(fragments))
    calls = len(inner.batches)
    # The three newest fragments are known; the older two were forgotten and are computed again.
    cache.embed([*fragments[2:], "cooling failure"])
    assert len(inner.batches) == calls
    cache.embed(fragments[:1])
    assert inner.batches[-1] == ["fragment 0"]


def test_a_synthesis_embeds_its_phrases_in_one_call_and_the_next_one_reuses_the_anchors(
    tmp_path: Path, clock: ManualClock
) -> None:
    embedder = RecordingEmbedder()
    engine = EvolutionEngine(EvolutionStore(tmp_path / "evolution.db"), embedder, config=SMALL, clock=clock)
    try:

        def feed(texts: list[str]) -> list[list[str]]:
            """One batch of payloads; the embedding calls it caused after the ingest call."""
            before = len(embedder.batches)
            payload = {"fault_type": "power_failure"}
            results = engine.accept_payloads(
                [
                    (f"client-{i % 2}", {"schema_id": "fault_diagnosis_v1", "payload": {**payload, "other": text}})
                    for i, text in enumerate(texts)
                ]
            )
            assert not [r for r in results if isinstance(r, Exception)], results
            assert embedder.batches[before] == texts  # the ingest call
            return embedder.batches[before + 1 :]

        first = feed(["battery backup low at site", "battery backup low again", "battery backup low tonight"])
        assert len(engine.patches()) == 1
        # One call for the synthesis, without the fragments (embedded at ingest) but with the anchors of
        # the keys the client sees (conflict detection).
        assert len(first) == 1, first
        assert not {"battery backup low at site", "battery backup low again"} & set(first[0])
        assert "fault type" in first[0]
        second = feed(["rollback plan needed first", "rollback plan needed today", "rollback plan needed now"])
        assert len(engine.patches()) == 2
        assert len(second) == 1 and "fault type" not in second[0]  # the anchors were remembered
    finally:
        engine.close()
