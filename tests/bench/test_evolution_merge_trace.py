"""bench.evolution_merge_trace: each merge test is recorded with its numbers and the labels of both clusters."""

from __future__ import annotations

from collections import Counter

import numpy as np
from bench.evolution_merge_trace import Decision, summary, traced

from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.pool import SchemaPool


def unit(*values: float) -> np.ndarray:
    v = np.array(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_a_merge_test_is_recorded_with_its_verdict_and_label_mix() -> None:
    pool = SchemaPool("s", 3, EvolutionConfig())
    intent = [unit(1, 0.1, 0), unit(1, -0.1, 0.05), unit(1, 0, -0.1)]
    other = [unit(0.2, 1, 0), unit(0.1, 1, 0.1)]
    labels = (np.stack(intent + other), ["cluster:a"] * 3 + ["noise"] * 2)
    big = pool.start("c1", intent[0], 0, "x")
    for v in intent[1:]:
        pool.join(big, v, 1, "y")
    small = pool.start("c2", other[0], 2, "z")
    pool.join(small, other[1], 3, "w")
    decisions: list[Decision] = []
    original = SchemaPool.cohere
    with traced({"s": labels}, decisions):
        merged = pool.cohere(big, small)
    assert SchemaPool.cohere is original  # restored on exit
    (d,) = decisions
    assert d.merged is merged is False  # another idea: far across, tight within
    assert d.small == {"noise": 2} and d.large == {"cluster:a": 3} and d.kind == "diff"
    assert d.between == float(big.vector_sum @ small.vector_sum) / 6
    assert abs(d.ratio - d.between / big.inner_similarity()) < 1e-6
    assert summary(decisions) == [
        f"diff refused   1  between {d.between:.2f}-{d.between:.2f}  ratio {d.ratio:.2f}-{d.ratio:.2f}"
    ]


def test_same_means_both_majorities_are_one_recurring_intent() -> None:
    def decision(small: dict[str, int], large: dict[str, int]) -> Decision:
        return Decision(True, 0.5, 0.3, 0.8, 0.4, 0.4, 0.3, Counter(small), Counter(large))

    assert decision({"cluster:a": 2, "noise": 1}, {"cluster:a": 5}).kind == "same"
    assert decision({"noise": 2, "cluster:a": 1}, {"cluster:a": 5}).kind == "diff"
    assert decision({"weak:b": 3}, {"weak:b": 2}).kind == "diff"  # a weak intent never should trigger
    assert decision({"cluster:a": 2}, {"cluster:b": 5}).kind == "diff"
