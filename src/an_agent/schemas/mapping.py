"""Natural language -> structured payload, offline (draft section 6.1, client side).

The request is cut into clauses (sentences, then commas and "and"/"but" before a lower-case word). Each
clause proposes (key, value, confidence) candidates, using only what the template states:

- identifiers (CELL-0401, SITE-07, TT-88213) go to the keys whose ``Format``/``Item format`` has that
  prefix, or whose examples show it; among several such keys the clause's similarity to each key's
  anchors (name, first sentence, example phrases) decides;
- quantities with a unit go to the numeric keys of that unit (``_db``, ``_deg``, ``_percent``,
  ``_minutes`` ... in the key name); time spans are converted to minutes; the sign follows the key's
  own examples (words that only appear in its negative examples, like 'lower' or 'uptilt', negate);
- dates and times go to keys with ``Format: date-time`` / ``date``;
- enumerations: a value named literally in the clause ('critical', 'base station outage'), or by all
  its words in any form ('the port is faulty' -> port_fault), else the value of the most similar
  example phrase; booleans and free-text keys: the most similar example phrase;
- a required key left empty takes the one identifier of the whole text that fits it (an id the
  context gave to another key: 'ticket TT-1 for SITE-07: the fibre is cut' -> device SITE-07);
- confidence is the embedding similarity that chose the key (typed values with a single compatible key
  are certain). A clause whose best candidate stays below ``threshold`` is not guessed: it goes to
  ``other``, as the draft recommends ("confidence thresholding").

The `Embedder` is injected (`an_agent.evolution.embedder.MiniLMEmbedder` in the CLI). An optional
``llm`` hook may post-process the result; the default mapping needs no network.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from an_agent.schemas.anchors import example_mappings, key_anchors
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.extract import (
    Quantity,
    duration_minutes,
    find_datetimes,
    find_ids,
    find_numbers,
    find_quantities,
)
from an_agent.schemas.template import OTHER_KEY, KeyDef, Template
from an_agent.schemas.units import CURRENCIES, MONEY_PERIOD_WORD

DEFAULT_THRESHOLD = 0.45
_CERTAIN = 0.99
# A dot between two digits is a decimal or a group mark ("1.5 dB", "EUR 2.450,50"), no clause's end.
_SPLIT = re.compile(
    r"(?:[;!?\n]|\.(?!\d)|(?<!\d)\.)+\s*|:\s+|,\s+(?:and\s+|but\s+)?|(?<!\s)\s+(?:and|but|also|plus|because)\s+(?=[a-z])"
)
_UNIT_OF_KEY = {  # a key's name ends with its unit; the longer suffix first ("_db_per_km" is not "_km")
    "db_per_km": "db_per_km",
    "v_per_m": "v_per_m",
    "w_per_m2": "w_per_m2",
    "dbm": "dbm",
    "db": "db",
    "deg": "degrees",
    "degrees": "degrees",
    "percent": "percent",
    "pct": "percent",
    "minutes": "minutes",
    "min": "minutes",
    "hours": "hours",
    "days": "days",
    "mbps": "mbps",
    "kmh": "kmh",
    "km": "km",
    "m": "m",
    "eur_per_month": "eur_per_month",
    "usd_per_month": "usd_per_month",
    "gbp_per_month": "gbp_per_month",
    "eur": "eur",
    "usd": "usd",
    "gbp": "gbp",
    "kwh": "kwh",
    "rpm": "rpm",
    "mmh": "mmh",
    "lh": "lh",
    "volt": "volt",
    "v": "volt",
    "celsius": "celsius",
    "seconds": "seconds",
    "ms": "ms",
    "mhz": "mhz",
    "kw": "kw",
    "gb": "gb",
    "litres": "litres",
}
_TIME_UNITS = ("seconds", "minutes", "hours", "days", "weeks")
_STOP = frozenset(
    (
        "a",
        "an",
        "the",
        "by",
        "to",
        "of",
        "for",
        "on",
        "in",
        "at",
        "is",
        "are",
        "be",
        "my",
        "me",
        "we",
        "our",
        "it",
        "this",
        "that",
        "with",
        "and",
        "or",
    )
)


@dataclass(frozen=True)
class Assignment:
    """One value put into the payload: from which clause, how, and with what confidence."""

    key: str
    value: Any
    clause: str
    confidence: float
    how: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "value": self.value,
            "clause": self.clause,
            "confidence": round(self.confidence, 3),
            "how": self.how,
        }


@dataclass
class MappingResult:
    """The envelope to send, how each value was found, and what went to ``other``."""

    schema_id: str
    payload: dict[str, Any]
    assignments: list[Assignment] = field(default_factory=list)
    other: list[str] = field(default_factory=list)
    missing_required: list[str] = field(default_factory=list)

    @property
    def envelope(self) -> dict[str, Any]:
        return {"schema_id": self.schema_id, "payload": self.payload}

    def to_dict(self) -> dict[str, Any]:
        return {
            "envelope": self.envelope,
            "assignments": [a.to_dict() for a in self.assignments],
            "other": self.other,
            "missing_required": self.missing_required,
        }


LlmHook = Callable[[Template, str, MappingResult], MappingResult]


def split_clauses(text: str) -> list[str]:
    """The request cut into clauses (see module docstring); empty pieces dropped."""
    return [c.strip(" ,") for c in _SPLIT.split(text) if c and c.strip(" ,")]


def key_unit(key: KeyDef) -> str | None:
    """The unit a key's name ends with (``duration_minutes`` -> minutes, ``loss_db_per_km`` -> db_per_km), or None.

    A key of money named monthly holds an amount per month (``monthly_fee_eur`` -> eur_per_month,
    `units.per_month`): its name says the period with the word people use, not with "_per_month"."""
    for suffix, unit in _UNIT_OF_KEY.items():
        if key.key_name.endswith("_" + suffix):
            if unit in CURRENCIES and MONEY_PERIOD_WORD in key.key_name.split("_"):
                return f"{unit}_per_month"
            return unit
    return None


def _id_prefixes(key: KeyDef) -> set[str]:
    prefixes = set()
    for pattern in (key.constraints.value_format, key.constraints.item_format):
        if pattern and "-<" in pattern:
            prefixes.add(pattern.split("-<")[0])
    for _, value in example_mappings(key):
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                prefixes.update(found.prefix for found in find_ids(item) if found.value == item)
    return prefixes


def _negative_cues(key: KeyDef) -> set[str]:
    """Words of the key's negative-valued examples that none of its positive examples use."""
    neg: set[str] = set()
    pos: set[str] = set()
    for phrase, value in example_mappings(key):
        if isinstance(value, int | float) and not isinstance(value, bool):
            words = {w for w in re.findall(r"[a-z]+", phrase.lower()) if w not in _STOP}
            (neg if value < 0 else pos).update(words)
    return neg - pos - {"db", "degree", "degrees", "percent", "minutes", "hours"}


