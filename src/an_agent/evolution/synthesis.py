"""Schema patch synthesis (draft 6.2.2): intent induction, refinement of an existing key, packaging input.

Intent induction is rule-based and offline (the draft allows "an internal LLM or rule-based extractor"):
only the cluster's core makes the key (`an_agent.evolution.cohesion`: outliers and a second idea are set
aside), the key's type and value constraints are inferred from
what the fragments state (`an_agent.evolution.inference`: unit and range, duration or date-time format,
identifiers, a closed set of values, else a boolean flag), the key is named from the cluster's meaning
(`an_agent.evolution.naming`), and the description states the meaning, the constraints in the template's
phrases and real mapping examples, as the draft's templates do.

A candidate that duplicates a key the client already sees (`an_agent.evolution.conflicts`) refines that
key instead of adding one (`refine_key`). A key with allowed values is refined by extending them with the
cluster's values (a new value of an idea the template already has); other keys get their description
extended with the new phrasings. Base keys are never retyped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from an_agent.evolution.alternatives import alternative_words
from an_agent.evolution.carriers import carried_core
from an_agent.evolution.categories import category_phrases
from an_agent.evolution.cohesion import Core, core_of, rejoin, value_fragments
from an_agent.evolution.inference import ValueSpec, infer_value
from an_agent.evolution.naming import name_key
from an_agent.evolution.phrases import ranked_candidates, snake_name
from an_agent.evolution.review import security_words
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.anchors import key_anchors
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.template import OTHER_KEY, KeyDef


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that make a key touch security (draft section 8): a signal of the review gate (`review`); a key whose
# name or meaning holds one, or most of whose examples do, is never published automatically.
SECURITY_TERMS = _words(
    """password passwords credential credentials token tokens secret secrets auth authentication authorization
    authorisation login logins privilege privileges permission permissions payment payments billing card
    iban account accounts identity identities imsi imei msisdn ssh certificate certificates encryption
    admin root sudo firewall acl"""
)


def is_security_relevant(*texts: str) -> bool:
    """True when one of the texts holds a word of the security list: one signal of the review gate
    (`review.security_reasons` judges a key by its name, meaning and values)."""
    return any(security_words(text, SECURITY_TERMS) for text in texts)


@dataclass(frozen=True)
class InducedKey:
    """The outcome of intent induction for one cluster."""

    key: KeyDef
    phrase: str
    alternatives: tuple[str, ...]
    examples: tuple[tuple[str, Any], ...]  # (fragment, value it maps to)
    spec: ValueSpec | None = None
    core: Core | None = None  # which fragments made the key (`cohesion.core_of`)


@dataclass(frozen=True)
class ExistingKey:
    """A key the client already sees, and where it comes from (``base`` or a patch_id)."""

    key: KeyDef
    origin: str


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
    now: float = 0.0,
    core: Core | None = None,
    written: Sequence[float] | None = None,
) -> InducedKey:
    """Induce a new key from a cluster's fragments (``texts`` with their unit ``vectors``).

    Only the cluster's core makes the key (``core``, else `cohesion.core_of` of ``vectors``): outliers
    and a second idea neither type, name nor exemplify it. The type and constraints come from
    `inference.infer_value`, the name from `naming.name_key`; the description states the meaning,
    the constraints in the template phrases, and real mapping examples. ``written`` (when each fragment
    was written; ``now`` for all when omitted) anchors its relative dates ("tonight 22:00").
    """
    if not texts:
        raise ValueError("cannot induce a key from an empty cluster")
    core = core or core_of(vectors)

    def spec_of(indexes: Sequence[int]) -> ValueSpec:
        chosen = list(indexes)
        return infer_value(
            [texts[i] for i in chosen],
            embedder,
            now=now,
            stop_words=STOP_WORDS,
            vectors=vectors[chosen],
            written=[written[i] for i in chosen] if written is not None else None,
        )

    if core.outliers or core.second_idea:
        # What was set aside may name values of one slot (on battery / on mains): those fragments belong,
        # unless they are a second idea that only contains a candidate word (`value_fragments`). Not for a
        # set found by category (no shared frame): a set-aside "Samsung TV" or "iPhone case" is a one-off
        # sharing a value's word as often as a value (the recall corpus's device models).
        def closed_set(indexes: Sequence[int]) -> tuple[Any, ...]:
            part = spec_of(indexes)
            return part.values if part.enum and "key" not in part.info else (None,) * len(part.values)

        core = rejoin(core, vectors, value_fragments(core, texts, vectors, embedder, closed_set))
    # A typed key's fragments state its value; the core's that state none share a topic word only (`carriers`).
    core, spec = carried_core(core, texts, vectors, lambda part: spec_of(part.members), now)
    texts = [texts[i] for i in core.members]
    vectors = vectors[list(core.members)]
    centroid = vectors.sum(axis=0)
    centroid = (centroid / (np.linalg.norm(centroid) or 1.0)).astype(np.float32)
    name, phrase, alternatives = name_key(texts, spec, centroid, embedder, taken_names)
    order = np.argsort(-(vectors @ centroid), kind="stable")
    examples: list[tuple[str, Any]] = []
    for index in order:
        value = spec.values[int(index)]
        if value is not None and all(texts[int(index)] != e[0] for e in examples):
            examples.append((texts[int(index)], value))
        if len(examples) >= max_examples:
            break
    moment = "until" if name.endswith("_until") else "deadline" if name.endswith("_deadline") else None
    description = _describe(spec, phrase, alternatives, examples, len(texts), distinct_clients, moment)
    default: Any = False if spec.key_type == "boolean" else None
    key = KeyDef.build(name, spec.key_type, description, required=False, default_value=default, experimental=True)
    return InducedKey(key=key, phrase=phrase, alternatives=alternatives, examples=tuple(examples), spec=spec, core=core)


def _describe(
    spec: ValueSpec,
    phrase: str,
    alternatives: Sequence[str],
    examples: Sequence[tuple[str, Any]],
    size: int,
    clients: int,
    moment: str | None = None,
) -> str:
    also = f" (also phrased as: {', '.join(alternatives)})" if alternatives else ""
    what = phrase[:1].upper() + phrase[1:]
    if spec.key_type == "boolean":
        head = f"Set to true when the request concerns {phrase}{also}; false or omitted otherwise."
    elif spec.enum:
        head = f"{what}{also}: the one the request names."
    elif spec.unit is not None:
        low, high = spec.info["observed"]
        head = f"{what}{also}, as a number of {spec.unit}. Observed values: {_fmt_value(low)} to {_fmt_value(high)}."
    elif spec.value_format == "duration":
        example = "P1Y6M = a year and a half" if spec.info.get("calendar") else "PT2H = two hours"
        head = f"{what}{also}, as an ISO 8601 duration ({example})."
    elif spec.value_format == "date-time" and moment == "until":
        head = f"Until when to {phrase}{also}, as an RFC 3339 date and time (UTC)."
    elif spec.value_format == "date-time" and moment == "deadline":
        head = f"By when {phrase}{also} must be done, as an RFC 3339 date and time (UTC)."
    elif spec.value_format == "date-time":
        head = f"{what}{also}, as an RFC 3339 date and time (UTC)."
    elif spec.key_type == "array":
        head = f"{what}{also}, as a list of identifiers."
    elif spec.info.get("freeform"):
        head = f"The {phrase} the request names{also}, as written (free text)."
    else:
        head = f"{what}{also}."
    constraints = "".join(" " + p for p in spec.phrases)
    source = (
        f" Induced by schema evolution from {size} 'other' fragments of {clients} client{'s' if clients != 1 else ''}."
    )
    mapping = "; ".join(f"{_quote(text)} -> {_fmt_value(value)}" for text, value in examples)
    return f"{head}{constraints}{source} Example mapping: {mapping}."


def synthesis_phrases(texts: Sequence[str], existing: Sequence[ExistingKey]) -> list[str]:
    """The texts a synthesis over these fragments will likely embed, to embed them ahead in one call.

    The fragments themselves, the candidate words of a closed set (`inference.alternative_words`) and the
    shipped category phrases (`categories.category_phrases`), the candidate words of
    a name (`phrases.ranked_candidates`), and the anchors and allowed values (in words) of the keys the
    client sees (`conflicts.find_conflict`). The synthesis works on the cluster's core, a subset of
    ``texts``: what it needs beyond this list it embeds itself; with an embedder that caches by text
    (`state.CachedEmbedder`) a synthesis then costs one forward pass or a few instead of ten calls.
    """
    out = [*texts, *alternative_words(texts, STOP_WORDS), *category_phrases(), *ranked_candidates(texts)]
    for item in existing:
        if item.key.key_name != OTHER_KEY:
            out.extend(key_anchors(item.key))
            values = [v.replace("_", " ") for v in item.key.constraints.enum]
            out.extend(values)
            out.extend(map(strip_heads(value_heads(values)), values))
    return list(dict.fromkeys(out))


def value_heads(values: Sequence[str]) -> list[str]:
    """The head words that at least two allowed values (in words) share ('failure' of 'power failure').

    `conflicts.new_value` names a new value with them; `synthesis_phrases` embeds the values without them.
    """
    return [h for h, n in Counter(v.split()[-1] for v in values if " " in v).items() if n >= 2]


def strip_heads(heads: Sequence[str]) -> Callable[[str], str]:
    """A function dropping the last word of a text when it is one of ``heads`` ('power failure' -> 'power')."""

    def strip(text: str) -> str:
        words = text.split()
        return " ".join(words[:-1]) if len(words) > 1 and words[-1] in heads else text

    return strip


_ACCEPTABLE = re.compile(r"Acceptable values:\s*([^.]+?)\.(?=\s|$)")


def refine_key(existing: KeyDef, candidate: InducedKey, same_name: bool = False, value: str | None = None) -> KeyDef:
    """The existing key refined by the cluster: new allowed values when it has some, else a wider description.

    For a key with ``Acceptable values:`` the cluster is a new value of that idea: the values the
    cluster names (its closed set, else ``value`` from `conflicts.new_value`, else its phrase in
    snake_case) are appended to the list, with real mapping examples, so validation and the JSON Schema
    projection accept them. A cluster that names the key itself (``same_name``, or a value made of the key's own
    words) restates the key: its description is widened instead. The type never changes.
    """
    if same_name or not existing.constraints.enum or _ACCEPTABLE.search(existing.semantic_description) is None:
        return existing.with_description(refine_description(existing, candidate))
    spec = candidate.spec
    proposed = list(spec.enum) if spec is not None and spec.enum else [value or snake_name(candidate.phrase)]
    own_words = set(existing.key_name.split("_"))
    added = [v for v in proposed if v not in existing.constraints.enum and not set(v.split("_")) <= own_words]
    if not added:
        return existing.with_description(refine_description(existing, candidate))
    values = ", ".join([*existing.constraints.enum, *added])
    description = _ACCEPTABLE.sub(lambda _: f"Acceptable values: {values}.", existing.semantic_description, count=1)
    value_of = dict(candidate.examples) if spec is not None and spec.enum else {}
    mapping = "; ".join(
        f"{_quote(text)} -> {_quote(str(value_of.get(text, added[0])))}" for text, _ in candidate.examples
    )
    return existing.with_description(f"{description.rstrip()} Also: {mapping}.")


def refine_description(existing: KeyDef, candidate: InducedKey) -> str:
    """The existing key's description extended with the cluster's phrasing and real examples."""
    examples = "; ".join(_quote(text) for text, _ in candidate.examples)
    addition = f" Also covers requests phrased like: {examples}."
    if addition.strip() in existing.semantic_description:
        return existing.semantic_description
    return existing.semantic_description.rstrip() + addition
