"""Typed value inference for patch synthesis: key_type and value constraints from a cluster's fragments.

The draft's key types are JSON types; a key is only useful to a client when it also says which values
it takes. `infer_value` looks at what the fragments of one cluster state, in this order, and takes the
first kind that at least ``TYPE_SHARE`` of the fragments carry:

1. **quantities with one unit** ("20 Mbps", "40 degrees"): ``integer`` or ``number`` with ``Unit:`` and
   a ``Range:`` wide enough for the values seen (0 to the next power of ten above twice the largest, or
   0 to 100 for percentages); a time unit ("for two hours", "90 minutes") makes a ``string`` with
   ``Format: duration`` (ISO 8601, ``PT2H``) instead;
2. **identifiers of one kind** (CELL-0401): an ``array`` with ``Item format:``;
3. **dates and times** ("tomorrow at 06:00", "2026-10-05"): a ``string`` with ``Format: date-time``;
4. **time-of-day ranges** ("between 01:00 and 05:00"): a ``string`` with ``Format: <HH:MM-HH:MM>``... kept
   as the existing ``HH:MM-HH:MM`` wording;
5. **a closed set of alternatives** (`find_alternatives`): words of one kind that fill the same slot in
   different fragments ("on battery", "on generator", "mains is back") and rarely appear together: a
   ``string`` with ``Acceptable values:``;
6. otherwise the fragments state a condition or a wish: a ``boolean`` flag (default false).

Every constraint is written in the description phrases of `an_agent.schemas.template`, so validation
and the JSON Schema projection read the same thing the people and LLMs read.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.extract import (
    duration_minutes,
    find_clock_ranges,
    find_datetimes,
    find_ids,
    find_quantities,
)
from an_agent.schemas.values import KeyType

TYPE_SHARE = 0.4  # share of fragments that must carry a value kind for the key to take that type
_ALT_MIN_SHARE = 0.6  # share of fragments the alternatives of a closed set must cover together
_ALT_MIN_VALUES = 3  # fewer distinct values is a phrasing habit (hot / thermal), not a closed set
_ALT_MAX_TOPIC = 0.75  # a word in more fragments than this is the cluster's topic, not a value
_ALT_MIN_SHARE_EACH = 2  # fragments each value must appear in
_ALT_MIN_KIND = 0.25  # similarity of each pair of alternatives: they must be words of one kind ...
_ALT_SET_KIND = 0.30  # mean pairwise similarity of the whole set
_ALT_MAX_KIND = 0.75  # ... but not two spellings of one word (roaming / roamers)
_ALT_MAX = 8
_TIME_UNITS = frozenset({"seconds", "minutes", "hours", "days", "weeks"})
_DURATION_PART = {"weeks": "W", "days": "D", "hours": "H", "minutes": "M", "seconds": "S"}


@dataclass(frozen=True)
class ValueSpec:
    """What a synthesised key takes: its type, the constraint phrases, and each fragment's value (or None)."""

    key_type: KeyType
    values: tuple[Any, ...]
    phrases: tuple[str, ...] = ()  # constraint sentences for the description ("Unit: mbps.", ...)
    unit: str | None = None
    id_prefix: str | None = None
    enum: tuple[str, ...] = ()
    value_format: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


def iso_duration(minutes: float) -> str:
    """An ISO 8601 duration for a number of minutes (90 -> 'PT1H30M', 2880 -> 'P2D')."""
    total = round(minutes * 60)
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    mins, secs = divmod(rest, 60)
    out = "P" + (f"{days}D" if days else "")
    clock = (f"{hours}H" if hours else "") + (f"{mins}M" if mins else "") + (f"{secs}S" if secs else "")
    return out + ("T" + clock if clock else "") if (days or clock) else "PT0S"


def _upper_bound(largest: float) -> float:
    if largest <= 0:
        return 0.0
    return float(10 ** math.ceil(math.log10(largest * 2)))


def _fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _quantity_spec(texts: Sequence[str]) -> ValueSpec | None:
    n = len(texts)
    found = [find_quantities(t) for t in texts]
    units = Counter(q[0].unit for q in found if q)
    if not units:
        return None
    unit, count = units.most_common(1)[0]
    if count < TYPE_SHARE * n:
        return None
    if unit in _TIME_UNITS:
        minutes = [next((duration_minutes(q) for q in qs if q.unit in _TIME_UNITS), None) for qs in found]
        values = tuple(iso_duration(m) if m is not None else None for m in minutes)
        return ValueSpec(
            "string",
            values,
            ("Format: duration.",),
            value_format="duration",
            info={"meaning": "an ISO 8601 duration"},
        )
    values_f = [next((q.value for q in qs if q.unit == unit), None) for qs in found]
    present = [v for v in values_f if v is not None]
    kind: KeyType = "integer" if all(float(v).is_integer() for v in present) else "number"
    low = min(present)
    high = 100.0 if unit == "percent" else _upper_bound(max(abs(v) for v in present))
    low_bound = -high if low < 0 else 0.0
    phrases = (f"Unit: {unit}.", f"Range: {_fmt(low_bound)} to {_fmt(high)}.")
    shown = tuple(int(v) if v is not None and kind == "integer" else v for v in values_f)
    return ValueSpec(kind, shown, phrases, unit=unit, info={"observed": (min(present), max(present)), "unit": unit})