class _Keys:
    """Per-template precomputation: anchor vectors, example vectors, units, id prefixes."""

    def __init__(self, template: Template, embedder: Embedder) -> None:
        self.keys = [k for k in template.keys if k.key_name != OTHER_KEY]
        self.embedder = embedder
        anchors = [key_anchors(k) for k in self.keys]
        flat = [a for group in anchors for a in group]
        vectors = embedder.embed(flat) if flat else np.zeros((0, embedder.dimension), dtype=np.float32)
        self.anchor_vectors: list[Vectors] = []
        pos = 0
        for group in anchors:
            self.anchor_vectors.append(vectors[pos : pos + len(group)])
            pos += len(group)
        self.examples = [example_mappings(k) for k in self.keys]
        phrases = [p for ex in self.examples for p, _ in ex]
        example_vectors = embedder.embed(phrases) if phrases else np.zeros((0, embedder.dimension), np.float32)
        self.example_vectors: list[Vectors] = []
        pos = 0
        for ex in self.examples:
            self.example_vectors.append(example_vectors[pos : pos + len(ex)])
            pos += len(ex)
        self.units = [key_unit(k) for k in self.keys]
        self.prefixes = [_id_prefixes(k) for k in self.keys]
        self.negatives = [_negative_cues(k) for k in self.keys]

    def similarity(self, index: int, clause_vector: Vectors) -> float:
        return float(np.max(self.anchor_vectors[index] @ clause_vector))


def _fits(keys: _Keys, quantity: Quantity) -> list[int]:
    """The keys that take ``quantity`` by their unit."""
    return [
        i
        for i, unit in enumerate(keys.units)
        if unit == quantity.unit
        or (unit == "minutes" and quantity.unit in _TIME_UNITS)
        # A temperature key named _deg (synthesised before a Celsius spelling was its own unit) takes °C.
        or (unit == "degrees" and quantity.unit == "celsius")
    ]


