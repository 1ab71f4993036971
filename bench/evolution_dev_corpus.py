"""The tables of docs/evolution-dev-corpus.md, from a replay of a labelled corpus with the shipped defaults.

Runs `an_agent.evolution.replay.replay` (what `an-agent schema replay FILE --json` runs) with the real
model and prints Markdown: the summary line, one row per recurring intent (its patch, key, type and
constraints, and its cluster's size, purity against the corpus's ``label`` field, cohesion and core share), and the
patches that no intent explains (spurious ones). The product never reads ``label``; only this report does.

    python -m bench.evolution_dev_corpus [FILE]     # default: tests/evolution/data/dev_other_corpus.jsonl
    python -m bench.evolution_dev_corpus FILE --set typing_sample=13   # any EvolutionConfig setting
    python -m bench.evolution_dev_corpus FILE --merge-ratio 0.65       # the merge test's constants (pool.py)
    python -m bench.evolution_dev_corpus --update docs/evolution-dev-corpus.md   # regenerate its tables

``--update DOC`` rewrites, in place, every table block of DOC (from a line "N lines accepted, ..." to the
line "Patches no intent explains: ...") with the report of the corpus the nearest ``tests/evolution/data/
NAME.jsonl`` mention above the block names; the prose around the blocks stays. It says on stderr which
blocks changed.
"""

from __future__ import annotations

import argparse
import json
import re
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


_CORPUS_MENTION = re.compile(r"tests/evolution/data/([a-z0-9_]+\.jsonl)")  # corpora are named in lower case
_BLOCK_START = re.compile(r"^\d+ lines accepted")
_BLOCK_END = "Patches no intent explains"


def update(doc: Path, config: EvolutionConfig | None = None, data: Path = DEFAULT.parent) -> list[str]:
    """Regenerate every table block of ``doc`` in place (module docstring); returns the corpora whose block
    changed. A block with no corpus mention above it, or one that never ends, is a `ValueError`: the file
    is then left as it was."""
    lines = doc.read_text(encoding="utf-8").split("\n")
    out: list[str] = []
    changed: list[str] = []
    corpus: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if _BLOCK_START.match(line):
            end = next((j for j in range(i, len(lines)) if lines[j].startswith(_BLOCK_END)), None)
            if corpus is None or end is None:
                raise ValueError(f"{doc}:{i + 1}: a table block without a corpus named above it or without its end")
            fresh = report(data / corpus, config).split("\n")
            if fresh != lines[i : end + 1]:
                changed.append(corpus)
            out.extend(fresh)
            i = end + 1
            continue
        corpus = next((m.group(1) for m in reversed(list(_CORPUS_MENTION.finditer(line)))), corpus)
        out.append(line)
        i += 1
    doc.write_text("\n".join(out), encoding="utf-8")
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file", nargs="?", type=Path, default=DEFAULT, help="labelled corpus (replay format)")
    parser.add_argument(
        "--set", action="append", default=[], metavar="NAME=VALUE", help="an evolution setting (repeatable)"
    )
    parser.add_argument(
        "--update", type=Path, metavar="DOC", help="regenerate the table blocks of DOC in place (see above)"
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
    config = EvolutionConfig().with_overrides(settings)
    if args.update is not None:
        changed = update(args.update, config)
        print(f"{args.update}: {len(changed)} block(s) changed: {', '.join(changed) or 'none'}", file=sys.stderr)
        return 0
    print(report(args.file, config))
    return 0


if __name__ == "__main__":
    sys.exit(main())
