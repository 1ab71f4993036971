"""Schema patch synthesis (draft 6.2.2): intent induction, conflict detection, packaging input.

Intent induction is rule-based and offline (the draft allows "an internal LLM or rule-based extractor"):
only the cluster's core makes the key (`an_agent.evolution.cohesion`: outliers and a second idea are set
aside), the key's type and value constraints are inferred from
what the fragments state (`an_agent.evolution.inference`: unit and range, duration or date-time format,
identifiers, a closed set of values, else a boolean flag), the key is named from the cluster's meaning
(`an_agent.evolution.naming`), and the description states the meaning, the constraints in the template's
phrases and real mapping examples, as the draft's templates do.

Conflict detection compares the candidate with the keys the client already sees (base template and
active patches): the same name, or a meaning whose similarity to a key's description anchors (its
name, first sentence and the phrases of its mapping examples; `meaning_score`) reaches
``conflict_threshold``, makes the candidate a refinement of that key instead of a new key. A key with
allowed values is refined by extending them with the cluster's values (a new value of an idea the
template already has); other keys get their description extended with the new phrasings. Base keys are
never retyped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from an_agent.evolution.alternatives import alternative_words
from an_agent.evolution.carriers import carried_core
from an_agent.evolution.categories import category_phrases
from an_agent.evolution.chosen import given_apart, varies_apart
from an_agent.evolution.cohesion import Core, core_of, rejoin, value_fragments
from an_agent.evolution.inference import ValueSpec, infer_value
from an_agent.evolution.naming import name_key
from an_agent.evolution.phrases import ranked_candidates, snake_name
from an_agent.evolution.review import security_words
from an_agent.evolution.time_concepts import is_moment_key, restates
from an_agent.evolution.value_kinds import holds
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.anchors import example_mappings, key_anchors
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


@dataclass(frozen=True)
class Conflict:
    """The candidate collides with ``existing``: by name, or by meaning with this similarity.

    ``value`` is the new allowed value the cluster names when ``existing`` has allowed values (`new_value`).
    """

    existing: ExistingKey
    reason: Literal["name", "meaning"]
    similarity: float
    value: str | None = None


# A cluster extends a key's allowed values only when the value it names is of the same kind as them: the
# best similarity of the value (in words, without a head word shared with the values) to an allowed value
# reaches this. Measured with MiniLM (refinement_probes.json, conflict_probes.json): a new kind of fault
# 'software' vs fault_type's values 0.49; severity paraphrases ('extremely urgent') vs severity's values
# 0.42 (other words for existing values: description widened, no value added); suspected-cause
# paraphrases vs fault_type 0.36, a rodent cause 0.26. The margin is thin (docs/evolution.md, section 5).
VALUE_KIN = 0.45
# A new value of the template's closest idea (`_closest_idea`), below the conflict threshold. MiniLM, on the
# held-out corpora: a cable-theft cluster scores 0.41-0.42 to trouble_ticket's `fault` (0.04-0.06 ahead of
# recommended_actions; its fragments 0.33 to fibre_cut, port_fault, ...), voice-quality complaints 0.40 to
# `complaint_category` (0.24 ahead; 0.33); new keys that come closest: a reboot cluster 0.42 to
# complaint_category (0.06 ahead) but 0.21 to its values, a power-source cluster 0.43 to `action` (0.18),
# a backhaul-medium cluster 0.46 to `domain` (0.05 ahead, 0.21), incident reports 0.39 to `severity`.
IDEA_FLOOR = 0.39
IDEA_MARGIN = 0.03
IDEA_KIN = 0.30
# Centroid similarity to one allowed value from which a cluster restates it: indoor no-coverage complaints
# (held-out recall corpus) 0.45 to no_coverage; the new values above 0.38-0.39 to their nearest value.
IDEA_SAME = 0.42


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
        head = f"{what}{also}, as an ISO 8601 duration (PT2H = two hours)."
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


# Words that state a hypothesis rather than a fact ("we suspect ...", "probably ...", "might be ...").
_HEDGE = re.compile(
    r"\b(?:suspect|suspects|suspected|probably|likely|maybe|perhaps|possibly|might|could|guess|think|seems?)\b",
    re.IGNORECASE,
)
HYPOTHESIS_SHARE = 0.6  # share of a cluster's fragments stated as hypotheses for it to be one
# Meaning score a cluster of hypotheses still needs to a key of hypotheses: what they are about must be
# near it (MiniLM: suspected causes 0.39-0.50 to suspected_root_cause; other keys of fault_diagnosis_v1 < 0.30).
HYPOTHESIS_FLOOR = 0.33


def is_hypothesis_key(key: KeyDef) -> bool:
    """True when every mapping example of a free-text key is stated as a hypothesis ('we think ...')."""
    examples = example_mappings(key)
    return bool(examples) and not key.constraints.enum and all(_HEDGE.search(p) for p, _ in examples)


def find_conflict(
    candidate: InducedKey,
    vectors: Vectors,
    existing: Sequence[ExistingKey],
    embedder: Embedder,
    threshold: float,
    texts: Sequence[str] = (),
    choices: Sequence[Mapping[str, str]] = (),
) -> Conflict | None:
    """The existing key the candidate duplicates, or None (then it is a new key).

    The same name first; else, among the keys whose `meaning_score` reaches ``threshold``, the best one
    whose allowed values (if it has some) are of the kind of the value the cluster names (`new_value`,
    ``VALUE_KIN``); only when there is none, the best one whose values are not (the cluster says an
    existing value in other words: the refinement widens its description, it adds no value).

    A cluster whose fragments (``texts``, the core's, in the order of ``vectors``) are mostly stated as
    hypotheses (``HYPOTHESIS_SHARE``: "we suspect rodents", "probably vandalism") fits a free-text key
    whose examples are hypotheses too (`is_hypothesis_key`: suspected_root_cause) from
    ``HYPOTHESIS_FLOOR``: the form says which key holds the idea when the words of a new cause are far
    from the key's examples. A cluster of moments is another time concept than a date-time key unless its
    fragments, without their moments, restate that key (`time_concepts.restates`). A closed-set key whose
    value the core's requests (``choices``, in the order of ``vectors``) chose apart from the idea
    (`chosen.varies_apart`: several values of their own) is not the idea's key, however close its words;
    nor is an optional key without allowed values that most of them gave themselves (`chosen.given_apart`),
    nor a key that cannot hold the kind of value the cluster states (`value_kinds.holds`: a count is no
    value of a closed set of words, a duration no deadline).
    """
    for item in existing:
        if item.key.key_name == candidate.key.key_name:
            return Conflict(item, "name", 1.0)
    hypotheses = bool(texts) and sum(1 for t in texts if _HEDGE.search(t)) >= HYPOTHESIS_SHARE * len(texts)
    fitting: list[Conflict] = []  # the key's meaning fits, and its allowed values (if any) too
    restating: list[Conflict] = []  # the meaning fits, the values do not: other words for existing values
    scored: list[tuple[float, ExistingKey]] = []
    moments = candidate.spec is not None and candidate.spec.value_format == "date-time"
    for item in existing:
        if item.key.key_name == OTHER_KEY:
            continue
        if moments and texts and is_moment_key(item.key) and not restates(texts, item.key, embedder):
            continue  # another time concept: the moments make it look like the key, its words do not
        score = meaning_score(vectors, item.key, embedder)
        scored.append((score, item))
        if not holds(item.key, candidate.spec):
            continue  # the cluster states another kind of value than the key holds: another concept
        if item.key.constraints.enum and varies_apart(item.key, choices):
            continue  # the requests chose its values apart from the idea: another concept
        if given_apart(item.key, choices):
            continue  # the requests gave the key themselves: their fragments say another thing
        if hypotheses and score >= HYPOTHESIS_FLOOR and is_hypothesis_key(item.key):
            fitting.append(Conflict(item, "meaning", max(score, threshold)))
            continue
        if score < threshold:
            continue
        if not item.key.constraints.enum:
            fitting.append(Conflict(item, "meaning", score))
            continue
        value, fit = new_value(item.key, candidate, vectors, embedder)
        if fit >= VALUE_KIN:
            fitting.append(Conflict(item, "meaning", score, value))
        else:
            restating.append(Conflict(item, "meaning", score))
    # A key whose allowed values do not fit the cluster's value is chosen (and only its description
    # widened) when no other key fits: a suspected cause goes to the cause key, not to fault_type.
    for group in (fitting, restating):
        if group:
            return max(group, key=lambda c: c.similarity)
    return _closest_idea(candidate, vectors, scored, embedder, choices)


def _closest_idea(
    candidate: InducedKey,
    vectors: Vectors,
    scored: Sequence[tuple[float, ExistingKey]],
    embedder: Embedder,
    choices: Sequence[Mapping[str, str]] = (),
) -> Conflict | None:
    """A new value of the template's closest idea, below ``conflict_threshold``, or None.

    A new value is about the key it extends, but in words the key has never used ("thieves took the feeder
    cables" next to a fault key with fibre_cut, port_fault, ...): its meaning score stays below the
    threshold that says "the same key in other words". It is still a new value of that key when the key
    has allowed values and is the template's clearly closest idea (``IDEA_FLOOR``, ahead of every other
    key by ``IDEA_MARGIN``), and the fragments name a value of their kind: each fragment's best similarity
    to an allowed value, averaged, reaches ``IDEA_KIN``, but the centroid stays below ``IDEA_SAME`` to
    every allowed value (closer, the cluster restates that value).
    """
    if len(scored) < 2:
        return None
    ranked = sorted(scored, key=lambda t: -t[0])
    (best, item), (second, _) = ranked[0], ranked[1]
    if not item.key.constraints.enum or best < IDEA_FLOOR or best - second < IDEA_MARGIN:
        return None
    if not holds(item.key, candidate.spec) or varies_apart(item.key, choices):
        return None  # another kind of value; or the requests chose its values, several: another concept
    # Each fragment's best similarity to an allowed value (in words), averaged: the fragments name a value
    # of that kind, whatever phrase the cluster's value is named by.
    allowed = embedder.embed([v.replace("_", " ") for v in item.key.constraints.enum])
    if float(np.mean(np.max(vectors @ allowed.T, axis=1))) < IDEA_KIN:
        return None
    # ... but none of them: a cluster whose centroid is this close to one allowed value says that value
    # again, in a setting of its own ("no signal in the underground car park": no_coverage, somewhere).
    centroid = vectors.sum(axis=0)
    if float(np.max(allowed @ (centroid / (np.linalg.norm(centroid) or 1.0)))) >= IDEA_SAME:
        return None
    value, _ = new_value(item.key, candidate, vectors, embedder)
    return Conflict(item, "meaning", best, value)


def new_value(key: KeyDef, candidate: InducedKey, vectors: Vectors, embedder: Embedder) -> tuple[str, float]:
    """(the value the cluster names, in the style of ``key``'s allowed values; its kinship with them).

    Candidates are the cluster's phrase and alternatives and, when the allowed values share a head word
    (``hardware_failure``, ``power_failure``), each content word of those phrases with that head
    (``software failure``); the one closest to the cluster's centroid is the value. Kinship is its best
    similarity to an allowed value, both in words.
    """
    values = [v.replace("_", " ") for v in key.constraints.enum]
    heads = _value_heads(values)
    phrases = [candidate.phrase, *candidate.alternatives]
    words = [w for w in dict.fromkeys(" ".join(phrases).lower().split()) if w.isalpha() and w not in STOP_WORDS]
    styled = [f"{w} {h}" for w in words for h in heads if w != h]
    candidates = list(dict.fromkeys(styled or phrases))
    centroid = vectors.sum(axis=0)
    centroid = centroid / (np.linalg.norm(centroid) or 1.0)
    # Kinship without the shared head: 'software failure' is kin to 'hardware failure' because software
    # is kin to hardware, not because both end in 'failure'.
    strip = _strip_heads(heads) if styled else (lambda text: text)
    stripped_values = [strip(v) for v in values]
    # One embedding call for everything (each call pays a forward pass's fixed cost again).
    embedded = embedder.embed([*candidates, *stripped_values, *(strip(c) for c in candidates)])
    n = len(candidates)
    best_index = int(np.argmax(embedded[:n] @ centroid))
    stripped_best = embedded[n + len(values) + best_index]
    fit = float(np.max(embedded[n : n + len(values)] @ stripped_best))
    return snake_name(candidates[best_index]), fit


def synthesis_phrases(texts: Sequence[str], existing: Sequence[ExistingKey]) -> list[str]:
    """The texts a synthesis over these fragments will likely embed, to embed them ahead in one call.

    The fragments themselves, the candidate words of a closed set (`inference.alternative_words`) and the
    shipped category phrases (`categories.category_phrases`), the candidate words of
    a name (`phrases.ranked_candidates`), and the anchors and allowed values (in words) of the keys the
    client sees (`find_conflict`). The synthesis works on the cluster's core, a subset of ``texts``:
    what it needs beyond this list it embeds itself; with an embedder that caches by text
    (`state.CachedEmbedder`) a synthesis then costs one forward pass or a few instead of ten calls.
    """
    out = [*texts, *alternative_words(texts, STOP_WORDS), *category_phrases(), *ranked_candidates(texts)]
    for item in existing:
        if item.key.key_name != OTHER_KEY:
            out.extend(key_anchors(item.key))
            values = [v.replace("_", " ") for v in item.key.constraints.enum]
            out.extend(values)
            out.extend(map(_strip_heads(_value_heads(values)), values))
    return list(dict.fromkeys(out))


def _value_heads(values: Sequence[str]) -> list[str]:
    """The head words that at least two allowed values (in words) share ('failure' of 'power failure')."""
    return [h for h, n in Counter(v.split()[-1] for v in values if " " in v).items() if n >= 2]


def _strip_heads(heads: Sequence[str]) -> Callable[[str], str]:
    def strip(text: str) -> str:
        words = text.split()
        return " ".join(words[:-1]) if len(words) > 1 and words[-1] in heads else text

    return strip


_ACCEPTABLE = re.compile(r"Acceptable values:\s*([^.]+?)\.(?=\s|$)")


def refine_key(existing: KeyDef, candidate: InducedKey, same_name: bool = False, value: str | None = None) -> KeyDef:
    """The existing key refined by the cluster: new allowed values when it has some, else a wider description.

    For a key with ``Acceptable values:`` the cluster is a new value of that idea: the values the
    cluster names (its closed set, else ``value`` from `new_value`, else its phrase in snake_case) are
    appended to the list, with real mapping examples, so validation and the JSON Schema projection
    accept them. A cluster that names the key itself (``same_name``, or a value made of the key's own
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
