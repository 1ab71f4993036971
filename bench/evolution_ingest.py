"""Ingest throughput of the Differential Semantic Pool, and how its cost grows with the pool.

Three numbers:

1. model load time: importing torch + sentence-transformers and loading all-MiniLM-L6-v2 (reported alone);
2. end-to-end throughput, what an agent's learner achieves on a burst: structured payloads (one
   ``other`` fragment each) through `EvolutionEngine.accept_payloads` in batches of ``--batch``, as the
   agent's background learner (runtime/schemas.py) takes the payloads that queued up meanwhile:
   validation, one embedding call with the real model, one SQLite transaction. Patch synthesis stays off
   that path, as in the learner (which synthesises when nothing is queued): the triggers the burst
   fires are synthesised after it. The headline rate is the ingest's (synthesis off the path); the rate
   with synthesis counted in, the split into embedding, synthesis and the rest, the machine's load
   average and the process's CPU time are reported too (on a shared machine the wall rate says as much
   about the neighbours);
3. growth: per-fragment pool cost (assignment, merge, heat, gate, SQLite write-through, eviction) as the
   pool receives 1k, 10k, 100k fragments. Embedding 100k distinct texts would take the model minutes and
   measure the model again, so the growth run embeds ``--base`` real texts once and feeds 100k vectors:
   half recurring intents (a real vector plus small noise, renormalised), half one-offs in random
   directions, which each open a cluster: the worst case for the centroid index, bounded only by
   ``max_clusters_per_schema`` and eviction. Phrases needed by patch synthesis go through the real model.

The clock advances 6 s per fragment (100k fragments = a week), so eviction of cold clusters happens as
in production; the cost must stay flat because assignment is one matrix-vector product against a bounded
number of centroids (``max_clusters_per_schema``).

    python -m bench.evolution_ingest [--quick] [--json] [--fragments N] [--threads N] [--matmul fp32|bf16]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from an_agent.clock import ManualClock
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.engine import EvolutionEngine
from an_agent.schemas.embedding import Embedder, Vectors, normalise_rows
from an_agent.store.evolution import EvolutionStore

SCHEMAS = ("fault_diagnosis_v1", "coverage_compensation_v1", "energy_saving_adjust_v1", "complaint_ticket_v1")
SUBJECTS = [
    "the cabinet",
    "the site",
    "the radio unit",
    "the backhaul",
    "the battery",
    "the generator",
    "the mast",
    "the roaming partner",
    "the IoT meters",
    "the stadium",
    "the hospital",
    "the tunnel",
    "the core router",
    "the enterprise customer",
    "the drive test team",
    "the landlord",
    "the planning tool",
    "the fibre link",
    "the power supply",
    "the cooling system",
    "the antenna",
    "the neighbour cell",
    "the transport team",
    "the night shift",
    "the KPI dashboard",
    "the ticket system",
    "the fleet manager",
    "the vendor",
]
STATES = [
    "is overheating",
    "needs a maintenance window",
    "reports alarms",
    "must not be touched",
    "was upgraded",
    "is on battery power",
    "has many sensitive devices",
    "expects a crowd tonight",
    "wants an SMS",
    "asks for a PDF report",
    "needs a rollback plan",
    "lost connectivity",
    "is under audit",
    "is flooded",
    "wants weekly energy figures",
    "changed its contact",
    "is shared with another operator",
    "needs a site visit",
    "has a firmware issue",
    "is out of spare parts",
]
TAILS = [
    "",
    "today",
    "again",
    "since this morning",
    "according to the customer",
    "as usual",
    "in the north",
    "near the motorway",
    "after the storm",
    "before noon",
]


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    """``n`` distinct, plausible 'other' fragments (subject x state x tail, numbered when repeated)."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        text = f"{rng.choice(SUBJECTS)} {rng.choice(STATES)} {rng.choice(TAILS)}".strip()
        if text in seen:
            text = f"{text} (case {len(out)})"
        seen.add(text)
        out.append(text)
    return out


class TimedEngine(EvolutionEngine):
    """The engine, timing patch synthesis and the embedding it does (bench instrumentation only)."""

    synthesis_s = 0.0
    synthesis_embedding_s = 0.0
    synthesised = 0

    def _synthesise_due(self, force: bool = False) -> int:
        timed = self.embedder if isinstance(self.embedder, TimedEmbedder) else None
        started, embedded = time.perf_counter(), timed.seconds if timed else 0.0
        made = 0
        try:
            made = super()._synthesise_due(force)
            return made
        finally:
            self.synthesis_s += time.perf_counter() - started
            self.synthesis_embedding_s += (timed.seconds - embedded) if timed else 0.0
            self.synthesised += made


class VectorTable:
    """An `Embedder` that serves given vectors for known texts and asks the real model for the rest."""

    def __init__(self, inner: Embedder, table: dict[str, Vectors]) -> None:
        self.inner = inner
        self.table = table

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        missing = [t for t in texts if t not in self.table]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self.table[text] = vector
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.table[t] for t in texts])


