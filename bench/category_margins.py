"""The margins of the category test (evolution/categories.py) on the labelled corpora.

For every recurring intent (``cluster:*``, ``conflict:*``) of each corpus, all its fragments (as a cluster
holds them once they recur; the replay's cluster may hold fewer, or noise) are read like synthesis reads a
cluster: the content words' similarity to each shipped category phrase, the set `category_alternatives`
finds (if any) and its `alternatives.separation`. Printed per intent: the words of each category at
>= ``--show`` (default 0.30), members (>= ``CATEGORY_MIN``) marked ``*``; then the closest word below the
floor and the weakest member over all corpora: the calibration of docs/evolution.md section 5.

    python -m bench.category_margins [FILE ...]   # default: every corpus of tests/evolution/data
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from an_agent.evolution.alternatives import content_words, separation
from an_agent.evolution.categories import (
    CATEGORY_MIN,
    CATEGORY_SEPARATION,
    category_alternatives,
    shipped_categories,
)
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.value_words import STOP_WORDS

DATA = Path(__file__).resolve().parent.parent / "tests" / "evolution" / "data"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", type=Path)
    parser.add_argument("--show", type=float, default=0.30, help="list category words from this similarity")
    args = parser.parse_args(argv)
    files = args.files or sorted(DATA.glob("*_corpus.jsonl"))
    embedder = MiniLMEmbedder()
    categories = shipped_categories()
    phrases = embedder.embed([c.phrase for c in categories])
    below: tuple[float, str] = (0.0, "")  # the closest non-member over all intents
    weakest: tuple[float, str] = (1.0, "")  # the weakest member of a set found
    for path in files:
        by_label: dict[str, list[str]] = defaultdict(list)
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row.get("label", "").startswith(("cluster:", "conflict:")) and "other" in row["payload"]:
                by_label[row["label"]].append(row["payload"]["other"])
        print(f"## {path.name}")
        for label, texts in sorted(by_label.items()):
            words = content_words(texts, STOP_WORDS)[2]
            if not words:
                continue
            sims = embedder.embed(words) @ phrases.T
            found = category_alternatives(texts, embedder, STOP_WORDS)
            margin = separation(found.values, texts, embedder.embed(texts)) if found else None
            verdict = "-"
            if found is not None:
                kept = margin is not None and margin >= CATEGORY_SEPARATION
                values = ", ".join(v for v, _ in found.values)
                sep = "none" if margin is None else f"{margin:.3f}"
                verdict = f"{found.category.key}: {values} (separation {sep}: {'kept' if kept else 'refused'})"
                for (value, _), sim in zip(found.values, found.margins, strict=True):
                    weakest = min(weakest, (sim, f"{value} ({found.category.phrase}, {path.name} {label})"))
            print(f"- {label}: {verdict}")
            for c, category in enumerate(categories):
                shown = sorted(((float(sims[i, c]), w) for i, w in enumerate(words)), reverse=True)
                shown = [(s, w) for s, w in shown if s >= args.show and w not in category.phrase.split()]
                for s, w in shown:
                    if s < CATEGORY_MIN:
                        below = max(below, (s, f"{w} ({category.phrase}, {path.name} {label})"))
                if shown:
                    listed = ", ".join(f"{w}{'*' if s >= CATEGORY_MIN else ''} {s:.2f}" for s, w in shown[:8])
                    print(f"    {category.phrase}: {listed}")
    print(f"\nfloor {CATEGORY_MIN}: weakest member {weakest[0]:.2f} {weakest[1]}")
    print(f"closest word below it {below[0]:.2f} {below[1]}")


if __name__ == "__main__":
    main()