def _id_spec(texts: Sequence[str]) -> ValueSpec | None:
    ids = [find_ids(t) for t in texts]
    prefixes = Counter(i[0].prefix for i in ids if i)
    if not prefixes:
        return None
    prefix, count = prefixes.most_common(1)[0]
    if count < TYPE_SHARE * len(texts):
        return None
    values = tuple([f.value for f in found if f.prefix == prefix] or None for found in ids)
    return ValueSpec("array", values, (f"Item format: {prefix}-<alnum>.",), id_prefix=prefix)


def _datetime_spec(texts: Sequence[str], now: float) -> ValueSpec | None:
    found = [find_datetimes(t, now) for t in texts]
    if sum(1 for f in found if f) < TYPE_SHARE * len(texts):
        return None
    values = tuple(f[0][0] if f else None for f in found)
    return ValueSpec("string", values, ("Format: date-time.",), value_format="date-time")


def _clock_range_spec(texts: Sequence[str]) -> ValueSpec | None:
    ranges = [find_clock_ranges(t) for t in texts]
    if sum(1 for r in ranges if r) < TYPE_SHARE * len(texts):
        return None
    values = tuple(r[0][0] if r else None for r in ranges)
    return ValueSpec("string", values, ("Values are time-of-day ranges HH:MM-HH:MM (UTC).",))


def infer_value(
    texts: Sequence[str],
    embedder: Embedder,
    *,
    now: float,
    stop_words: frozenset[str],
    vectors: Vectors | None = None,
) -> ValueSpec:
    """The `ValueSpec` of a cluster's fragments (module docstring for the order of the rules).

    With the fragments' unit ``vectors``, a closed set must also pass `_values_separate`.
    """
    for spec in (
        _quantity_spec(texts),
        _id_spec(texts),
        _datetime_spec(texts, now),
        _clock_range_spec(texts),
    ):
        if spec is not None:
            return spec
    alternatives = find_alternatives(texts, embedder, stop_words)
    if alternatives and vectors is not None and not _values_separate(alternatives, texts, vectors):
        alternatives = []
    if alternatives:
        values = tuple(next((v for v, forms in alternatives if _mentions(t, forms)), None) for t in texts)
        enum = tuple(v for v, _ in alternatives)
        return ValueSpec("string", values, (f"Acceptable values: {', '.join(enum)}.",), enum=enum)
    return ValueSpec("boolean", tuple(True for _ in texts))


_WORD = re.compile(r"[a-z][a-z0-9\-]*")


def _stem(word: str) -> str:
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def _mentions(text: str, forms: frozenset[str]) -> bool:
    return bool({_stem(w) for w in _WORD.findall(text.lower())} & forms)


_SEPARATION = (
    0.10  # fragments naming one value are closer to each other than to the rest by this much: on the probes, slots
)
# (power source, weather) separate by 0.27-0.28, wordings of one idea (sms / text / phone) by 0.03-0.07


def _values_separate(
    alternatives: Sequence[tuple[str, frozenset[str]]], texts: Sequence[str], vectors: Vectors
) -> bool:
    """True when fragments naming the same value are closer to each other than to fragments naming another.

    Slot values mean different things ("on battery" vs "on generator"): the fragments group by value.
    Wordings of one idea ("runs hot", "thermal alarm", "temperature alarm") are interchangeable: fragments
    that use one are as close to those using another as to each other.
    """
    groups = [[i for i, t in enumerate(texts) if _mentions(t, forms)] for _, forms in alternatives]
    sims = vectors @ vectors.T
    within = [float(sims[a, b]) for g in groups for a in g for b in g if a < b]
    between = [float(sims[a, b]) for x, g in enumerate(groups) for h in groups[x + 1 :] for a in g for b in h if a != b]
    if not within or not between:
        return False
    return float(np.mean(within)) - float(np.mean(between)) >= _SEPARATION


_ARTICLES = frozenset({"the", "a", "an", "my", "our", "their", "its", "this", "that"})
# Verbs and conjunctions around a word say nothing about its slot ("unit is", "temperature is").
_NOT_A_FRAME = frozenset({"is", "are", "was", "were", "be", "been", "has", "have", "had", "and", "or", "do", "does"})