def items_for(texts: Sequence[str], rng: random.Random) -> list[tuple[str, str, str]]:
    return [(f"client-{rng.randrange(60)}", rng.choice(SCHEMAS), text) for text in texts]


class TimedEmbedder:
    """Wraps the model to time the engine's own embedding calls."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seconds = 0.0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        started = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - started


# The required keys of each scenario (any valid values): the payloads' ``other`` carries the fragment.
BASE_PAYLOADS: dict[str, dict[str, Any]] = {
    "fault_diagnosis_v1": {"fault_type": "base_station_outage"},
    "coverage_compensation_v1": {"target_cell_ids": ["CELL-0301"]},
    "energy_saving_adjust_v1": {"cell_ids": ["CELL-0401"], "action": "reduce"},
    "complaint_ticket_v1": {"ticket_id": "TT-88213", "complaint_category": "no_coverage"},
}


def envelopes_for(texts: Sequence[str], rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    """(client_id, structured payload) per text, with the text as the payload's ``other``."""
    out = []
    for client_id, schema_id, text in items_for(texts, rng):
        out.append((client_id, {"schema_id": schema_id, "payload": {**BASE_PAYLOADS[schema_id], "other": text}}))
    return out


def end_to_end(model: MiniLMEmbedder, n: int, batch: int, workdir: Path) -> dict[str, Any]:
    rng = random.Random(1)
    texts = synthetic_texts(n, seed=1)
    clock = ManualClock(1_790_000_000.0)
    embedder = TimedEmbedder(model)
    engine = TimedEngine(EvolutionStore(workdir / "e2e.db"), embedder, clock=clock)
    payloads = envelopes_for(texts, rng)
    load_before = os.getloadavg()[0]
    cpu0, started = time.process_time(), time.perf_counter()
    try:
        for start in range(0, n, batch):
            results = engine.accept_payloads(payloads[start : start + batch], synthesise=False)
            assert not [r for r in results if isinstance(r, Exception)], "a bench payload was refused"
            clock.advance(6.0 * batch)
        # The learner's turn once nothing is queued; forced, as at a drain, so that every trigger of the
        # burst is counted (a trigger otherwise waits for its typing sample).
        engine.synthesise_due(force=True)
    finally:
        engine.close()
    total = time.perf_counter() - started
    cpu = time.process_time() - cpu0
    fragment_embedding = embedder.seconds - engine.synthesis_embedding_s
    return {
        "fragments": n,
        "batch": batch,
        "seconds": round(total, 3),
        # What the learner ingests while payloads keep coming (synthesis waits), and with synthesis counted.
        "fragments_per_s": round(n / (total - engine.synthesis_s), 1),
        "fragments_per_s_with_synthesis": round(n / total, 1),
        "embedding_per_fragment_ms": round(1000 * fragment_embedding / n, 3),
        "rest_per_fragment_ms": round(1000 * (total - engine.synthesis_s - fragment_embedding) / n, 3),
        "synthesis_per_fragment_ms": round(1000 * engine.synthesis_s / n, 3),
        "patches_synthesised": engine.synthesised,
        "synthesis_per_patch_s": round(engine.synthesis_s / engine.synthesised, 3) if engine.synthesised else None,
        "cpu_per_fragment_ms": round(1000 * cpu / n, 3),
        "torch_threads": torch_threads(),
        "matmul": model.matmul_precision,
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def torch_threads() -> int | None:
    torch = sys.modules.get("torch")
    return int(torch.get_num_threads()) if torch is not None else None


def growth(
    model: MiniLMEmbedder, n: int, base: int, batch: int, workdir: Path, one_off_share: float = 0.5
) -> dict[str, Any]:
    rng = random.Random(2)
    nprng = np.random.default_rng(2)
    base_texts = synthetic_texts(base, seed=2)
    base_vectors = model.embed(base_texts)
    # Recurring intents: a real vector plus noise (cosine ~0.8 to it); one-offs: random directions.
    picks = nprng.integers(0, base, size=n)
    noise = nprng.normal(scale=0.035, size=(n, base_vectors.shape[1])).astype(np.float32)
    vectors = normalise_rows(base_vectors[picks] + noise)
    one_off = nprng.random(n) < one_off_share
    vectors[one_off] = normalise_rows(nprng.normal(size=(int(one_off.sum()), base_vectors.shape[1])))
    texts = [f"{base_texts[p]} #{i}" for i, p in enumerate(picks)]
    table = VectorTable(model, dict(zip(texts, vectors, strict=True)))
    clock = ManualClock(1_790_000_000.0)
    engine = TimedEngine(EvolutionStore(workdir / "growth.db"), table, clock=clock)
    marks = [m for m in (1_000, 10_000, 100_000) if m <= n] or [n]
    samples: dict[int, dict[str, Any]] = {}
    costs: list[float] = []
    cpu_costs: list[float] = []
    try:
        for start in range(0, n, batch):
            chunk = items_for(texts[start : start + batch], rng)
            t0, c0 = time.perf_counter(), time.process_time()
            engine.ingest(chunk)
            # Patch synthesis (off the ingest path, timed in the end-to-end run) is not pool cost.
            costs.append((time.perf_counter() - t0) / len(chunk))
            # The ingest runs in this thread alone (no model: the vectors are known), so the process's CPU
            # time is its own: steadier than wall time on a machine shared with other work.
            cpu_costs.append((time.process_time() - c0) / len(chunk))
            engine.synthesise_due()
            clock.advance(6.0 * len(chunk))
            done = start + len(chunk)
            for mark in marks:
                if mark not in samples and done >= mark:
                    # Median over the last 10 % of the run up to the mark (at least 1000 fragments):
                    # robust to other jobs on a shared machine.
                    last = max(1, max(1_000, mark // 10) // batch)
                    clusters = engine.live_cluster_count()
                    samples[mark] = {
                        "fragments": mark,
                        "per_fragment_ms": round(1000 * float(np.median(costs[-last:])), 3),
                        "cpu_per_fragment_ms": round(1000 * float(np.median(cpu_costs[-last:])), 3),
                        "live_clusters": clusters,
                        "patches": len(engine.patches()),
                    }
            if done % 10_000 < batch:
                print(f"  growth: {done}/{n} fragments", file=sys.stderr, flush=True)
    finally:
        engine.close()
    return {"base_texts": base, "points": [samples[m] for m in marks]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="500 end-to-end, growth to 10k")
    parser.add_argument("--fragments", type=int, default=None, help="growth run length (default 100000)")
    parser.add_argument("--e2e", type=int, default=None, help="end-to-end fragments (default 2000)")
    parser.add_argument("--base", type=int, default=3000, help="real texts behind the growth vectors")
    parser.add_argument("--batch", type=int, default=256, help="fragments per ingest call")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads for the model, 0 for torch's default of one per core (default: the agent's, 1)",
    )
    parser.add_argument(
        "--matmul",
        choices=("auto", "fp32", "bf16"),
        default="auto",
        help="arithmetic of the model's linear layers (default: the agent's default, bf16 where the CPU has AMX)",
    )
    parser.add_argument(
        "--model", type=Path, metavar="DIR", help="a sentence-transformers model directory (default MiniLM)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    n_e2e = args.e2e or (500 if args.quick else 2000)
    n_growth = args.fragments or (10_000 if args.quick else 100_000)

    t0 = time.perf_counter()
    if args.threads is None:
        model = MiniLMEmbedder(path=args.model, matmul=args.matmul)
    else:
        model = MiniLMEmbedder(path=args.model, threads=args.threads or None, matmul=args.matmul)
    model.load()
    load_s = time.perf_counter() - t0
    model.embed(["warm up"])
    print(f"model loaded in {load_s:.1f} s", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        e2e = end_to_end(model, n_e2e, args.batch, Path(tmp))
        print(f"end to end: {e2e['fragments_per_s']} fragments/s", file=sys.stderr)
        grow = growth(model, n_growth, min(args.base, n_growth), args.batch, Path(tmp))
    result = {"model_load_s": round(load_s, 2), "end_to_end": e2e, "growth": grow}
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
        return 0
    print(f"model load (torch + sentence-transformers + {args.model or 'all-MiniLM-L6-v2'}): {load_s:.2f} s")
    print(
        f"end to end, {e2e['fragments']} payloads in batches of {e2e['batch']}: {e2e['fragments_per_s']} "
        f"fragments/s ingested, synthesis off the path ({e2e['fragments_per_s_with_synthesis']} with the burst's "
        f"synthesis counted in); per fragment: "
        f"embedding {e2e['embedding_per_fragment_ms']} ms + validation and pool {e2e['rest_per_fragment_ms']} ms + "
        f"synthesis {e2e['synthesis_per_fragment_ms']} ms ({e2e['patches_synthesised']} patches, "
        f"{e2e['synthesis_per_patch_s']} s each); CPU {e2e['cpu_per_fragment_ms']} ms per fragment; torch threads "
        f"{e2e['torch_threads']}, {e2e['matmul']} linear layers; load average {e2e['load_average'][0]} -> "
        f"{e2e['load_average'][1]}"
    )
    print("pool cost per fragment as the pool grows (vectors precomputed, SQLite write-through included):")
    print(f"  {'fragments':>10}  {'ms/fragment':>11}  {'CPU ms':>7}  {'live clusters':>13}  {'patches':>7}")
    for point in grow["points"]:
        print(
            f"  {point['fragments']:>10}  {point['per_fragment_ms']:>11}  {point['cpu_per_fragment_ms']:>7}  "
            f"{point['live_clusters']:>13}  {point['patches']:>7}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
