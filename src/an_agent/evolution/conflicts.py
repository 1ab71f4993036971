"""Conflict detection (draft 6.2.2): whether an induced key duplicates a key the client already sees.

Conflict detection compares the candidate with the keys the client already sees (base template and
active patches): the same name, or a meaning whose similarity to a key's description anchors (its
name, first sentence and the phrases of its mapping examples; `meaning_score`) reaches
``conflict_threshold``, makes the candidate a refinement of that key instead of a new key
(`synthesis.refine_key`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from an_agent.evolution.chosen import given_apart, varies_apart
from an_agent.evolution.phrases import snake_name
from an_agent.evolution.synthesis import ExistingKey, InducedKey, strip_heads, value_heads
from an_agent.evolution.time_concepts import is_moment_key, restates
from an_agent.evolution.value_kinds import holds
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.anchors import example_mappings, key_anchors
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.template import OTHER_KEY, KeyDef


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
# A key of free words (`_same_words_idea`): the cluster's values, each to its best example value of the
# key, averaged, from which they are values of its kind. MiniLM, against location's 'A4 near exit 12':
# the streets, roads and business parks customers name 0.22-0.41 (0.31 averaged over the self-care app
# corpus's nine); router models 0.12-0.19, contractors' names -0.01-0.18, vehicles 0.16-0.22, regions
# 0.13-0.23, suspected causes 0.09-0.13.
WORDS_KIN = 0.25


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
    if best < IDEA_FLOOR or best - second < IDEA_MARGIN:
        return None
    if not item.key.constraints.enum:
        return _same_words_idea(candidate, item, best, embedder)
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


def _free_words(key: KeyDef) -> bool:
    """A key whose value is words as written (a place, a name): no allowed values, no format, examples."""
    constraints = key.constraints
    return (
        key.key_type == "string"
        and not constraints.enum
        and constraints.value_format is None
        and bool(example_mappings(key))
    )


def _same_words_idea(candidate: InducedKey, item: ExistingKey, best: float, embedder: Embedder) -> Conflict | None:
    """The template's closest idea restated in words of its own, for a key of free words; else None.

    A key of free words (`_free_words`: "where the problem happens, in words") has no allowed values to
    compare with, but its examples show the kind of value it holds ('A4 near exit 12'). A cluster that
    states free words too restates it when its values are of that kind: each value's best similarity to
    the key's example values, averaged, reaches ``WORDS_KIN`` (the streets, roads and business parks a
    customer names are places; a router model is not).
    """
    spec = candidate.spec
    if not _free_words(item.key) or spec is None or spec.key_type != "string" or spec.enum or spec.value_format:
        return None
    if spec.id_prefix or spec.info.get("codes"):
        return None
    ours = list(dict.fromkeys(v for v in spec.values if isinstance(v, str) and v))
    theirs = list(dict.fromkeys(str(v) for _, v in example_mappings(item.key)))
    if not ours:
        return None
    vectors = embedder.embed([*ours, *theirs])
    kin = float(np.mean(np.max(vectors[: len(ours)] @ vectors[len(ours) :].T, axis=1)))
    if kin < WORDS_KIN:
        return None
    return Conflict(item, "meaning", best)


def new_value(key: KeyDef, candidate: InducedKey, vectors: Vectors, embedder: Embedder) -> tuple[str, float]:
    """(the value the cluster names, in the style of ``key``'s allowed values; its kinship with them).

    Candidates are the cluster's phrase and alternatives and, when the allowed values share a head word
    (``hardware_failure``, ``power_failure``), each content word of those phrases with that head
    (``software failure``); the one closest to the cluster's centroid is the value. Kinship is its best
    similarity to an allowed value, both in words.
    """
    values = [v.replace("_", " ") for v in key.constraints.enum]
    heads = value_heads(values)
    phrases = [candidate.phrase, *candidate.alternatives]
    words = [w for w in dict.fromkeys(" ".join(phrases).lower().split()) if w.isalpha() and w not in STOP_WORDS]
    styled = [f"{w} {h}" for w in words for h in heads if w != h]
    candidates = list(dict.fromkeys(styled or phrases))
    centroid = vectors.sum(axis=0)
    centroid = centroid / (np.linalg.norm(centroid) or 1.0)
    # Kinship without the shared head: 'software failure' is kin to 'hardware failure' because software
    # is kin to hardware, not because both end in 'failure'.
    strip = strip_heads(heads) if styled else (lambda text: text)
    stripped_values = [strip(v) for v in values]
    # One embedding call for everything (each call pays a forward pass's fixed cost again).
    embedded = embedder.embed([*candidates, *stripped_values, *(strip(c) for c in candidates)])
    n = len(candidates)
    best_index = int(np.argmax(embedded[:n] @ centroid))
    stripped_best = embedded[n + len(values) + best_index]
    fit = float(np.max(embedded[n : n + len(values)] @ stripped_best))
    return snake_name(candidates[best_index]), fit
