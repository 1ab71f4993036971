"""Schema patch synthesis (draft 6.2.2): intent induction, conflict detection, packaging input.

Intent induction is rule-based and offline (the draft allows "an internal LLM or rule-based extractor"):

- **key_name**: every 1- to 3-word phrase of the cluster's fragments (without leading or trailing stop
  words) is a candidate; each is scored by the cosine similarity of its embedding to the cluster
  centroid, weighted by how many fragments contain its words. The best phrase, in snake_case, is the
  name; a unit suffix is added for numeric keys (``_minutes``, ``_percent``, ...).
- **key_type**: from the values the fragments contain (`an_agent.schemas.extract`): mostly numbers with
  one unit -> ``integer``/``number``; mostly identifiers of one kind -> ``array`` of such ids; mostly
  time-of-day ranges -> ``string``; otherwise the fragments state a condition or a wish, and the key is
  a ``boolean`` flag (default false).
- **semantic_description**: what the key means, its values, and mapping examples quoted from the real
  fragments closest to the centroid.

Conflict detection compares the candidate with the keys the client already sees (base template and
active patches): the same name, or a meaning whose similarity to a key's description anchors (its
name, first sentence and the phrases of its mapping examples; `meaning_score`) reaches
``conflict_threshold``, makes the candidate a refinement of that key's description instead of a new
key. Base keys are never retyped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from an_agent.schemas.anchors import key_anchors
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.extract import UNIT_WORDS, find_clock_ranges, find_ids, find_quantities
from an_agent.schemas.template import OTHER_KEY, KeyDef, is_snake_case
from an_agent.schemas.values import KeyType


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _words(
    """a an the and or but if then else of to in on at by for with from into onto over under up down out off
    is are was were be been being am do does did done have has had having i me my we our us you your he she
    it its they them their this that these those there here so as not no nor only very too just also any all
    some each every both either neither such same other own than can cannot could should would will shall
    may might must need needs please let lets get gets got make makes made keep keeps kept when once while
    until till after before about again already still yet even ever now today tonight tomorrow yesterday
    what which who whom whose where why how one two many much more most less least few lot lots s t
    around near nearby here there really quite"""
)
# Words that make a key touch security (draft section 8): patches with them are never published automatically.
SECURITY_TERMS = _words(
    """password passwords credential credentials token tokens secret secrets auth authentication authorization
    authorisation login logins privilege privileges permission permissions payment payments billing card
    iban account accounts identity identities imsi imei msisdn ssh certificate certificates encryption
    admin root sudo firewall acl"""
)
_UNIT_SUFFIX = {
    "db": "db",
    "percent": "percent",
    "degrees": "deg",
    "seconds": "seconds",
    "minutes": "minutes",
    "hours": "hours",
    "days": "days",
    "weeks": "weeks",
    "km": "km",
    "mbps": "mbps",
}
_MAX_PHRASES = 200  # most frequent candidate phrases scored per synthesis
_MAX_NAME = 40
_TYPE_SHARE = 0.6  # share of fragments that must carry a value kind for the key to take that type


def tokens(text: str) -> list[str]:
    """Lower-case word tokens (hyphens and apostrophes kept inside words)."""
    return re.findall(r"[a-z0-9]+(?:['\-][a-z0-9]+)*", text.lower())


def _stem(word: str) -> str:
    for suffix in ("ing", "ers", "er", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _stems(text: str) -> set[str]:
    return {_stem(part) for tok in tokens(text) for part in re.split(r"['\-]", tok) if part}


def snake_name(phrase: str) -> str:
    """A snake_case key name for a phrase ('over-temperature warning' -> 'over_temperature_warning')."""
    words = re.findall(r"[a-z0-9]+", phrase.lower().replace("'s", ""))
    name = "_".join(words)[:_MAX_NAME].strip("_")
    if not name or not name[0].isalpha():
        name = "x_" + name
    return name if is_snake_case(name) else re.sub(r"_+", "_", name)


def is_security_relevant(*texts: str) -> bool:
    """True when a key name or description touches credentials, payment, identity or access control."""
    words = {w for text in texts for w in re.findall(r"[a-z]+", text.lower())}
    return bool(words & SECURITY_TERMS)


@dataclass(frozen=True)
class InducedKey:
    """The outcome of intent induction for one cluster."""

    key: KeyDef
    phrase: str
    alternatives: tuple[str, ...]
    examples: tuple[tuple[str, Any], ...]  # (fragment, value it maps to)


@dataclass(frozen=True)
class ExistingKey:
    """A key the client already sees, and where it comes from (``base`` or a patch_id)."""

    key: KeyDef
    origin: str


@dataclass(frozen=True)
class Conflict:
    """The candidate collides with ``existing``: by name, or by meaning with this similarity."""

    existing: ExistingKey
    reason: Literal["name", "meaning"]
    similarity: float


def candidate_phrases(texts: Sequence[str]) -> Counter[str]:
    """1- to 3-word phrases without stop words at either end, counted once per fragment."""
    counts: Counter[str] = Counter()
    for text in texts:
        words = tokens(text)
        seen: set[str] = set()
        for n in (1, 2, 3):
            for i in range(len(words) - n + 1):
                gram = words[i : i + n]
                if gram[0] in _STOP or gram[-1] in _STOP or any(w.isdigit() for w in gram):
                    continue
                phrase = " ".join(gram)
                if phrase not in seen:
                    seen.add(phrase)
                    counts[phrase] += 1
    return counts


def _rank_phrases(texts: Sequence[str], centroid: Vectors, embedder: Embedder) -> list[tuple[float, str]]:
    counts = candidate_phrases(texts)
    phrases = [p for p, _ in counts.most_common(_MAX_PHRASES)]
    if not phrases:
        return []
    sims = embedder.embed(phrases) @ centroid
    fragment_stems = [_stems(t) for t in texts]
    ranked = []
    for phrase, sim in zip(phrases, sims, strict=True):
        stems = _stems(phrase)
        coverage = sum(1 for fs in fragment_stems if stems <= fs) / len(texts)
        # Similarity to the centroid says "means the cluster"; coverage says "is how clients say it";
        # a small length penalty prefers the shorter of two equally good phrases.
        score = float(sim) * (0.6 + 0.4 * coverage) - 0.03 * (len(phrase.split()) - 1)
        ranked.append((score, phrase))
    ranked.sort(key=lambda t: (-t[0], t[1]))
    return ranked


def _infer_type(texts: Sequence[str]) -> tuple[KeyType, dict[str, Any]]:
    """key_type and details (unit, id prefix, per-fragment values) from the values in the fragments."""
    n = len(texts)
    quantities = [find_quantities(t) for t in texts]
    units = Counter(q[0].unit for q in quantities if q)
    if units:
        unit, count = units.most_common(1)[0]
        if count >= _TYPE_SHARE * n:
            values = [next((q.value for q in qs if q.unit == unit), None) for qs in quantities]
            present = [v for v in values if v is not None]
            kind: KeyType = "integer" if all(float(v).is_integer() for v in present) else "number"
            return kind, {"unit": unit, "values": values}
    ids = [find_ids(t) for t in texts]
    prefixes = Counter(i[0].prefix for i in ids if i)
    if prefixes:
        prefix, count = prefixes.most_common(1)[0]
        if count >= _TYPE_SHARE * n:
            id_lists = [[f.value for f in found if f.prefix == prefix] or None for found in ids]
            return "array", {"prefix": prefix, "values": id_lists}
    ranges = [find_clock_ranges(t) for t in texts]
    if sum(1 for r in ranges if r) >= _TYPE_SHARE * n:
        return "string", {"values": [r[0][0] if r else None for r in ranges]}
    return "boolean", {"values": [True] * n}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "\u2019") + "'"


def _fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(_quote(str(v)) for v in value) + "]"
    if isinstance(value, str):
        return _quote(value)
    return str(value)


def induce_key(
    texts: Sequence[str],
    vectors: Vectors,
    embedder: Embedder,
    *,
    max_examples: int = 3,
    distinct_clients: int = 1,
    taken_names: frozenset[str] = frozenset(),
) -> InducedKey:
    """Induce a new key from a cluster's fragments (``texts`` with their unit ``vectors``)."""
    if not texts:
        raise ValueError("cannot induce a key from an empty cluster")
    centroid = vectors.sum(axis=0)
    centroid = (centroid / (np.linalg.norm(centroid) or 1.0)).astype(np.float32)
    key_type, detail = _infer_type(texts)
    ranked = _rank_phrases(texts, centroid, embedder)
    if key_type in ("integer", "number"):
        # The unit becomes the name's suffix; the phrase should say what is measured.
        ranked = [r for r in ranked if not set(r[1].split()) & UNIT_WORDS] or ranked
    phrase = ranked[0][1] if ranked else "request"
    alternatives = _alternatives(phrase, [p for _, p in ranked[1:]])
    name = snake_name(phrase)
    if key_type in ("integer", "number"):
        suffix = _UNIT_SUFFIX.get(detail["unit"], detail["unit"])
        if not name.endswith("_" + suffix):
            name = f"{name}_{suffix}"[:_MAX_NAME]
    elif key_type == "array" and not name.endswith("_ids"):
        name = f"{name}_{detail['prefix'].lower().replace('-', '_')}_ids"[:_MAX_NAME]
    base_name = name
    counter = 2
    while name in taken_names or name == OTHER_KEY:
        name = f"{base_name}_{counter}"
        counter += 1

    order = np.argsort(-(vectors @ centroid), kind="stable")
    examples: list[tuple[str, Any]] = []
    for index in order:
        value = detail["values"][int(index)]
        if value is not None and all(texts[int(index)] != e[0] for e in examples):
            examples.append((texts[int(index)], value))
        if len(examples) >= max_examples:
            break
    description = _describe(key_type, phrase, alternatives, detail, examples, len(texts), distinct_clients)
    default: Any = False if key_type == "boolean" else None
    key = KeyDef.build(name, key_type, description, required=False, default_value=default, experimental=True)
    return InducedKey(key=key, phrase=phrase, alternatives=alternatives, examples=tuple(examples))