def _quantities(clause: str, keys: _Keys, sims: list[float]) -> list[Quantity]:
    """The clause's quantities; a number glued to an "m" that its sentence leaves open ("antenna at 38m")
    is metres or minutes as the key it fits best says (a length key or a time key)."""
    found = find_quantities(clause)
    for glued in (q for q in find_quantities(clause, "m") if q not in found):
        readings = [glued, replace(glued, unit="minutes")]
        fitting = [(max(sims[i] for i in fits), q) for q in readings if (fits := _fits(keys, q))]
        if fitting:
            found.append(max(fitting, key=lambda f: f[0])[1])
    return found


def map_text(
    template: Template,
    text: str,
    embedder: Embedder,
    *,
    now: float,
    threshold: float = DEFAULT_THRESHOLD,
    llm: LlmHook | None = None,
) -> MappingResult:
    """Map a natural-language request to a payload for ``template`` (module docstring).

    ``now`` anchors relative dates ('tomorrow'). Never raises for odd text: what cannot be mapped with
    enough confidence ends up in ``other``.
    """
    keys = _Keys(template, embedder)
    clauses = split_clauses(text)
    clause_vectors = embedder.embed(clauses) if clauses else np.zeros((0, embedder.dimension), np.float32)
    best: dict[str, Assignment] = {}
    arrays: dict[str, list[Assignment]] = {}
    leftovers: list[str] = []
    for clause, vector in zip(clauses, clause_vectors, strict=True):
        candidates = _candidates(keys, clause, vector, now, threshold)
        confident = [c for c in candidates if c.confidence >= threshold]
        if not confident:
            leftovers.append(clause)
            continue
        for cand in confident:
            key = next(k for k in keys.keys if k.key_name == cand.key)
            if key.key_type == "array":
                arrays.setdefault(cand.key, []).append(cand)
            elif cand.key not in best or cand.confidence > best[cand.key].confidence:
                best[cand.key] = cand
    payload: dict[str, Any] = {}
    assignments: list[Assignment] = []
    for key in keys.keys:
        if key.key_name in arrays:
            values: list[Any] = []
            for cand in arrays[key.key_name]:
                values.extend(v for v in cand.value if v not in values)
                assignments.append(cand)
            payload[key.key_name] = values
        elif key.key_name in best:
            payload[key.key_name] = best[key.key_name].value
            assignments.append(best[key.key_name])
    if leftovers:
        payload[OTHER_KEY] = leftovers[0] if len(leftovers) == 1 else leftovers
    assignments.extend(_sole_identifiers(keys, text, payload))
    missing = [k.key_name for k in template.keys if k.required and k.key_name not in payload]
    result = MappingResult(template.schema_id, payload, assignments, leftovers, missing)
    return llm(template, text, result) if llm is not None else result


def _candidates(keys: _Keys, clause: str, vector: Vectors, now: float, threshold: float) -> list[Assignment]:
    out = _typed(keys, clause, vector, now)
    taken = {a.key for a in out}
    # By meaning: the closest example phrase of enumeration, boolean and free-text keys.
    for i, key in enumerate(keys.keys):
        if key.key_name in taken or not keys.examples[i] or key.key_type not in ("string", "boolean"):
            continue
        if key.constraints.value_format or keys.prefixes[i]:
            continue
        sims_ex = keys.example_vectors[i] @ vector
        j = int(np.argmax(sims_ex))
        similarity = float(sims_ex[j])
        if similarity < threshold:
            continue
        free_text = key.key_type == "string" and not key.constraints.enum
        value = clause if free_text else keys.examples[i][j][1]
        out.append(Assignment(key.key_name, value, clause, similarity, "closest example"))
    return out


