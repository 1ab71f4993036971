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


def patches_with_purity(corpus: str, embedder: MiniLMEmbedder) -> dict[str, tuple[dict[str, Any], float]]:
    """Replay a labelled corpus of ``DATA`` with the shipped defaults: each patch, with its cluster's purity,
    by the majority label of its cluster. Asserts that no patch is spurious and no intent has two."""
    lines = (DATA / corpus).read_text().splitlines()
    labels = [json.loads(line)["label"] for line in lines]
    report = replay(lines, embedder).to_dict()
    members = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    got: dict[str, tuple[dict[str, Any], float]] = {}
    for patch in report["patches"]:
        cluster = members[patch["cluster_id"]]
        label, count = Counter(labels[m] for m in cluster).most_common(1)[0]
        assert label.startswith(("cluster:", "conflict:")) and label not in got, (label, patch["patch_id"])
        got[label] = (patch, count / len(cluster))
    return got


def patches_by_label(corpus: str, embedder: MiniLMEmbedder) -> dict[str, dict[str, Any]]:
    """`patches_with_purity` without the purities, asserting too that every recurring intent (``cluster:*``,
    ``conflict:*``) has a patch."""
    got = patches_with_purity(corpus, embedder)
    labels = [json.loads(line)["label"] for line in (DATA / corpus).read_text().splitlines()]
    assert set(got) == {lab for lab in labels if lab.startswith(("cluster:", "conflict:"))}
    return {label: patch for label, (patch, _) in got.items()}


# A power-source slot for the tests of closed sets: one value dominates; "mains" shares one fragment with
# "battery" (the old and the new source).
POWER = [
    "site is running on battery power right now",
    "we are on batteries, the mains supply dropped",
    "battery power only at this site, save what you can",
    "still on battery, the utility has not restored power",
    "the cabinet switched over to the generator",
    "running on battery backup after the grid failure",
    "a portable generator is feeding the site",
    "site is back on mains, relax the saving later",
    "batteries are draining fast at the hub",
]
