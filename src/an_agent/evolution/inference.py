"""Typed value inference for patch synthesis: key_type and value constraints from a cluster's fragments.

The draft's key types are JSON types; a key is only useful to a client when it also says which values
it takes. `infer_value` looks at what the fragments of one cluster state, in this order, and takes the
first kind that at least ``TYPE_SHARE`` of the fragments carry:

1. **dates and times** ("until 2026-12-01T06:00Z", "tomorrow at 06:00", "till tomorrow morning",
   "until 06:00": `moments.find_moment`), when they outnumber durations: a ``string`` with ``Format: date-time``;
   in a deadline cluster (most fragments say until / till / by / before) a duration ("for the next 2
   hours") is read as a deadline too;
2. **quantities with one unit** ("20 Mbps", "40 degrees"): ``integer`` or ``number`` with ``Unit:`` and
   a ``Range:`` wide enough for the values seen (0 to the first of 1, 2, 5 x 10^k at or above twice the
   largest, or 0 to 100 for percentages); a time unit ("for two hours", "90 minutes") makes a ``string``
   with ``Format: duration`` (ISO 8601, ``PT2H``) instead;
3. **identifiers of one kind** (CELL-0401): an ``array`` with ``Item format:``;
4. **time-of-day ranges** ("between 01:00 and 05:00"): a ``string`` with ``Format: <HH:MM-HH:MM>``... kept
   as the existing ``HH:MM-HH:MM`` wording;
5. **a closed set of alternatives** (`find_alternatives`): words of one kind that fill the same slot in
   different fragments ("on battery", "on generator", "back on mains") and rarely appear together, one of
   which may dominate: a ``string`` with ``Acceptable values:`` (the most named value first);
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
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from an_agent.evolution.moments import DEADLINE, duration_of, find_moment, stamp
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.extract import (
    duration_minutes,
    find_clock_ranges,
    find_ids,
    find_quantities,
)
from an_agent.schemas.values import KeyType

TYPE_SHARE = 0.4  # share of fragments that must carry a value kind for the key to take that type
_ALT_MIN_SHARE = 0.6  # share of fragments the alternatives of a closed set must cover together
_ALT_MIN_VALUES = 3  # fewer distinct values is a phrasing habit (hot / thermal), not a closed set
_ALT_MAX_TOPIC = 0.75  # a word in more fragments than this is the cluster's topic, not a value
_ALT_MIN_SHARE_EACH = 2  # fragments each value must appear in (a word said once is a wording, not a choice)
_ALT_MIN_KIND = 0.25  # mean similarity of a new alternative to those chosen: they must be words of one kind ...
_ALT_MIN_PAIR = 0.15  # ... and no pair far apart (battery / grid is 0.20, battery / mains 0.26 with MiniLM)
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
    """The first of 1, 2, 5 x 10^k at or above twice the largest value (45 degrees -> 100, 55 -> 200)."""
    if largest <= 0:
        return 0.0
    target = largest * 2
    power = 10.0 ** math.floor(math.log10(target))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= target * (1 - 1e-9))


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
    """Date-times, when >= ``TYPE_SHARE`` of the fragments name one and they outnumber durations.

    A deadline cluster ("hold until 06:00", "until tomorrow morning", "for the next 2 hours") mixes
    moments and durations: when most of its fragments say until / till / by / before, a duration is
    read as a deadline too (``now`` + the duration), so every fragment with a time gets a value.
    """
    moments = [find_moment(t, now) for t in texts]
    count = sum(1 for m in moments if m)
    durations = [duration_of(t) for t in texts]
    if count < TYPE_SHARE * len(texts) or count < sum(1 for d in durations if d is not None):
        return None
    if sum(1 for t in texts if DEADLINE.search(t)) >= 0.5 * len(texts):
        start = datetime.fromtimestamp(now, tz=UTC).replace(microsecond=0)
        moments = [
            m or (stamp(start + timedelta(minutes=d)) if d is not None else None)
            for m, d in zip(moments, durations, strict=True)
        ]
    return ValueSpec("string", tuple(moments), ("Format: date-time.",), value_format="date-time")


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
    # Date-times go first when they outnumber durations (`_datetime_spec`): a deadline cluster also says
    # "for the next 2 hours"; otherwise a duration is a quantity and quantities come first.
    for spec in (
        _datetime_spec(texts, now),
        _quantity_spec(texts),
        _id_spec(texts),
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
    for suffix in ("ing", "ed"):  # flooding / flooded -> flood; short words (bed, sing) stay whole
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _mentions(text: str, forms: frozenset[str]) -> bool:
    return bool({_stem(w) for w in _WORD.findall(text.lower())} & forms)


# Fragments naming one value are closer to each other than to the rest by this much. MiniLM: slots separate
# by 0.27-0.28 on the probes (power source, weather), 0.18-0.24 on the held-out corpus (weather, customer
# kinds); wordings of one idea by 0.02-0.07 (sms / text / phone, rollback), 0.10-0.14 for the closest
# (iot sensors / meters / devices, roaming users / roamers, firmware update / download).
_SEPARATION = 0.15


def _values_separate(
    alternatives: Sequence[tuple[str, frozenset[str]]], texts: Sequence[str], vectors: Vectors
) -> bool:
    """True when fragments naming the same value are closer to each other than to fragments naming another.

    Slot values mean different things ("on battery" vs "on generator"): the fragments group by value.
    Wordings of one idea ("runs hot", "thermal alarm", "temperature alarm") are interchangeable: fragments
    that use one are as close to those using another as to each other.
    """
    groups = [[i for i, t in enumerate(texts) if _mentions(t, forms)] for _, forms in alternatives]
    # A fragment naming two values belongs to neither; a value named once has no "within" pairs and only
    # adds noise to "between": the recurring values decide.
    named = Counter(i for g in groups for i in g)
    groups = [[i for i in g if named[i] == 1] for g in groups]
    groups = [g for g in groups if len(g) >= 2]
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
    different wordings of one idea ("heat wave", "runs hot", "cabinet temperature") do not. A frame
    word the cluster is about (in half of the fragments or more: "shared site" / "shared tower" in a
    cluster about sharing) makes no slot: it is the idea, and the words it qualifies are wordings of it.
    """
    topic = Counter(s for t in texts for s in {_stem(w) for w in _WORD.findall(t.lower())})
    # Content words only: "on" in half of the fragments is the slot's frame ("on battery", "on mains").
    not_a_frame = _NOT_A_FRAME | {w for w, c in topic.items() if c >= 0.5 * len(texts) and len(w) >= 4}
    frames: dict[str, set[tuple[str, str]]] = {v: set() for v in values}
    for text in texts:
        words = [w for w in _WORD.findall(text.lower()) if w not in _ARTICLES]
        for i, word in enumerate(words):
            stem = _stem(word)
            if stem in frames:
                if i > 0 and _stem(words[i - 1]) not in not_a_frame:
                    frames[stem].add(("before", words[i - 1]))
                if i + 1 < len(words) and _stem(words[i + 1]) not in not_a_frame:
                    frames[stem].add(("after", words[i + 1]))
    return any(frames[a] & frames[b] for i, a in enumerate(values) for b in values[i + 1 :])


