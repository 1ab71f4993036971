"""Fixtures for schema-evolution tests: a small deterministic embedder, the real model, engines."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from an_agent.clock import ManualClock, from_rfc3339
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.engine import EvolutionEngine
from an_agent.evolution.policy import DefaultUpdatePolicy
from an_agent.evolution.replay import replay
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


def patches_by_label(corpus: str, embedder: MiniLMEmbedder) -> dict[str, dict[str, Any]]:
    """Replay a labelled corpus of ``DATA`` with the shipped defaults: each patch by the majority label of its
    cluster. Asserts that every recurring intent (``cluster:*``, ``conflict:*``) has exactly one patch and
    nothing else has one."""
    lines = (DATA / corpus).read_text().splitlines()
    labels = [json.loads(line)["label"] for line in lines]
    report = replay(lines, embedder).to_dict()
    members = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    by_label: dict[str, dict[str, Any]] = {}
    for patch in report["patches"]:
        label = Counter(labels[m] for m in members[patch["cluster_id"]]).most_common(1)[0][0]
        assert label.startswith(("cluster:", "conflict:")) and label not in by_label, (label, patch["patch_id"])
        by_label[label] = patch
    assert set(by_label) == {lab for lab in labels if lab.startswith(("cluster:", "conflict:"))}
    return by_label