def _alternatives(phrase: str, ranked: Sequence[str], limit: int = 3) -> tuple[str, ...]:
    chosen: list[str] = []
    covered = _stems(phrase)
    for candidate in ranked:
        stems = _stems(candidate)
        if stems & covered:
            continue
        chosen.append(candidate)
        covered |= stems
        if len(chosen) >= limit:
            break
    return tuple(chosen)


def _describe(
    key_type: KeyType,
    phrase: str,
    alternatives: Sequence[str],
    detail: dict[str, Any],
    examples: Sequence[tuple[str, Any]],
    size: int,
    clients: int,
) -> str:
    also = f" (also phrased as: {', '.join(alternatives)})" if alternatives else ""
    if key_type == "boolean":
        head = f"Set to true when the request concerns {phrase}{also}; false or omitted otherwise."
    elif key_type in ("integer", "number"):
        present = [float(v) for v in detail["values"] if v is not None]
        unit = detail["unit"]
        head = (
            f"{phrase.capitalize()}{also}, as a number of {unit}. "
            f"Observed values: {_fmt_value(min(present))} to {_fmt_value(max(present))} {unit}."
        )
    elif key_type == "array":
        head = f"{phrase.capitalize()}{also}, as a list of identifiers. Item format: {detail['prefix']}-<alnum>."
    else:
        head = f"{phrase.capitalize()}{also}, as a time-of-day range HH:MM-HH:MM (UTC)."
    source = (
        f" Induced by schema evolution from {size} 'other' fragments of {clients} client{'s' if clients != 1 else ''}."
    )
    mapping = "; ".join(f"{_quote(text)} -> {_fmt_value(value)}" for text, value in examples)
    return f"{head}{source} Example mapping: {mapping}."


