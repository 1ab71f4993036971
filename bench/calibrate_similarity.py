"""Calibrate the clustering method and similarity thresholds of the Differential Semantic Pool.

For each labelled corpus (replay format plus ``label``) and each method x threshold, the fragments are
clustered online in timestamp order, per scenario, exactly as the engine receives them, and the dual
gate is evaluated after every fragment (default gate: heat 50, 5 clients or 10 occurrences in 7 days).

Methods:
  single-link   join the cluster holding the most similar member, if >= t
  average-link  join the cluster with the highest mean similarity to its members, if >= t
  centroid      join the cluster with the most similar centroid, if >= t  (the pool's `SchemaPool`)
  centroid+merge  centroid, then merge clusters whose centroids reach m (the engine's method)

Metrics:
  cluster assignment  pairwise precision / recall / F1 over fragment pairs (two fragments belong together
                      when they carry the same non-noise label); "whole" = labelled intents whose fragments
                      all ended in one cluster
  triggers            a triggered cluster is a true positive when its majority label is an intent that should
                      trigger (``cluster:*``, ``conflict:*``) and was not triggered before; duplicates and
                      clusters of noise or weak intents are false positives; recall is over those intents

Conflict detection: for each labelled intent of the corpora (which must NOT be taken for an existing key) and
each paraphrase set of an existing key in ``conflict_probes.json`` (which must), the best
`conflicts.meaning_score` over the scenario's keys is listed; the threshold goes in the gap.

Then the chosen configuration is run through the real engine (replay) and its patches are listed per label.

    python -m bench.calibrate_similarity [--corpus FILE ...] [--json] [--quick] [--model DIR]

Progress goes to stderr; the table (or JSON with --json) to stdout. Takes ~1 min with the real model.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from an_agent.clock import from_rfc3339
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.conflicts import meaning_score
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.pool import Cluster, SchemaPool
from an_agent.evolution.replay import replay
from an_agent.evolution.trigger import evaluate_gate
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.registry import TemplateRegistry

DATA = Path(__file__).resolve().parent.parent / "tests" / "evolution" / "data"
CORPORA = [DATA / "dev_other_corpus.jsonl", DATA / "field_other_corpus.jsonl", DATA / "heldout_noise_corpus.jsonl"]
PROBES = DATA / "conflict_probes.json"


@dataclass(frozen=True)
class Item:
    index: int
    timestamp: float
    client_id: str
    schema_id: str
    text: str
    label: str


def should_trigger(label: str) -> bool:
    return label.startswith(("cluster:", "conflict:"))


def load(path: Path) -> list[Item]:
    items = []
    for index, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if not line.strip():
            continue
        row = json.loads(line)
        other = row["payload"].get("other")
        if isinstance(other, str) and other.strip():
            items.append(
                Item(
                    index,
                    from_rfc3339(row["timestamp"]),
                    row["client_id"],
                    row["schema_id"],
                    other,
                    row.get("label", "noise"),
                )
            )
    items.sort(key=lambda i: (i.timestamp, i.index))
    return items


class CachingEmbedder:
    """Embeds each distinct text once, across all runs."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.cache: dict[str, Vectors] = {}

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            for text, vector in zip(todo, self.inner.embed(todo), strict=True):
                self.cache[text] = vector
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.cache[t] for t in texts])


@dataclass
class Outcome:
    assignment: dict[int, str]  # item index -> final cluster id
    triggers: list[tuple[list[int], str | None]]  # members at trigger time, personal client


Similarity = Callable[[Vectors, Vectors], float]


