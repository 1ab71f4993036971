"""Closed sets recognised by category: values that each fall under one shipped category word.

Some slots are filled by words that share no frame: "heavy storm", "strong wind", "snow is piling up",
"flooding near the river site", each said once. `alternatives.find_alternatives` needs recurring values
or a shared head, and finds nothing; yet each word is, for the embedding model, close to "weather". The
categories are data (``an_agent/data/value_categories.json``: a phrase and the key it names, never a
list of members); the model decides membership. `category_alternatives` is tried when the lexical
closed set finds none (`inference.infer_value`).

Wordings of one idea are not told apart from values by pairwise similarity: MiniLM puts incident /
outage / report at 0.17-0.40 to each other, below the weather words' 0.42-0.68. What tells them apart
is the category: no shipped category holds them (outage is 0.34 to "weather", the closest).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np

from an_agent.evolution.alternatives import (
    ALT_MIN_SHARE,
    ALT_MIN_VALUES,
    content_words,
    excludes,
    modifier_words,
    not_values,
    same_family,
)
from an_agent.schemas.embedding import Embedder

# A value's similarity to its category word, MiniLM: rain 0.67, snow 0.58, wind 0.51, thunderstorm 0.50,
# storm 0.47, flooding 0.41 to "weather"; below it ice 0.33, and the non-values of the corpora's
# clusters: night 0.36, outage 0.34 ("weather"), fibre 0.37 ("transmission medium").
CATEGORY_MIN = 0.40
# Fragments naming one value of a category set are closer to each other than to those naming another by
# this much (`alternatives.separation`; 0.15 for a lexical set). The category already says the words are
# values of one kind; the separation only rejects wordings of the cluster's own idea that fall under a
# category: solar / photovoltaic power -0.02, while the weather values separate by 0.13 and the device
# models of the recall corpus by 0.11.
CATEGORY_SEPARATION = 0.05


@dataclass(frozen=True)
class Category:
    """A shipped category: the ``phrase`` embedded to judge membership, and the ``key`` it names."""

    phrase: str
    key: str


@cache
def shipped_categories() -> tuple[Category, ...]:
    """The categories of ``an_agent/data/value_categories.json``, in file order."""
    raw = json.loads(resources.files("an_agent").joinpath("data/value_categories.json").read_text("utf-8"))
    return tuple(Category(c["phrase"], c["key"]) for c in raw["categories"])


def category_phrases() -> list[str]:
    """The phrases `category_alternatives` embeds (to embed them ahead, with a synthesis's other texts)."""
    return [c.phrase for c in shipped_categories()]


@dataclass(frozen=True)
class CategorySet:
    """A closed set found by category: the values (as `find_alternatives` returns them) and their category.

    ``margins`` holds each value's similarity to the category phrase (for measurement and docs).
    """

    values: list[tuple[str, frozenset[str]]]
    category: Category
    margins: tuple[float, ...]


def category_alternatives(
    texts: Sequence[str],
    embedder: Embedder,
    stop_words: frozenset[str],
    categories: Sequence[Category] | None = None,
) -> CategorySet | None:
    """The closed set of values that fall under one category, or None.

    Candidates are the fragments' content words outside the topic (as `find_alternatives` takes them,
    values named once included, modifiers such as "freezing" in "freezing rain" left out). A word is a
    member of a category when its similarity to the category phrase is >= ``CATEGORY_MIN`` and it is no
    word of the phrase ("power" is not a power source). Of one word family (storm / thunderstorm) the
    most named member stays; members must exclude each other (`alternatives.excludes`) and each be named
    alone somewhere. The set needs ``ALT_MIN_VALUES`` values covering ``ALT_MIN_SHARE`` of the fragments;
    of several categories, the one covering most fragments wins.
    """
    n = len(texts)
    if n < 5:
        return None
    categories = shipped_categories() if categories is None else categories
    per_text, stems, words = content_words(texts, stop_words)
    if len(stems) < ALT_MIN_VALUES:
        return None
    doc_sets = [{i for i, ws in enumerate(per_text) if s in ws} for s in stems]
    embedded = embedder.embed([*words, *(c.phrase for c in categories)])
    sims = embedded[: len(words)] @ embedded[len(words) :].T
    word_sims = embedded[: len(words)] @ embedded[: len(words)].T
    skip = modifier_words(texts, stems, doc_sets, word_sims) | not_values(texts, stems)
    best: CategorySet | None = None
    best_cover = 0
    for c, category in enumerate(categories):
        own = category.phrase.split()
        members = [
            i
            for i in np.argsort(-sims[:, c], kind="stable")
            if sims[i, c] >= CATEGORY_MIN and i not in skip and not any(same_family(stems[i], w) for w in own)
        ]
        # The most named first: it keeps its family's name and decides what the others must exclude.
        members.sort(key=lambda i: (-len(doc_sets[i]), -float(sims[i, c])))
        chosen: list[int] = []
        for i in members:
            if any(same_family(stems[i], stems[k]) for k in chosen):
                continue
            if excludes(doc_sets[i], [doc_sets[k] for k in chosen]):
                chosen.append(int(i))
        # A value is named alone somewhere: a word only ever said next to another value is context.
        chosen = [k for k in chosen if not doc_sets[k] <= set().union(*(doc_sets[m] for m in chosen if m != k))]
        covered = len(set().union(*(doc_sets[k] for k in chosen))) if chosen else 0
        if len(chosen) < ALT_MIN_VALUES or covered < ALT_MIN_SHARE * n or covered <= best_cover:
            continue
        best_cover = covered
        best = CategorySet(
            [(words[k], frozenset({stems[k]})) for k in chosen],
            category,
            tuple(round(float(sims[k, c]), 2) for k in chosen),
        )
    return best
