"""The tables of docs/evolution-dev-corpus.md, from a replay of a labelled corpus with the shipped defaults.

Runs `an_agent.evolution.replay.replay` (what `an-agent schema replay FILE --json` runs) with the real
model and prints Markdown: the summary line, one row per recurring intent (its patch, key, type and
constraints, and its cluster's size, purity against the corpus's ``label`` field, cohesion and core share), and the
patches that no intent explains (spurious ones). The product never reads ``label``; only this report does.

    python -m bench.evolution_dev_corpus [FILE]     # default: tests/evolution/data/dev_other_corpus.jsonl
    python -m bench.evolution_dev_corpus FILE --set typing_sample=13   # any EvolutionConfig setting
    python -m bench.evolution_dev_corpus FILE --merge-ratio 0.65       # the merge test's constants (pool.py)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from an_agent.evolution import pool
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.replay import replay
from an_agent.schemas.values import parse_constraints

DEFAULT = Path(__file__).resolve().parent.parent / "tests" / "evolution" / "data" / "dev_other_corpus.jsonl"


def constraints_text(key: dict[str, Any]) -> str:
    """The key's value constraints as the description states them (allowed values, formats, unit, range)."""
    c = parse_constraints(key["semantic_description"])
    parts = []
    if c.enum:
        parts.append("values " + ", ".join(c.enum))
    if c.value_format:
        parts.append(f"format {c.value_format}")
    if c.item_format:
        parts.append(f"items {c.item_format}")
    if c.unit:
        parts.append(f"unit {c.unit}")
    if c.minimum is not None or c.maximum is not None:
        parts.append(f"range {c.describe_range()}")
    return "; ".join(parts) or "-"


def report(path: Path, config: EvolutionConfig | None = None) -> str:
    """The Markdown tables for the corpus at ``path``, replayed with ``config`` (default: the shipped one)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    labels = [json.loads(line).get("label", "") if line.strip() else "" for line in lines]
    result = replay(lines, MiniLMEmbedder(), config=config).to_dict()
    members = {c["cluster_id"]: c for c in result["clusters"]}
    out = [
        f"{result['accepted']} lines accepted, {len(result['rejected'])} refused, {len(result['clusters'])} clusters, "
        f"{len(result['patches'])} patches ({sum(1 for p in result['patches'] if p['client_id'] is None)} global, "
        f"{sum(1 for p in result['patches'] if p['client_id'] is not None)} per-client).",
        "",
        "| intent (label) | patch | key | type | constraints | cluster: size, purity, cohesion, core share |",
        "|---|---|---|---|---|---|",
    ]
    explained: set[str] = set()
    intents = sorted({lab for lab in labels if lab.startswith(("cluster:", "conflict:"))})
    for label in intents:
        rows = []
        for patch in result["patches"]:
            cluster = members[patch["cluster_id"]]
            votes = Counter(labels[m] for m in cluster["members"])
            top, count = votes.most_common(1)[0]
            if top != label:
                continue
            explained.add(patch["patch_id"])
            for key in patch["new_keys"] + patch["modified_keys"]:
                kind = "new" if key in patch["new_keys"] else "modified"
                scope = "" if patch["client_id"] is None else f", {patch['client_id']} only"
                rows.append(
                    f"| {label.removeprefix('cluster:')} | {patch['patch_id']}{scope} | `{key['key_name']}` ({kind}) | "
                    f"{key['key_type']} | {constraints_text(key)} | {cluster['size']}, "
                    f"{100 * count // cluster['size']} %, {cluster['cohesion']:.2f}, {cluster['core_share']:.2f} |"
                )
        out.extend(rows or [f"| {label.removeprefix('cluster:')} | **none** | | | | |"])
    spurious = [p["patch_id"] for p in result["patches"] if p["patch_id"] not in explained]
    out += ["", f"Patches no intent explains: {', '.join(spurious) if spurious else 'none'}."]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT, help="labelled corpus (replay format)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="an evolution setting (repeatable)"
    )
    parser.add_argument("--merge-between", type=float, help=f"pool.MERGE_BETWEEN (shipped {pool.MERGE_BETWEEN})")
    parser.add_argument("--merge-ratio", type=float, help=f"pool.MERGE_RATIO (shipped {pool.MERGE_RATIO})")
    args = parser.parse_args(argv)
    # Module constants, not settings: this process only, to measure a merge rule (docs/evolution.md, section 4).
    if args.merge_between is not None:
        pool.MERGE_BETWEEN = args.merge_between
    if args.merge_ratio is not None:
        pool.MERGE_RATIO = args.merge_ratio
    settings = dict(item.split("=", 1) for item in args.set)
    print(report(args.file, EvolutionConfig().with_overrides(settings)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
