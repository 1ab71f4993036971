"""Fixtures for schema-evolution tests: a small deterministic embedder, the real model, engines."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from an_agent.clock import ManualClock, from_rfc3339
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.engine import EvolutionEngine
from an_agent.evolution.policy import DefaultUpdatePolicy
from an_agent.schemas.embedding import Vectors, normalise_rows
from an_agent.store.evolution import EvolutionStore

DATA = Path(__file__).parent / "data"
T0 = from_rfc3339("2026-10-05T00:00:00Z")
_STOP = {"a", "an", "the", "to", "of", "in", "on", "is", "are", "for", "and", "please", "me", "my", "with", "at"}


class FakeEmbedder:
    """Bag of content words hashed into 64 dimensions: texts sharing words are similar, others ~orthogonal.

    Deterministic (sha1, not Python's salted hash) and instant, for tests of clustering and lifecycle
    logic; the real model is tested separately (marked slow).
    """

    dimension = 64

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                if word not in _STOP:
                    out[row, int(hashlib.sha1(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        return normalise_rows(out)


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture(scope="session")
def minilm() -> MiniLMEmbedder:
    embedder = MiniLMEmbedder()
    embedder.load()
    return embedder


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


# Small gates so that a handful of fragments trigger: heat 25 (3 fragments), 2 clients or 3 occurrences.
SMALL = EvolutionConfig(heat_threshold=25, min_distinct_clients=2, min_occurrences=3, min_payloads_for_decision=4,
                        assign_threshold=0.6, merge_threshold=0.8, conflict_threshold=0.9)


@pytest.fixture
def engine(tmp_path: Path, fake: FakeEmbedder, clock: ManualClock) -> Iterator[EvolutionEngine]:
    eng = EvolutionEngine(EvolutionStore(tmp_path / "evolution.db"), fake, config=SMALL, clock=clock,
                          policy=DefaultUpdatePolicy(admins=["alice"]))
    try:
        yield eng
    finally:
        eng.close()
