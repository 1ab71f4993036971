"""Fixtures for schema-evolution tests: a small deterministic embedder, the real model, engines."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.clock import ManualClock, from_rfc3339
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.engine import EvolutionEngine
from an_agent.evolution.policy import DefaultUpdatePolicy
from an_agent.store.evolution import EvolutionStore

DATA = Path(__file__).parent / "data"
T0 = from_rfc3339("2026-10-05T00:00:00Z")
from fake_embedder import FakeEmbedder  # noqa: E402  (tests/ is on sys.path, see tests/conftest.py)


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


# Small gates so that a handful of fragments trigger: heat 25 (3 fragments), 2 clients or 3 occurrences;
# a trigger's patch is made at once (no typing sample to wait for: test_evolution_typing_wait.py covers it).
SMALL = EvolutionConfig(
    typing_sample=1,
    heat_threshold=25,
    min_distinct_clients=2,
    min_occurrences=3,
    min_payloads_for_decision=4,
    assign_threshold=0.6,
    merge_threshold=0.8,
    conflict_threshold=0.9,
)


@pytest.fixture
def engine(tmp_path: Path, fake: FakeEmbedder, clock: ManualClock) -> Iterator[EvolutionEngine]:
    eng = EvolutionEngine(
        EvolutionStore(tmp_path / "evolution.db"),
        fake,
        config=SMALL,
        clock=clock,
        policy=DefaultUpdatePolicy(admins=["alice"]),
    )
    try:
        yield eng
    finally:
        eng.close()
