"""Every merge decision of a replay, with the label mix of both clusters: the data a merge rule is judged on.

Replays labelled corpora (replay format with ``label``) with the shipped defaults and the real model, and
prints one row per call of `SchemaPool.cohere` (the merge test, docs/evolution.md section 4): the verdict,
the centroid similarity, the mean similarity across the two clusters (``between``), its ratio to the larger
cluster's inner similarity, both inner similarities, the member affinity of the smaller cluster, and the
labels of both (majority first). A decision is ``same`` when both clusters' majority label is the same
recurring intent, ``diff`` otherwise (a second idea or one-offs); the summary gives, per kind and verdict,
how many and the range of ``between`` and ``ratio``: where the ranges of ``same`` and ``diff`` overlap, no
threshold on that number separates them.

    python -m bench.evolution_merge_trace FILE [FILE ...]
    python -m bench.evolution_merge_trace FILE --rows      # every decision, not only the summary

The product never reads ``label``; only this report does. Labels are found back from the vectors the pool
sees (each member vector is matched with the most similar embedded corpus line of its scenario).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from an_agent.evolution import pool as pool_module
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.pool import Cluster, SchemaPool, between_similarity
from an_agent.evolution.replay import replay


@dataclass(frozen=True)
class Decision:
    """One merge test: its verdict, its numbers, and the labels of both clusters (smaller first)."""

    merged: bool
    centroid: float
    between: float
    ratio: float
    inner_small: float
    inner_large: float
    affinity: float
    small: Counter[str]
    large: Counter[str]

    @property
    def kind(self) -> str:
        """``same`` when both clusters' majority label is one recurring intent, else ``diff``."""
        a, b = self.small.most_common(1)[0][0], self.large.most_common(1)[0][0]
        return "same" if a == b and a.startswith(("cluster:", "conflict:")) else "diff"

    def row(self) -> str:
        def mix(c: Counter[str]) -> str:
            return ", ".join(f"{k.split(':')[-1]} {v}" for k, v in c.most_common())

        return (
            f"{'merged ' if self.merged else 'refused'} {self.kind}  cs {self.centroid:.2f}  between {self.between:.2f}"
            f"  ratio {self.ratio:.2f}  inner {self.inner_small:.2f}/{self.inner_large:.2f}  affinity "
            f"{self.affinity:.2f}  [{mix(self.small)}] + [{mix(self.large)}]"
        )


@contextmanager
def traced(labels_of: dict[str, tuple[np.ndarray, list[str]]], out: list[Decision]) -> Iterator[None]:
    """Wrap `SchemaPool.cohere` so that each call appends a `Decision` to ``out`` (restored on exit)."""
    original = pool_module.SchemaPool.cohere

    def mix(cluster: Cluster) -> Counter[str]:
        vectors, labels = labels_of[cluster.schema_id]
        return Counter(labels[int(np.argmax(vectors @ v))] for v in cluster.members)

    def cohere(self: SchemaPool, a: Cluster, b: Cluster) -> bool:
        merged = original(self, a, b)
        small, large = (a, b) if a.size <= b.size else (b, a)
        between = between_similarity(a, b)
        affinity = float(np.mean([large.member_affinity(v) for v in small.members])) if small.members else 1.0
        out.append(
            Decision(
                merged,
                float(a.centroid() @ b.centroid()),
                between,
                between / large.inner_similarity(),
                small.inner_similarity(),
                large.inner_similarity(),
                affinity,
                mix(small),
                mix(large),
            )
        )
        return merged

    pool_module.SchemaPool.cohere = cohere  # type: ignore[method-assign]
    try:
        yield
    finally:
        pool_module.SchemaPool.cohere = original  # type: ignore[method-assign]


def trace(path: Path, embedder: MiniLMEmbedder) -> list[Decision]:
    """The merge decisions of a replay of the corpus at ``path`` (shipped defaults)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records = [json.loads(line) for line in lines]
    by_schema: dict[str, list[dict[str, object]]] = defaultdict(list)
    for record in records:
        by_schema[str(record["schema_id"])].append(record)
    labels_of = {
        schema_id: (
            embedder.embed([str(r["payload"]["other"]) for r in rows]),  # type: ignore[index]
            [str(r.get("label", "")) for r in rows],
        )
        for schema_id, rows in by_schema.items()
    }
    decisions: list[Decision] = []
    with traced(labels_of, decisions):
        replay(lines, embedder)
    return decisions


def summary(decisions: Sequence[Decision]) -> list[str]:
    """Per kind and verdict: how many decisions and the range of ``between`` and ``ratio``."""
    out = []
    for kind in ("same", "diff"):
        for merged in (True, False):
            group = [d for d in decisions if d.kind == kind and d.merged == merged]
            if not group:
                continue
            b = [d.between for d in group]
            r = [d.ratio for d in group]
            out.append(
                f"{kind} {'merged ' if merged else 'refused'} {len(group):3d}  between {min(b):.2f}-{max(b):.2f}"
                f"  ratio {min(r):.2f}-{max(r):.2f}"
            )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="labelled corpora (replay format)")
    parser.add_argument("--rows", action="store_true", help="print every decision, not only the summary")
    args = parser.parse_args(argv)
    embedder = MiniLMEmbedder()
    everything: list[Decision] = []
    for path in args.files:
        decisions = trace(path, embedder)
        everything += decisions
        print(f"== {path.name}: {len(decisions)} merge tests")
        if args.rows:
            print("\n".join(d.row() for d in sorted(decisions, key=lambda d: (not d.merged, d.kind, d.between))))
        print("\n".join(summary(decisions)))
    if len(args.files) > 1:
        print("== all corpora")
        print("\n".join(summary(everything)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
