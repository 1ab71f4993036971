"""bench.evolution_corpora: an intent is pure when exactly one patch gathers it at purity >= 0.9."""

from __future__ import annotations

from typing import Any

from bench.evolution_corpora import score, table


def patch(pid: str, cluster: str, key: str) -> dict[str, Any]:
    return {"patch_id": pid, "cluster_id": cluster, "new_keys": [{"key_name": key}], "modified_keys": []}


def test_pure_split_impure_missing_and_spurious_are_told_apart() -> None:
    labels = (
        ["cluster:a"] * 10
        + ["cluster:b"] * 8
        + ["noise"] * 2  # b's cluster holds 8 of 10: 80 %
        + ["cluster:c"] * 6  # c is split over two patches
        + ["cluster:d"] * 3  # d makes no patch
        + ["noise"] * 4  # a patch of one-offs
    )
    clusters = [
        {"cluster_id": "ca", "members": list(range(0, 10))},
        {"cluster_id": "cb", "members": list(range(10, 20))},
        {"cluster_id": "cc1", "members": [20, 21, 22]},
        {"cluster_id": "cc2", "members": [23, 24, 25]},
        {"cluster_id": "cd", "members": [26, 27, 28]},
        {"cluster_id": "cn", "members": [29, 30, 31, 32]},
    ]
    report = {
        "clusters": clusters,
        "patches": [
            patch("p1", "ca", "a_key"),
            patch("p2", "cb", "b_key"),
            patch("p3", "cc1", "c_one"),
            patch("p4", "cc2", "c_two"),
            patch("p5", "cn", "nonsense"),
        ],
    }
    s = score(report, labels, "toy")
    assert s.pure == ["cluster:a"]
    assert s.not_pure == {"cluster:b": [0.8], "cluster:c": [1.0, 1.0], "cluster:d": []}
    assert s.spurious == ["p5"]
    assert s.names["cluster:c"] == ["c_one", "c_two"]
    text = table([s])
    assert "| toy | 1/4 | 1 | b (80 %), c (100 % / 100 %), d (none) |" in text
    assert "| **all** | **1/4** | **1** | |" in text