def run_linkage(
    items: list[Item], vectors: dict[int, Vectors], threshold: float, mode: str, config: EvolutionConfig
) -> Outcome:
    """Online single- or average-link clustering with the same gate bookkeeping as the pool."""
    members: dict[str, list[int]] = {}
    state: dict[str, Cluster] = {}
    pools: dict[str, SchemaPool] = {}  # only for heat/window bookkeeping via SchemaPool.join
    triggers: list[tuple[list[int], str | None]] = []
    for item in items:
        pool = pools.setdefault(item.schema_id, SchemaPool(item.schema_id, 2, config))
        v = vectors[item.index]
        best, best_sim = None, -2.0
        for cid, idx in members.items():
            if state[cid].schema_id != item.schema_id:
                continue
            sims = np.stack([vectors[i] for i in idx]) @ v
            sim = float(sims.max() if mode == "single" else sims.mean())
            if sim > best_sim:
                best, best_sim = cid, sim
        dummy = np.array([1.0, 0.0], dtype=np.float32)
        if best is not None and best_sim >= threshold:
            pool.join(state[best], dummy, item.timestamp, item.client_id)
            members[best].append(item.index)
            cid = best
        else:
            cid = f"k{len(members)}"
            state[cid] = pool.start(cid, dummy, item.timestamp, item.client_id)
            members[cid] = [item.index]
        cluster = state[cid]
        if cluster.state == "collecting":
            gate = evaluate_gate(cluster, item.timestamp, config)
            if gate.passed:
                cluster.state = "patched"
                triggers.append((list(members[cid]), gate.client_id))
    return Outcome({i: cid for cid, idx in members.items() for i in idx}, triggers)


def run_centroid(items: list[Item], vectors: dict[int, Vectors], config: EvolutionConfig) -> Outcome:
    """The pool's own clustering (centroid assignment, centroid merge) with the engine's gate."""
    pools: dict[str, SchemaPool] = {}
    members: dict[str, list[int]] = {}
    triggers: list[tuple[list[int], str | None]] = []
    for number, item in enumerate(items):
        pool = pools.setdefault(item.schema_id, SchemaPool(item.schema_id, len(vectors[item.index]), config))
        v = vectors[item.index]
        cluster = pool.choose(v)
        if cluster is not None:
            pool.join(cluster, v, item.timestamp, item.client_id)
            members[cluster.cluster_id].append(item.index)
        else:
            cluster = pool.start(f"k{number}", v, item.timestamp, item.client_id)
            members[cluster.cluster_id] = [item.index]
        while True:
            partner, _ = pool.merge_partner(cluster)
            if partner is None:
                break
            keep, gone = pool.merge(cluster, partner, item.timestamp)
            members[keep.cluster_id].extend(members.pop(gone.cluster_id))
            cluster = keep
        if cluster.state == "collecting":
            gate = evaluate_gate(cluster, item.timestamp, config)
            if gate.passed:
                cluster.state = "patched"
                triggers.append((list(members[cluster.cluster_id]), gate.client_id))
    return Outcome({i: cid for cid, idx in members.items() for i in idx}, triggers)


def prf(tp: int, fp: int, fn: int) -> tuple[float, float, float]:
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score(items: list[Item], outcome: Outcome) -> dict[str, Any]:
    label = {i.index: i.label for i in items}
    idx = [i.index for i in items]
    tp = fp = fn = 0
    for a_pos, a in enumerate(idx):
        for b in idx[a_pos + 1 :]:
            same_true = label[a] == label[b] and label[a] != "noise"
            same_pred = outcome.assignment[a] == outcome.assignment[b]
            tp += same_true and same_pred
            fp += same_pred and not same_true
            fn += same_true and not same_pred
    pair_p, pair_r, pair_f = prf(tp, fp, fn)
    intents = defaultdict(set)
    for i in items:
        if i.label != "noise":
            intents[i.label].add(outcome.assignment[i.index])
    whole = sum(1 for clusters in intents.values() if len(clusters) == 1)
    expected = {lab for lab in intents if should_trigger(lab)}
    hit: set[str] = set()
    t_fp = 0
    personal_ok = 0
    for members, personal in outcome.triggers:
        majority = Counter(label[m] for m in members).most_common(1)[0][0]
        if majority in expected and majority not in hit:
            hit.add(majority)
            personal_ok += (personal is not None) == ("personal" in majority)
        else:
            t_fp += 1
    trig_p, trig_r, trig_f = prf(len(hit), t_fp, len(expected - hit))
    return {
        "pair_p": pair_p,
        "pair_r": pair_r,
        "pair_f1": pair_f,
        "whole": f"{whole}/{len(intents)}",
        "trig_p": trig_p,
        "trig_r": trig_r,
        "trig_f1": trig_f,
        "triggers": len(outcome.triggers),
        "personal_ok": f"{personal_ok}/{len(hit)}",
    }


