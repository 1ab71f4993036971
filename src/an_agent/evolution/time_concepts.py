"""New time concepts kept apart from a template's date-time keys (issue 31).

"service restored 2027-01-15 at 15:00 UTC" and "fault started 2027-01-15 at 06:40 UTC" look alike to the
embedding model: the moment is most of each fragment. Yet the first is a new concept (when service came
back) and only the second restates the template's ``occurred_at`` ("When the fault started"). So a
cluster of moments is judged on what its fragments say **without the moment** (`strip_moment`: dates,
clock times, zones, "today" / "tomorrow", a dangling "at"; the prepositions that say what the moment is,
"since", "by", "from", "until", stay):

- `restates` — the cluster restates a date-time key when its fragments, without their moments, are on
  average closer to the key's anchors (its name, first sentence and example phrases, also without their
  moments) than to each other: the key says what they say. Only then may a cluster of moments modify
  that key (`conflicts.find_conflict`); otherwise it is a key of its own however close the moments make it;
- `restating_group` — a cluster that holds both (restoration and onset lines merged in the pool) is split
  in two at the cut of the fragments' similarities to the key that separates them best. The group that
  restates the key is set aside (it leaves the cluster at the patch, `release`) when it is closer to the
  key's meaning than to the rest of the cluster and than to itself, while the rest is closer to itself
  than to the key. The comparisons are relative: no threshold is fitted to a corpus.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from an_agent.evolution.cohesion import TWO_IDEAS_MIN, Core, cohesion_of
from an_agent.evolution.moments import find_moment
from an_agent.schemas.anchors import key_anchors
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.template import KeyDef

MOMENT_SHARE = 0.4  # share of fragments naming a moment for a cluster to be one of moments (inference.TYPE_SHARE)
MIN_GROUP = 3  # fragments the restating group needs; the new concept needs TWO_IDEAS_MIN (a half that could recur)
_MOMENT = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:(?:T|\s+|,?\s+at\s+)\d{1,2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\b|\b(?:UTC|GMT)\b|\b(?:today|tomorrow|yesterday|tonight)\b",
    re.IGNORECASE,
)
# What is left dangling once the moment is gone: "restored at", "back on air around", separators.
# Linear in the text: each starts only where a run starts (the former single pattern of nested repeats
# over spaces backtracked cubically on a long run of them).
_TRAILING_MARKS = re.compile(r"(?<![\s,:;.=|~\-])[\s,:;.=|~\-]++$")
_TRAILING_WORD = re.compile(r"(?<=\s)(?:at|on|around|approx)$", re.IGNORECASE)
_INNER_AT = re.compile(r"(?<!\s)\s++(?:at|on)\s++(?=,)", re.IGNORECASE)


def strip_moment(text: str) -> str:
    """``text`` without the moment it names ("service restored 2027-01-15 at 15:00 UTC" -> "service restored")."""
    text = re.sub(r"\s+", " ", _MOMENT.sub(" ", text)).strip(" ,.")
    text = _INNER_AT.sub(" ", text)
    return _without_dangling(text).strip()


def _without_dangling(text: str) -> str:
    """``text`` without what dangles at its end once a time is cut out: separators, and "at", "on",
    "around", "approx" after a space (repeatedly: "restored at , on -")."""
    while True:
        text = _TRAILING_MARKS.sub("", text)
        word = _TRAILING_WORD.search(text)
        if word is None:
            return text
        text = text[: word.start()]


def of_moments(texts: Sequence[str], now: float) -> bool:
    """True when enough of the fragments name a moment for the cluster to be about moments."""
    return bool(texts) and sum(1 for t in texts if find_moment(t, now)) >= MOMENT_SHARE * len(texts)


def is_moment_key(key: KeyDef) -> bool:
    return key.constraints.value_format == "date-time"


def _views(texts: Sequence[str], key: KeyDef, embedder: Embedder) -> tuple[Vectors, np.ndarray] | None:
    """The fragments' vectors without their moments, and each one's best similarity to the key's anchors."""
    stripped = [strip_moment(t) or t for t in texts]
    anchors = [a for a in (strip_moment(a) for a in key_anchors(key)) if a]
    if not anchors:
        return None
    embedded = embedder.embed([*stripped, *anchors])
    vectors, anchor_vectors = embedded[: len(stripped)], embedded[len(stripped) :]
    return vectors, (vectors @ anchor_vectors.T).max(axis=1)


def _mean_pairs(sims: np.ndarray, a: Sequence[int], b: Sequence[int]) -> float:
    pairs = [float(sims[i, j]) for i in a for j in b if i != j]
    return float(np.mean(pairs)) if pairs else 0.0


def restates(texts: Sequence[str], key: KeyDef, embedder: Embedder) -> bool:
    """True when the fragments, without their moments, say what the date-time ``key`` says (module docstring)."""
    views = _views(texts, key, embedder)
    if views is None or len(texts) < 2:
        return True  # nothing to judge by: the ordinary meaning test decides
    vectors, to_key = views
    everyone = list(range(len(texts)))
    return float(to_key.mean()) >= _mean_pairs(vectors @ vectors.T, everyone, everyone)


def restating_group(texts: Sequence[str], key: KeyDef, embedder: Embedder) -> list[int]:
    """The fragments that restate the date-time ``key`` inside a cluster that is otherwise a new time
    concept (module docstring), as indexes of ``texts``; [] when the cluster is one concept."""
    views = _views(texts, key, embedder)
    if views is None or len(texts) < MIN_GROUP + TWO_IDEAS_MIN:
        return []
    vectors, to_key = views
    # The cut of the fragments' similarities to the key that best separates the two groups (largest
    # between-group variance, as Otsu's threshold): what each fragment says decides, not its wording.
    order = [int(i) for i in np.argsort(-to_key, kind="stable")]
    ranked = to_key[order].astype(np.float64)
    total, n = float(ranked.sum()), len(ranked)
    best, cut = -1.0, 0
    for k in range(1, n):
        high, low = float(ranked[:k].mean()), (total - float(ranked[:k].sum())) / (n - k)
        spread = k * (n - k) * (high - low) ** 2
        if spread > best:
            best, cut = spread, k
    a, b = sorted(order[:cut]), sorted(order[cut:])
    if len(a) < MIN_GROUP or len(b) < TWO_IDEAS_MIN:
        return []
    sims = vectors @ vectors.T
    across = _mean_pairs(sims, a, b)
    key_a, key_b = float(to_key[a].mean()), float(to_key[b].mean())
    # a says the key (closer to its meaning than to the rest and than to itself); b is a concept of its own.
    if key_a > across and key_a > _mean_pairs(sims, a, a) and key_b < _mean_pairs(sims, b, b) and key_b < key_a:
        return a
    return []


def apart_from_moment_keys(
    core: Core, texts: Sequence[str], vectors: Vectors, existing: Sequence[KeyDef], embedder: Embedder, now: float
) -> Core:
    """``core`` without the fragments that restate one of the ``existing`` date-time keys, when the rest of a
    cluster of moments is a new time concept (`restating_group`); they are set aside as a second idea (they
    leave the cluster with the patch). Unchanged otherwise."""
    members = list(core.members)
    inside = [texts[i] for i in members]
    if not of_moments(inside, now):
        return core
    for key in existing:
        if is_moment_key(key) and (group := restating_group(inside, key, embedder)):
            gone = {members[j] for j in group}
            kept = tuple(i for i in members if i not in gone)
            second = tuple(sorted({*core.second_idea, *gone}))
            return Core(kept, core.outliers, second, cohesion_of(vectors[list(kept)]), core.size)
    return core