def find_alternatives(
    texts: Sequence[str], embedder: Embedder, stop_words: frozenset[str]
) -> list[tuple[str, frozenset[str]]]:
    """A closed set of values the fragments choose from, as (value, stems that mention it), or [].

    Candidates are content words in at least two fragments (a word said once is a wording, not a choice)
    and not in most of them (the topic), and not a modifier of other candidates ("heavy" in "heavy rain",
    "heavy storm": it is the frame of the slot, `_modifiers`). From each of the most frequent candidates,
    the set grows by the admissible word most of the kind of those chosen: a word that (a) excludes the
    values chosen (`_excludes`: values of one slot are named in different fragments; one overlap is
    tolerated with a value named three times or more: "on batteries, the mains supply dropped") and (b)
    is of the same kind but not the same word (mean embedding similarity to the chosen words at least
    ``_ALT_MIN_KIND``, none below ``_ALT_MIN_PAIR`` or above ``_ALT_MAX_KIND``, not `_same_family`).
    A word never named alone is then dropped as context ("customer" in "a VIP customer"). One value may
    dominate ("battery" in most fragments, "generator" and "mains" in two). The set needs
    ``_ALT_MIN_VALUES`` values covering ``_ALT_MIN_SHARE`` of the fragments, and two of them must share a
    frame (`_share_a_frame`); the largest such set wins (between equals, the most of one kind). Synonyms
    are merged only by stem (batteries / battery, flooded / flooding): two different words stay two values
    (UPS is not battery, grid is not mains), because the embedding cannot tell a synonym from a sibling
    of the same kind; a value named once (UPS) is left out.
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
    modifiers = _modifiers(texts, candidates, doc_sets)
    best: list[int] = []
    best_score = (0, 0.0)
    seeds = [i for i in range(len(candidates)) if i not in modifiers][:6]
    for seed in seeds:
        chosen = [seed]
        while len(chosen) < _ALT_MAX:
            # The next value is the admissible word most of the kind of those chosen (not the most frequent:
            # "site", "fault", "outage" are frequent in a cluster of customer kinds, and loosely kin).
            admissible = []
            for j in range(len(candidates)):
                if j in chosen or j in modifiers or not _excludes(doc_sets[j], [doc_sets[k] for k in chosen]):
                    continue
                pair = [float(sims[j, k]) for k in chosen]
                if float(np.mean(pair)) < _ALT_MIN_KIND or min(pair) < _ALT_MIN_PAIR or max(pair) > _ALT_MAX_KIND:
                    continue
                if not any(_same_family(candidates[j], candidates[k]) for k in chosen):
                    admissible.append((float(np.mean(pair)), -j))
            if not admissible:
                break
            j = -max(admissible)[1]
            chosen.append(j)
        # A value is named alone somewhere: a word whose every fragment also names another value is
        # context ("customer" in "a VIP customer", "an enterprise customer", "a hospital ..., priority
        # customer"), while "storm" stays with "snow storm" and "flooded after the storm".
        chosen = [k for k in chosen if not doc_sets[k] <= set().union(*(doc_sets[m] for m in chosen if m != k))]
        covered = set().union(*(doc_sets[k] for k in chosen))
        if len(chosen) < _ALT_MIN_VALUES:
            continue
        # Most fragments covered first; between equals, the set whose words are most of one kind.
        kind = float(np.mean([sims[a, b] for a in chosen for b in chosen if a < b]))
        if kind < _ALT_SET_KIND or (len(covered), kind) <= best_score:
            continue
        if _share_a_frame([candidates[i] for i in chosen], texts):
            best, best_score = chosen, (len(covered), kind)
    if best_score[0] < _ALT_MIN_SHARE * n:
        return []
    # Values in the order of how often they are named: the dominant value first.
    best.sort(key=lambda i: (-len(doc_sets[i]), i))
    return [(words[i], frozenset({candidates[i]})) for i in best]


def _same_family(a: str, b: str) -> bool:
    """Two spellings or derivations of one word: a shared four-letter prefix, or one inside the other
    (tilt / downtilt / uptilt)."""
    return a[:4] == b[:4] or (min(len(a), len(b)) >= 4 and (a in b or b in a))


def _excludes(docs: set[int], chosen: Sequence[set[int]]) -> bool:
    """True when a word (the fragments ``docs`` using it) can be another value of the slot of ``chosen``.

    Values of one slot exclude each other. One shared fragment is tolerated with one chosen value, when
    the word recurs and that value is used in three fragments or more ("on batteries, the mains supply
    dropped" names the old and the new power source); a word that shares fragments with two values
    ("rain flooded the access road", "snow is blocking the access road") is context, not a value.
    """
    shared = [(len(docs & other), len(other)) for other in chosen if docs & other]
    if not shared:
        return True
    return len(shared) == 1 and shared[0][0] == 1 and len(docs) >= 2 and shared[0][1] >= 3


def _modifiers(texts: Sequence[str], candidates: Sequence[str], doc_sets: Sequence[set[int]]) -> set[int]:
    """Candidates that mostly stand right before another recurring candidate ("heavy rain", "strong wind").

    Such a word qualifies the slot's value rather than being one: more than half of its uses precede a
    different recurring candidate.
    """
    index = {c: i for i, c in enumerate(candidates)}
    recurring = {c for c, docs in zip(candidates, doc_sets, strict=True) if len(docs) >= 2}
    before: Counter[str] = Counter()
    uses: Counter[str] = Counter()
    for text in texts:
        stems = [_stem(w) for w in _WORD.findall(text.lower())]
        for a, b in zip(stems, [*stems[1:], ""], strict=True):
            if a in index:
                uses[a] += 1
                if b in recurring and b != a:
                    before[a] += 1
    return {index[c] for c, k in before.items() if k > 0.5 * uses[c]}


def _candidates(texts: Sequence[str], stop_words: frozenset[str]) -> tuple[list[set[str]], list[str], list[str]]:
    """(stems of each fragment, candidate value stems, each candidate's most frequent surface word).

    Candidates are the words in at least ``_ALT_MIN_SHARE_EACH`` fragments and at most ``_ALT_MAX_TOPIC``
    of them, most frequent first.
    """
    per_text = [{_stem(w) for w in _WORD.findall(t.lower()) if w not in stop_words and len(w) >= 3} for t in texts]
    surface: dict[str, Counter[str]] = {}
    for t in texts:
        for w in _WORD.findall(t.lower()):
            if w not in stop_words and len(w) >= 3:
                surface.setdefault(_stem(w), Counter())[w] += 1
    df = Counter(s for words in per_text for s in words)
    candidates = [s for s, c in df.most_common() if _ALT_MIN_SHARE_EACH <= c <= _ALT_MAX_TOPIC * len(texts)]
    return per_text, candidates, [_surface(c, surface[c]) for c in candidates]


def _surface(stem: str, spellings: Counter[str]) -> str:
    """The word that names a value: its most frequent spelling, or its stem when it only appears as
    verb forms of it (flooding / flooded -> flood)."""
    if len(spellings) > 1 and all(w.endswith(("ing", "ed")) for w in spellings):
        return stem
    return min(spellings.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0]


def alternative_words(texts: Sequence[str], stop_words: frozenset[str]) -> list[str]:
    """The words `find_alternatives` embeds for these fragments (to embed them ahead, with others)."""
    if len(texts) < 4:
        return []
    words = _candidates(texts, stop_words)[2]
    return words if len(words) >= 2 else []