def grid(quick: bool) -> list[tuple[str, float, float | None]]:
    if quick:
        return [("centroid+merge", t, m) for t in (0.30, 0.32, 0.35) for m in (0.45, 0.5, 0.55)]
    out: list[tuple[str, float, float | None]] = [("single-link", t, None) for t in (0.35, 0.4, 0.45, 0.5, 0.6, 0.85)]
    out += [("average-link", t, None) for t in (0.2, 0.25, 0.3, 0.35, 0.4, 0.5)]
    out += [("centroid", t, None) for t in (0.25, 0.28, 0.3, 0.32, 0.35, 0.4, 0.5, 0.85)]
    out += [("centroid+merge", t, m) for t in (0.28, 0.3, 0.32, 0.35, 0.4) for m in (0.4, 0.45, 0.5, 0.55, 0.6)]
    return out


def evaluate(corpora: dict[str, list[Item]], embedder: CachingEmbedder, quick: bool) -> list[dict[str, Any]]:
    vectors: dict[str, dict[int, Vectors]] = {}
    for name, items in corpora.items():
        vecs = embedder.embed([i.text for i in items])
        vectors[name] = {i.index: vecs[n] for n, i in enumerate(items)}
    rows = []
    for method, t, m in grid(quick):
        row: dict[str, Any] = {"method": method, "threshold": t, "merge": m}
        for name, items in corpora.items():
            if method in ("single-link", "average-link"):
                outcome = run_linkage(items, vectors[name], t, method.split("-")[0], EvolutionConfig())
            else:
                config = EvolutionConfig(assign_threshold=t, merge_threshold=m if m is not None else 1.0)
                outcome = run_centroid(items, vectors[name], config)
            row[name] = score(items, outcome)
        rows.append(row)
    return rows