def _share_a_frame(values: Sequence[str], texts: Sequence[str]) -> bool:
    """True when two of the values fill the same slot somewhere: same word before or after them.

    "on battery" / "on mains", "heavy storm" / "heavy rain": slot fillers share their frame, while
    different wordings of one idea ("heat wave", "runs hot", "cabinet temperature") do not.
    """
    frames: dict[str, set[tuple[str, str]]] = {v: set() for v in values}
    for text in texts:
        words = [w for w in _WORD.findall(text.lower()) if w not in _ARTICLES]
        for i, word in enumerate(words):
            stem = _stem(word)
            if stem in frames:
                if i > 0 and words[i - 1] not in _NOT_A_FRAME:
                    frames[stem].add(("before", words[i - 1]))
                if i + 1 < len(words) and words[i + 1] not in _NOT_A_FRAME:
                    frames[stem].add(("after", words[i + 1]))
    return any(frames[a] & frames[b] for i, a in enumerate(values) for b in values[i + 1 :])


def find_alternatives(
    texts: Sequence[str], embedder: Embedder, stop_words: frozenset[str]
) -> list[tuple[str, frozenset[str]]]:
    """A closed set of values the fragments choose from, as (value, stems that mention it), or [].

    Candidates are content words in at least two fragments but not in most of them (a word in nearly
    every fragment is the topic, not a value). The set is grown greedily from the most frequent
    candidate, adding words that (a) share no fragment with the words already chosen (values of one slot
    exclude each other; one shared fragment is tolerated for a word in three or more) and (b) are of the same
    kind but not the same word (embedding similarity to
    each chosen word between ``_ALT_MIN_KIND`` and ``_ALT_MAX_KIND``, no shared four-letter prefix). It is kept
    only when it has at least ``_ALT_MIN_VALUES`` values that together
    cover at least ``_ALT_MIN_SHARE`` of the fragments: two words that alternate are usually two ways of
    saying one thing. Finally two of the values must share a frame (`_share_a_frame`).
    """
    n = len(texts)
    if n < 4:
        return []
    per_text, candidates, words = _candidates(texts, stop_words)
    if len(candidates) < 2:
        return []
    vectors = embedder.embed(words)
    sims = vectors @ vectors.T
    doc_sets = [{i for i, words in enumerate(per_text) if c in words} for c in candidates]
    best: list[int] = []
    best_score = (0, 0.0)
    for seed in range(min(len(candidates), 6)):
        chosen = [seed]
        covered = set(doc_sets[seed])
        for j in range(len(candidates)):
            if j in chosen or len(chosen) >= _ALT_MAX:
                continue
            docs = doc_sets[j]
            # Values of one slot exclude each other; one shared fragment is tolerated between two words
            # that each appear in three fragments or more.
            if any(len(docs & doc_sets[k]) > (1 if min(len(docs), len(doc_sets[k])) >= 3 else 0) for k in chosen):
                continue
            pair = [float(sims[j, k]) for k in chosen]
            if min(pair) < _ALT_MIN_KIND or max(pair) > _ALT_MAX_KIND:
                continue
            if any(candidates[j][:4] == candidates[k][:4] for k in chosen):
                continue
            chosen.append(j)
            covered |= docs
        if len(chosen) < _ALT_MIN_VALUES:
            continue
        # Most fragments covered first; between equals, the set whose words are most of one kind.
        kind = float(np.mean([sims[a, b] for a in chosen for b in chosen if a < b]))
        if kind >= _ALT_SET_KIND and (len(covered), kind) > best_score:
            best, best_score = chosen, (len(covered), kind)
    if len(best) < _ALT_MIN_VALUES or best_score[0] < _ALT_MIN_SHARE * n:
        return []
    if not _share_a_frame([candidates[i] for i in best], texts):
        return []
    return [(words[i], frozenset({candidates[i]})) for i in best]


def _candidates(texts: Sequence[str], stop_words: frozenset[str]) -> tuple[list[set[str]], list[str], list[str]]:
    """(stems of each fragment, candidate value stems, each candidate's most frequent surface word)."""
    per_text = [{_stem(w) for w in _WORD.findall(t.lower()) if w not in stop_words and len(w) >= 3} for t in texts]
    surface: dict[str, Counter[str]] = {}
    for t in texts:
        for w in _WORD.findall(t.lower()):
            if w not in stop_words and len(w) >= 3:
                surface.setdefault(_stem(w), Counter())[w] += 1
    df = Counter(s for words in per_text for s in words)
    candidates = [s for s, c in df.most_common() if _ALT_MIN_SHARE_EACH <= c <= _ALT_MAX_TOPIC * len(texts)]
    return per_text, candidates, [surface[c].most_common(1)[0][0] for c in candidates]


def alternative_words(texts: Sequence[str], stop_words: frozenset[str]) -> list[str]:
    """The words `find_alternatives` embeds for these fragments (to embed them ahead, with others)."""
    if len(texts) < 4:
        return []
    words = _candidates(texts, stop_words)[2]
    return words if len(words) >= 2 else []
