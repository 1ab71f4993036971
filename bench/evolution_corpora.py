"""Issue 31's score over every labelled corpus: intents gathered into exactly one pure patch, spurious patches.

Each corpus of ``tests/evolution/data/*.jsonl`` is replayed (what `an-agent schema replay FILE --json`
runs) and scored against its ``label`` field, which the product never reads: an intent (``cluster:*`` or
``conflict:*``) is **pure** when exactly one patch has it as its cluster's majority label and that cluster's
purity (its share of the intent's fragments) is >= 0.9; a patch whose majority label is no intent is
**spurious**. The per-intent detail (key, type, constraints) is `bench.evolution_dev_corpus`'s table.

    python -m bench.evolution_corpora                          # the shipped model and settings
    python -m bench.evolution_corpora --model DIR              # another sentence-transformers directory
    python -m bench.evolution_corpora --set assign_threshold=0.4 --json
    python -m bench.evolution_corpora --corpus tests/evolution/data/heldout_voice_corpus.jsonl

Progress goes to stderr; the table (or JSON) to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.replay import replay
from an_agent.schemas.embedding import Embedder

DATA = Path(__file__).resolve().parent.parent / "tests" / "evolution" / "data"
PURE = 0.9


@dataclass
class CorpusScore:
    """One corpus replayed: which intents are pure, which are not (with their patches' purities), spurious patches."""

    corpus: str
    intents: int
    pure: list[str] = field(default_factory=list)
    # intent -> purity (0-1) of each patch it is the majority label of; [] when it made no patch
    not_pure: dict[str, list[float]] = field(default_factory=dict)
    spurious: list[str] = field(default_factory=list)
    names: dict[str, list[str]] = field(default_factory=dict)  # intent -> key names of its patches
    seconds: float = 0.0


def score(report: dict[str, Any], labels: Sequence[str], corpus: str = "") -> CorpusScore:
    """Score a replay report (`ReplayReport.to_dict`) against the labels of its input lines (0-based)."""
    intents = sorted({lab for lab in labels if lab.startswith(("cluster:", "conflict:"))})
    clusters = {c["cluster_id"]: c for c in report["clusters"]}
    purities: dict[str, list[float]] = {label: [] for label in intents}
    names: dict[str, list[str]] = {label: [] for label in intents}
    result = CorpusScore(corpus, len(intents))
    for patch in report["patches"]:
        members = clusters[patch["cluster_id"]]["members"]
        top, count = Counter(labels[m] for m in members).most_common(1)[0]
        if top not in purities:
            result.spurious.append(patch["patch_id"])
            continue
        purities[top].append(count / len(members))
        names[top].extend(k["key_name"] for k in patch["new_keys"] + patch["modified_keys"])
    for label in intents:
        if len(purities[label]) == 1 and purities[label][0] >= PURE:
            result.pure.append(label)
        else:
            result.not_pure[label] = [round(p, 2) for p in purities[label]]
    result.names = names
    return result


def corpora(paths: Sequence[Path] | None = None) -> list[Path]:
    """The labelled corpora: ``paths``, or every ``*.jsonl`` of tests/evolution/data."""
    return list(paths) if paths else sorted(DATA.glob("*.jsonl"))


def run(path: Path, embedder: Embedder, config: EvolutionConfig) -> CorpusScore:
    """Replay the corpus at ``path`` with ``embedder`` and ``config`` and score it."""
    started = time.perf_counter()
    lines = path.read_text(encoding="utf-8").splitlines()
    labels = [json.loads(line).get("label", "") if line.strip() else "" for line in lines]
    result = score(replay(lines, embedder, config=config).to_dict(), labels, path.stem)
    result.seconds = round(time.perf_counter() - started, 1)
    return result


def table(scores: Sequence[CorpusScore]) -> str:
    """Markdown: one row per corpus (pure / intents, spurious, what is not pure), then the total."""
    out = ["| corpus | pure | spurious | not pure (purity of each patch; none = no patch) |", "|---|---|---|---|"]
    for s in scores:
        missed = ", ".join(
            f"{label.split(':', 1)[1]} ({' / '.join(f'{100 * p:.0f} %' for p in ps) or 'none'})"
            for label, ps in s.not_pure.items()
        )
        out.append(f"| {s.corpus} | {len(s.pure)}/{s.intents} | {len(s.spurious)} | {missed or '-'} |")
    pure, total, spurious = (
        sum(len(s.pure) for s in scores),
        sum(s.intents for s in scores),
        sum(len(s.spurious) for s in scores),
    )
    out.append(f"| **all** | **{pure}/{total}** | **{spurious}** | |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", action="append", type=Path, help="labelled corpus (default: all in tests/)")
    parser.add_argument("--model", type=Path, metavar="DIR", help="a sentence-transformers model directory")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="an evolution setting (repeatable)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    config = EvolutionConfig().with_overrides(dict(item.split("=", 1) for item in args.set))
    embedder = MiniLMEmbedder(path=args.model)
    embedder.load()
    scores = []
    for path in corpora(args.corpus):
        print(f"replaying {path.name} ...", file=sys.stderr, flush=True)
        scores.append(run(path, embedder, config))
    if args.json:
        json.dump([asdict(s) for s in scores], sys.stdout, indent=2)
        print()
    else:
        print(table(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