def choose(rows: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    """Best mean trigger F1 over the corpora, then best mean pairwise F1."""

    def key(row: dict[str, Any]) -> tuple[float, float]:
        return (sum(row[n]["trig_f1"] for n in names) / len(names), sum(row[n]["pair_f1"] for n in names) / len(names))

    return max(rows, key=key)


def conflict_table(corpora: dict[str, list[Item]], embedder: Embedder) -> list[dict[str, Any]]:
    """Best key-anchor similarity of each intent (negative) and each probe set (positive)."""
    registry = TemplateRegistry.default()
    sets: list[tuple[str, str, str | None, list[str]]] = []
    for name, items in corpora.items():
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        for i in items:
            if i.label.startswith("cluster:"):
                groups[(i.label, i.schema_id)].append(i.text)
        sets += [(f"{name}:{label}", schema, None, texts) for (label, schema), texts in groups.items()]
    for probe in json.loads(PROBES.read_text(encoding="utf-8"))["probes"]:
        sets.append((f"probe:{probe['key_name']}", probe["schema_id"], probe["key_name"], probe["texts"]))
    rows = []
    for name, schema, expected, texts in sets:
        vectors = embedder.embed(texts)
        best = max(
            (meaning_score(vectors, k, embedder), k.key_name)
            for k in registry.get(schema).keys
            if k.key_name != "other"
        )
        rows.append({"set": name, "expected_key": expected, "best_key": best[1], "similarity": round(best[0], 3)})
    return rows


def engine_check(path: Path, embedder: Embedder) -> dict[str, list[str]]:
    """Replay a corpus through the real engine with the shipped defaults: patches per label."""
    lines = path.read_text(encoding="utf-8").splitlines()
    labels = [json.loads(line).get("label", "noise") if line.strip() else "" for line in lines]
    report = replay(lines, embedder).to_dict()
    members = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    out: dict[str, list[str]] = defaultdict(list)
    for patch in report["patches"]:
        majority = Counter(labels[m] for m in members[patch["cluster_id"]]).most_common(1)[0][0]
        keys = [f"{k['key_name']}:{k['key_type']}" for k in patch["new_keys"]]
        keys += [f"~{k['key_name']}" for k in patch["modified_keys"]]
        who = f" client={patch['client_id']}" if patch["client_id"] else ""
        out[majority].append(", ".join(keys) + who)
    return dict(out)


def fmt(value: float) -> str:
    return f"{value:.2f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", type=Path, help="labelled corpus (default: the three in tests/)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument("--quick", action="store_true", help="only the centroid+merge grid around the default")
    parser.add_argument(
        "--model", type=Path, metavar="DIR", help="a sentence-transformers model directory (default MiniLM)"
    )
    args = parser.parse_args(argv)
    paths = args.corpus or CORPORA
    corpora = {p.stem: load(p) for p in paths}
    names = list(corpora)
    started = time.perf_counter()
    model = MiniLMEmbedder(path=args.model)
    model.load()
    embedder = CachingEmbedder(model)
    print(f"model loaded in {model.load_seconds:.1f} s; evaluating ...", file=sys.stderr)
    rows = evaluate(corpora, embedder, args.quick)
    best = choose(rows, names)
    default = EvolutionConfig()
    conflicts = conflict_table(corpora, embedder)
    checks = {p.stem: engine_check(p, embedder) for p in paths}
    elapsed = time.perf_counter() - started
    if args.json:
        json.dump(
            {
                "rows": rows,
                "best": best,
                "default": {"assign_threshold": default.assign_threshold, "merge_threshold": default.merge_threshold},
                "engine": checks,
                "seconds": elapsed,
            },
            sys.stdout,
            indent=2,
        )
        print()
        return 0
    head = f"{'method':<15}{'t':>6}{'merge':>6}"
    for name in names:
        head += f" | {name[:18]:<18} pairP pairR pairF whole trigP trigR trigF"
    print(head)
    for row in rows:
        line = f"{row['method']:<15}{row['threshold']:>6.2f}{(row['merge'] or 0):>6.2f}"
        for name in names:
            s = row[name]
            line += (
                f" | {'':<18} {fmt(s['pair_p'])}  {fmt(s['pair_r'])}  {fmt(s['pair_f1'])}  {s['whole']:>4} "
                f" {fmt(s['trig_p'])}  {fmt(s['trig_r'])}  {fmt(s['trig_f1'])}"
            )
        print(line)
    print(f"\nbest by mean trigger F1, then pairwise F1: {best['method']} t={best['threshold']} m={best['merge']}")
    print(f"shipped default: centroid+merge t={default.assign_threshold} m={default.merge_threshold}")
    negatives = [r["similarity"] for r in conflicts if r["expected_key"] is None]
    positives = [r["similarity"] for r in conflicts if r["expected_key"] is not None]
    print("\nconflict detection (best meaning_score of the cluster against an existing key):")
    for r in conflicts:
        expect = f"should refine {r['expected_key']}" if r["expected_key"] else "should be a new key"
        print(f"  {r['set']:<44} {r['similarity']:.3f} {r['best_key']:<24} ({expect})")
    print(
        f"  new intents max {max(negatives):.3f}; paraphrases of existing keys min {min(positives):.3f}; "
        f"shipped conflict_threshold {default.conflict_threshold}"
    )
    for name, per_label in checks.items():
        print(f"\nengine replay of {name} with the defaults (patches per majority label):")
        for label, patches in sorted(per_label.items()):
            print(f"  {label:<28} {' | '.join(patches)}")
    print(f"\n({elapsed:.0f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
