"""Typed value inference for patch synthesis: key_type and value constraints from a cluster's fragments.

The draft's key types are JSON types; a key is only useful to a client when it also says which values
it takes. `infer_value` looks at what the fragments of one cluster state, in this order, and takes the
first kind that at least ``TYPE_SHARE`` of the fragments carry:

1. **dates and times** ("until 2026-12-01T06:00Z", "tomorrow at 06:00", "till tomorrow morning",
   "until 06:00": `moments.find_moment`), when they outnumber durations: a ``string`` with ``Format: date-time``;
   in a deadline cluster (most fragments say until / till / by / before) a duration ("for the next 2
   hours") is read as a deadline too; when more fragments state a quantity of one (non-time) unit than a
   moment, the quantity is the value and the moment its context ("PV yield yesterday 38 kWh");
2. **quantities with one unit** ("20 Mbps", "40 degrees"): ``integer`` or ``number`` with ``Unit:`` and
   a ``Range:`` wide enough for the values seen (0 to the first of 1, 2, 5 x 10^k at or above twice the
   largest, or 0 to 100 for percentages; below zero when every value is: -500 to 0 dBm); a time unit
   ("for two hours", "90 minutes") makes a ``string`` with ``Format: duration`` (ISO 8601, ``PT2H``) instead,
   and so do periods in years or months ("12 years", "a year and a half", "18 months": ``P12Y``, ``P1Y6M``,
   ``P18M``; `an_agent.schemas.periods`) when no quantity of a unit is the value;
3. **identifiers of one kind** (CELL-0401): an ``array`` with ``Item format:``;
4. **time-of-day ranges** ("between 01:00 and 05:00"): a ``string`` with ``Format: <HH:MM-HH:MM>``... kept
   as the existing ``HH:MM-HH:MM`` wording;
5. **a free-form name** (`an_agent.evolution.freeform`): most fragments name a value of one kind that
   differs in each of them ("a Samsung Galaxy S23", "an iPhone 15"; "firmware 21.3.2"; "Maria Lopez"): a
   ``string`` without constraints, each fragment's value its name-like span, and the frame word the
   values share (``info["frame"]``) and the nouns they are said of (``info["kinds"]``, for the name);
6. **a count** ("~1.2k users", "users affected: 2 400", "about 3,500 subscribers": `extract.find_counts`),
   stated by at least ``COUNT_SHARE`` of the fragments: an ``integer`` from 0, no unit (tried after the
   codes of rule 7 and the names of rule 5, whose digits are no count: "tier 3", "iPhone 15");
7. **a closed set of codes** (`an_agent.evolution.codes`): tokens of one shape that fill one slot
   ("4G", "5G", "2G"; "P1", "P3"; "Class A", "class-C"; letter codes in one slot, "LC-LC", "SC/APC
   connectors": `an_agent.evolution.letter_codes`): a ``string`` with ``Acceptable values:`` in their
   natural order, and the frame word the codes share (``info["frame"]``, with ``info["head"]`` for letter
   codes: connector type) for the name;
   then **a closed set of alternatives** (`an_agent.evolution.alternatives`): words of one kind that fill the
   same slot in different fragments ("on battery", "on generator", "back on mains"; "fleet customer",
   "private customer") and rarely appear together, one of which may dominate: a ``string`` with
   ``Acceptable values:`` (the most named value first), and the noun the values qualify, if any, as
   ``info["category"]`` for the name; failing that, words that each fall under one shipped category
   (`an_agent.evolution.categories`: "storm", "snow", "strong wind" are weather), with the category's
   key name as ``info["key"]``;
8. otherwise the fragments state a condition or a wish: a ``boolean`` flag (default false).

Every constraint is written in the description phrases of `an_agent.schemas.template`, so validation
and the JSON Schema projection read the same thing the people and LLMs read.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from an_agent.evolution.alternatives import find_alternatives, mentions, separation, slot_head, values_separate
from an_agent.evolution.categories import CATEGORY_SEPARATION, category_alternatives
from an_agent.evolution.codes import find_codes, label_frame, named_as_labels
from an_agent.evolution.freeform import find_freeform
from an_agent.evolution.moments import DEADLINE, duration_of, find_moment, stamp
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.extract import (
    duration_minutes,
    find_clock_ranges,
    find_counts,
    find_ids,
    find_quantities,
)
from an_agent.schemas.periods import find_periods
from an_agent.schemas.units import MONEY_UNITS, in_unit, kindred
from an_agent.schemas.values import KeyType

TYPE_SHARE = 0.4  # share of fragments that must carry a value kind for the key to take that type
# A bare number is weaker evidence than a number with a unit: most fragments must state one to be a count.
COUNT_SHARE = 0.6
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
    if any(q.unit == "celsius" for qs in found for q in qs):
        # A temperature said in degrees next to °C / Celsius is in Celsius: one unit per key.
        found = [[replace(q, unit="celsius") if q.unit == "degrees" else q for q in qs] for qs in found]
    units = Counter(q[0].unit for q in found if q)
    if not units:
        return None
    unit = units.most_common(1)[0][0]
    kin = kindred(unit)  # m and km are one quantity (miles and feet were converted already)
    if (glued := "m" if "m" in kin else "minutes" if unit in _TIME_UNITS else None) is not None:
        # A number glued to an "m" that its sentence leaves open ("antennas at 38m", "MPO-MPO 5m": metres or
        # minutes?) is in the unit the key's other fragments state: metres in a length key, minutes in a
        # duration. Read only where no quantity of the key's unit was found; the unit was chosen without them.
        found = [
            qs if any(q.unit in kin for q in qs) else find_quantities(t, glued)
            for qs, t in zip(found, texts, strict=True)
        ]
        units = Counter(q[0].unit for q in found if q)
    # The key takes the unit most fragments state, the others of its quantity are converted ("1 870 m" and
    # "4,37 km" in one distance key).
    count = sum(units[u] for u in kin)
    found = [[in_unit(q, unit) for q in qs] for qs in found]
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
    # Money (per a period or not) is a number even when the amounts seen are whole: the next one may have cents.
    whole = unit not in MONEY_UNITS and all(float(v).is_integer() for v in present)
    kind: KeyType = "integer" if whole else "number"
    low = min(present)
    high = 100.0 if unit == "percent" else _upper_bound(max(abs(v) for v in present))
    low_bound = -high if low < 0 else 0.0
    # Only negative values (signal levels: -120 to -105 dBm) are a range below zero, not around it.
    high_bound = 0.0 if max(present) < 0 else high
    phrases = (f"Unit: {unit}.", f"Range: {_fmt(low_bound)} to {_fmt(high_bound)}.")
    shown = tuple(int(v) if v is not None and kind == "integer" else v for v in values_f)
    observed = (min(present), max(present))
    return ValueSpec(
        kind, shown, phrases, unit=unit, info={"observed": observed, "unit": unit, "range": (low_bound, high_bound)}
    )


def _period_spec(texts: Sequence[str]) -> ValueSpec | None:
    """Periods in years or months ("12 years", "over a decade", "a year and a half", "18 months":
    `periods.find_periods`), when >= ``TYPE_SHARE`` of the fragments state one: a ``string`` with
    ``Format: duration`` (ISO 8601 years and months, P12Y, P1Y6M, P18M), as a duration in hours or days is."""
    periods = [find_periods(t) for t in texts]
    if sum(1 for p in periods if p) < TYPE_SHARE * len(texts):
        return None
    values = tuple(p[0].iso if p else None for p in periods)
    info = {"meaning": "an ISO 8601 duration", "calendar": True}
    return ValueSpec("string", values, ("Format: duration.",), value_format="duration", info=info)


def _id_spec(texts: Sequence[str]) -> ValueSpec | None:
    ids = [find_ids(t) for t in texts]
    prefixes = Counter(i[0].prefix for i in ids if i)
    if not prefixes:
        return None
    prefix, count = prefixes.most_common(1)[0]
    if count < TYPE_SHARE * len(texts):
        return None
    values = tuple([f.value for f in found if f.prefix == prefix] or None for found in ids)
    dashes = Counter(f.dash for found in ids for f in found if f.prefix == prefix)
    # INC4303720: numbers written without a dash keep their own shape (a prefix and digits).
    item = f"{prefix}-<alnum>" if dashes.most_common(1)[0][0] else f"{prefix}<digits>"
    return ValueSpec("array", values, (f"Item format: {item}.",), id_prefix=prefix)


def _datetime_spec(texts: Sequence[str], written: Sequence[float]) -> ValueSpec | None:
    """Date-times, when >= ``TYPE_SHARE`` of the fragments name one and they outnumber durations.

    ``written``: when each fragment was written; a relative moment ("tonight 22:00", "tomorrow 8am") is
    read from its own fragment's time, not from the time of the synthesis. A deadline cluster ("hold until
    06:00", "until tomorrow morning", "for the next 2 hours") mixes moments and durations: when most of its
    fragments say until / till / by / before, a duration is read as a deadline too (the fragment's time +
    the duration), so every fragment with a time gets a value.
    """
    moments = [find_moment(t, at) for t, at in zip(texts, written, strict=True)]
    count = sum(1 for m in moments if m)
    durations = [duration_of(t) for t in texts]
    if count < TYPE_SHARE * len(texts) or count < sum(1 for d in durations if d is not None):
        return None
    if sum(1 for t in texts if DEADLINE.search(t)) >= 0.5 * len(texts):
        moments = [
            m or (stamp(_second(at) + timedelta(minutes=d)) if d is not None else None)
            for m, d, at in zip(moments, durations, written, strict=True)
        ]
    return ValueSpec("string", tuple(moments), ("Format: date-time.",), value_format="date-time")


def _second(at: float) -> datetime:
    return datetime.fromtimestamp(at, tz=UTC).replace(microsecond=0)


def _count_spec(texts: Sequence[str]) -> ValueSpec | None:
    """A count ("~1.2k users", "users affected: 2 400", "about 3,500 subscribers"), when at least
    ``COUNT_SHARE`` of the fragments state one: an ``integer`` from 0 (`_upper_bound` above the largest)."""
    counts = [find_counts(t) for t in texts]
    values = tuple(c[0][0] if c else None for c in counts)
    present = [v for v in values if v is not None]
    if len(present) < COUNT_SHARE * len(texts):
        return None
    high = _upper_bound(max(present))
    phrases = (f"Range: 0 to {_fmt(high)}.",)
    return ValueSpec("integer", values, phrases, info={"observed": (min(present), max(present)), "count": True})


def _carried(spec: ValueSpec) -> int:
    """How many fragments have a value of ``spec``."""
    return sum(1 for v in spec.values if v is not None)


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
    written: Sequence[float] | None = None,
) -> ValueSpec:
    """The `ValueSpec` of a cluster's fragments (module docstring for the order of the rules).

    With the fragments' unit ``vectors``, a closed set must also pass `values_separate`. ``written``:
    when each fragment was written (relative moments are read from it); ``now`` for all when omitted.
    """
    # Date-times go first when they outnumber durations (`_datetime_spec`): a deadline cluster also says
    # "for the next 2 hours"; otherwise a duration is a quantity and quantities come first. A quantity of
    # another unit that more fragments state than a moment is the value, the moment its context ("PV
    # yield yesterday 38 kWh", "traffic peak 950 Mbps at 19:00").
    moment, quantity = _datetime_spec(texts, written or [now] * len(texts)), _quantity_spec(texts)
    if (
        moment is not None
        and quantity is not None
        and quantity.unit is not None
        and _carried(quantity) > _carried(moment)
    ):
        moment = None
    for spec in (moment, quantity, _period_spec(texts), _id_spec(texts), _clock_range_spec(texts)):
        if spec is not None:
            return spec
    # Codes (2G / 4G / 5G, P1-P4, Class A / B / C) are recognised by their shape, not their words.
    if (codes := find_codes(texts, stop_words)) is not None:
        phrases = (f"Acceptable values: {', '.join(codes.enum)}.",)
        coded: dict[str, Any] = {"codes": True, "frame": codes.frame}
        if codes.kind is not None:
            coded["kind"] = codes.kind
        if codes.head is not None:
            coded["head"] = codes.head
        if codes.of is not None:
            coded["category"] = codes.of  # what a classifier frame is of: cable category
        return ValueSpec("string", codes.values, phrases, enum=codes.enum, info=coded)
    # Names that differ in every fragment go before closed sets: no value recurs, so no set could form,
    # and a shipped category would read a few of them as its words ("Samsung", "Nokia": devices).
    if (freeform := find_freeform(texts, stop_words)) is not None:
        named = {"freeform": True, "frame": freeform.frame, "kinds": freeform.kinds}
        return ValueSpec("string", freeform.values, info=named)
    if (count := _count_spec(texts)) is not None:
        return count
    alternatives = find_alternatives(texts, embedder, stop_words)
    if (
        alternatives
        and vectors is not None
        and not values_separate(alternatives, texts, vectors)
        and not named_as_labels([v for v, _ in alternatives], texts)  # Gold / Silver / Bronze: codes in words
    ):
        alternatives = []
    info: dict[str, Any] = {}
    if alternatives:
        head = slot_head(texts, alternatives, stop_words)
        info = {"category": head} if head else {}
        words = [v for v, _ in alternatives]
        if named_as_labels(words, texts) and (frame := label_frame(words, texts, stop_words)) is not None:
            info["frame"] = frame  # labels are named by the word they are said after: "tier: Silver"
    elif vectors is not None and (found := category_alternatives(texts, embedder, stop_words)) is not None:
        # No shared frame, but each word falls under one shipped category ("storm", "snow", "strong wind":
        # weather): the category is the evidence of a slot, the separation only rejects wordings.
        margin = separation(found.values, texts, vectors)
        if margin is not None and margin >= CATEGORY_SEPARATION:
            alternatives = found.values
            info = {"key": found.category.key, "category_margins": found.margins, "separation": round(margin, 3)}
    if alternatives:
        values = tuple(next((v for v, forms in alternatives if mentions(t, forms)), None) for t in texts)
        enum = tuple(v for v, _ in alternatives)
        return ValueSpec("string", values, (f"Acceptable values: {', '.join(enum)}.",), enum=enum, info=info)
    return ValueSpec("boolean", tuple(True for _ in texts))