def _typed(keys: _Keys, clause: str, vector: Vectors, now: float) -> list[Assignment]:
    """Candidates from values the clause contains: ids, quantities, dates, counts, named enumeration values."""
    out: list[Assignment] = []
    sims = [keys.similarity(i, vector) for i in range(len(keys.keys))]
    lowered = clause.lower()
    out.extend(_ids(keys, clause, sims))
    for quantity in _quantities(clause, keys, sims):
        fits = _fits(keys, quantity)
        if not fits:
            continue
        i = max(fits, key=lambda j: sims[j])
        key = keys.keys[i]
        number = duration_minutes(quantity) if keys.units[i] == "minutes" else quantity.value
        if number is None:
            continue
        if keys.negatives[i] & set(re.findall(r"[a-z]+", lowered)):
            number = -abs(number)
        value: Any = round(number) if key.key_type == "integer" or float(number).is_integer() else number
        confidence = _CERTAIN if len(fits) == 1 else max(sims[i], _CERTAIN * 0.5)
        out.append(Assignment(key.key_name, value, clause, confidence, f"quantity in {quantity.unit}"))
    stamps = find_datetimes(clause, now)
    fits = [i for i, k in enumerate(keys.keys) if k.constraints.value_format in ("date-time", "date")]
    if stamps and fits:
        i = max(fits, key=lambda j: sims[j])
        key = keys.keys[i]
        stamp = stamps[0][0] if key.constraints.value_format == "date-time" else stamps[0][0][:10]
        out.append(Assignment(key.key_name, stamp, clause, max(sims[i], _CERTAIN * 0.5), "date"))
    if not out:
        numbers = find_numbers(clause)
        fits = [i for i, k in enumerate(keys.keys) if k.key_type == "integer" and keys.units[i] is None]
        if numbers and fits:
            i = max(fits, key=lambda j: sims[j])
            out.append(Assignment(keys.keys[i].key_name, int(numbers[0][0]), clause, sims[i], "number"))
    words = re.findall(r"[a-z0-9]+", lowered)
    for i, key in enumerate(keys.keys):
        for option in key.constraints.enum:
            if re.search(rf"\b{re.escape(option.replace('_', ' ').lower())}\b", lowered):
                out.append(Assignment(key.key_name, option, clause, max(sims[i], _CERTAIN * 0.6), "named value"))
                break
        else:
            # Words of a value, inflected or apart ('the port is faulty' -> port_fault): a little less sure.
            for option in key.constraints.enum:
                if _named_by_words(option, words):
                    out.append(Assignment(key.key_name, option, clause, max(sims[i], _CERTAIN * 0.55), "value words"))
                    break
    return out


def _named_by_words(option: str, words: list[str]) -> bool:
    """True when every word of a several-word value appears in ``words``, each as itself or with another
    ending of the same stem (failure/failing, degradation/degraded, calls/call); short words exactly."""
    parts = [p for p in option.lower().split("_") if p]
    return len(parts) > 1 and all(any(_same_stem(part, word) for word in words) for part in parts)


def _same_stem(a: str, b: str) -> bool:
    if a == b:
        return True
    common = next((n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return common >= 4 and common >= min(len(a), len(b)) - 3


def _sole_identifiers(keys: _Keys, text: str, payload: dict[str, Any]) -> list[Assignment]:
    """Fill a required key left empty from the one identifier of the text that fits it (added to ``payload``).

    An identifier went to the key its context suggested ('ticket TT-1 for SITE-07' -> the sites); a
    required key that also takes that kind of identifier (the device to repair) and got none takes it
    too, when exactly one such identifier appears in the whole text.
    """
    out: list[Assignment] = []
    found = find_ids(text)
    for i, key in enumerate(keys.keys):
        if not key.required or key.key_name in payload or not keys.prefixes[i]:
            continue
        values = list(dict.fromkeys(f.value for f in found if f.prefix in keys.prefixes[i]))
        if len(values) != 1:
            continue
        payload[key.key_name] = values if key.key_type == "array" else values[0]
        out.append(Assignment(key.key_name, payload[key.key_name], text, _CERTAIN * 0.5, "sole identifier"))
    return out


def _ids(keys: _Keys, clause: str, sims: list[float]) -> list[Assignment]:
    """Identifiers to keys; in a clause naming ids for several keys, each id's own context decides.

    The context of an id is the text since the previous id; an id preceded only by 'and', 'or' or a
    comma belongs with the previous one ('neighbours CELL-0302 and CELL-0303').
    """
    out: dict[str, list[str]] = {}
    confidence: dict[str, float] = {}
    previous_end, previous_key = 0, None
    for found in find_ids(clause):
        fits = [i for i in range(len(keys.keys)) if found.prefix in keys.prefixes[i]]
        if not fits:
            continue
        context = clause[previous_end : found.start].strip(" ,")
        if previous_key is not None and context.lower() in ("", "and", "or", "&"):
            i = previous_key
        elif len(fits) == 1:
            i = fits[0]
        else:
            local = keys.embedder.embed([context or clause])[0]
            i = max(fits, key=lambda j: keys.similarity(j, local))
        name = keys.keys[i].key_name
        out.setdefault(name, [])
        if found.value not in out[name]:
            out[name].append(found.value)
        confidence[name] = _CERTAIN if len(fits) == 1 else max(confidence.get(name, 0.0), sims[i], _CERTAIN * 0.5)
        previous_end, previous_key = found.end, i
    result = []
    for name, values in out.items():
        key = next(k for k in keys.keys if k.key_name == name)
        value: Any = values if key.key_type == "array" else values[0]
        result.append(Assignment(name, value, clause, confidence[name], "identifier"))
    return result
