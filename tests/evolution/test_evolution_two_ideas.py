"""A patch is made from one idea (issue 14, round 3): a second idea leaves the core, values of a slot stay.

Logic with hand-made vectors (a word-sum embedder, so that taking a word out of a text changes its
vector); the held-out recall corpus with the real model is in test_evolution_replay.py.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt
import pytest

from an_agent.evolution.cohesion import Core, core_of, value_fragments

DIM = 64


def ideas(rng: np.random.Generator, sizes: Sequence[int], shared: float, own: float) -> npt.NDArray[np.float32]:
    """Unit vectors of groups of fragments: a component every group shares, one per group, and noise."""
    common = rng.normal(size=DIM)
    rows = []
    for size in sizes:
        axis = rng.normal(size=DIM)
        for _ in range(size):
            rows.append(shared * common + own * axis + rng.normal(size=DIM))
    out = np.array(rows)
    return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def inner(vectors: npt.NDArray[np.float32]) -> float:
    sims = vectors @ vectors.T
    n = len(vectors)
    return float((sims.sum() - n) / (n * (n - 1)))


@pytest.mark.parametrize("seed", [0, 1, 6])  # draws where 2-means from the centroid finds no group
def test_two_ideas_of_comparable_size_split_even_when_the_second_is_large(seed: int) -> None:
    # 8 + 6 fragments, both loose (inner 0.30-0.40), 0.15-0.19 across: what a merge of two intents that
    # share a vague wording gives (obstructions and temporary cells on the recall corpus: 0.35 / 0.36
    # inside, 0.22 across). 2-means from the centroid settles on single fragments here; the cluster's
    # bisection finds the two ideas, and the smaller one (43 % of the cluster) leaves the core.
    vectors = ideas(np.random.default_rng(seed), (8, 6), shared=0.65, own=0.55)
    first, second = vectors[:8], vectors[8:]
    assert float((first @ second.T).mean()) < 0.2 < 0.3 < min(inner(first), inner(second))
    own_clients = [f"a{i // 2}" for i in range(8)] + [f"b{i // 2}" for i in range(6)]
    core = core_of(vectors, own_clients)
    assert len(core.second_idea) >= 3 and set(core.second_idea) <= set(range(8, 14))
    assert set(range(8, 14)) <= {*core.outliers, *core.second_idea}
    assert set(core.members) <= set(range(8)) and len(core.members) >= 6
    # The same halves written by the same clients (each wrote in both) are two wordings of one intent.
    same_clients = [f"c{i % 4}" for i in range(8)] + [f"c{i % 4}" for i in range(6)]
    assert core_of(vectors, same_clients).second_idea == ()
    assert core_of(vectors).second_idea == ()  # without senders, only a small group riding in is looked for


@pytest.mark.parametrize("seed", range(5))
def test_one_loose_idea_is_not_split(seed: int) -> None:
    # One intent worded as varied instances (inner 0.34-0.43, the same noise): no bisection is two ideas.
    vectors = ideas(np.random.default_rng(seed), (14,), shared=0.65, own=0.55)
    assert 0.3 < inner(vectors) < 0.45
    assert core_of(vectors, [f"c{i}" for i in range(14)]).second_idea == ()


class WordSumEmbedder:
    """A text's vector is the normalised sum of fixed random vectors of its words."""

    def __init__(self) -> None:
        self._rng = np.random.default_rng(11)
        self._words: dict[str, npt.NDArray[np.float64]] = {}

    def _word(self, word: str) -> npt.NDArray[np.float64]:
        if word not in self._words:
            self._words[word] = self._rng.normal(size=DIM)
        return self._words[word]

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        rows = np.array([sum((self._word(w) for w in t.split()), np.zeros(DIM)) for t in texts])
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        return (rows / np.where(norms > 0, norms, 1.0)).astype(np.float32)


CORE = [
    "site running on battery",
    "the site is on battery now",
    "still on battery at the site",
    "site back on mains",
    "the site is on mains again",
    "running on mains at the site",
]
CORE_VALUES = ["battery"] * 3 + ["mains"] * 3


def closed_set_of(values: Sequence[str]) -> Callable[[Sequence[int]], list[str | None]]:
    """A stand-in for the closed-set inference: a word is a value when two of the fragments asked name it."""

    def closed_set(indexes: Sequence[int]) -> list[str | None]:
        counts = Counter(values[i] for i in indexes)
        return [values[i] if counts[values[i]] >= 2 else None for i in indexes]

    return closed_set


def test_a_set_aside_group_held_together_by_its_value_rejoins() -> None:
    # The generator lines are a group only through "generator": without it they are the core's frame.
    texts = [*CORE, "the site switched to generator", "generator running at the site", "site on generator now"]
    values = [*CORE_VALUES, "generator", "generator", "generator"]
    embedder = WordSumEmbedder()
    core = Core(tuple(range(6)), (), (6, 7, 8), 0.0, 9)
    assert value_fragments(core, texts, embedder.embed(texts), embedder, closed_set_of(values)) == {6, 7, 8}


def test_a_second_idea_that_contains_a_candidate_word_stays_out_and_takes_its_values_with_it() -> None:
    # A second idea of its own that happens to name "battery" and "shop" (a closed set battery / mains /
    # shop over the whole cluster): without the word it is still a group, so it is not values of the
    # slot; and once it is out, "shop" is no value of what stays, so the outlier naming it stays out too,
    # while the outlier naming battery (a rare wording of a value) is taken back.
    texts = [
        *CORE,
        "the battery shop sells phone cases",
        "phone cases at the battery shop",
        "shop phone deals on cases",
        "battery only since the storm",
        "a shop opened near the site",
    ]
    values = [*CORE_VALUES, "battery", "battery", "shop", "battery", "shop"]
    embedder = WordSumEmbedder()
    core = Core(tuple(range(6)), (9, 10), (6, 7, 8), 0.0, 11)
    assert value_fragments(core, texts, embedder.embed(texts), embedder, closed_set_of(values)) == {9}