def meaning_score(vectors: Vectors, key: KeyDef, embedder: Embedder) -> float:
    """How strongly a cluster (its fragments' unit ``vectors``) means an existing key, in [-1, 1].

    The mean of two views of the similarity to the key's anchors (`key_anchors`): that of the cluster
    centroid (what the fragments share) and the average over fragments of each one's best anchor (how
    many of them, individually, say the key). The centroid alone over-rates a cluster that shares one
    incidental word with an example; the per-fragment view alone under-rates short paraphrases.
    """
    anchors = embedder.embed(key_anchors(key))
    centroid = vectors.sum(axis=0)
    centroid = centroid / (np.linalg.norm(centroid) or 1.0)
    by_centroid = float(np.max(anchors @ centroid))
    by_fragment = float(np.mean(np.max(vectors @ anchors.T, axis=1)))
    return (by_centroid + by_fragment) / 2


def find_conflict(
    candidate: InducedKey,
    vectors: Vectors,
    existing: Sequence[ExistingKey],
    embedder: Embedder,
    threshold: float,
) -> Conflict | None:
    """The existing key the candidate duplicates (same name first, else best `meaning_score` >= threshold)."""
    for item in existing:
        if item.key.key_name == candidate.key.key_name:
            return Conflict(item, "name", 1.0)
    best: Conflict | None = None
    for item in existing:
        if item.key.key_name == OTHER_KEY:
            continue
        score = meaning_score(vectors, item.key, embedder)
        if score >= threshold and (best is None or score > best.similarity):
            best = Conflict(item, "meaning", score)
    return best


def refine_description(existing: KeyDef, candidate: InducedKey) -> str:
    """The existing key's description extended with the cluster's phrasing and real examples."""
    examples = "; ".join(_quote(text) for text, _ in candidate.examples)
    addition = f" Also covers requests phrased like: {examples}."
    if addition.strip() in existing.semantic_description:
        return existing.semantic_description
    return existing.semantic_description.rstrip() + addition
