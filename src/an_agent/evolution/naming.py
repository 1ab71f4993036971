"""Naming a synthesised key from the meaning of its cluster, not from its most frequent token.

Candidates are the 1- to 3-word phrases of the fragments (`an_agent.evolution.phrases`: no stop word at either
end, no participant such as "customer" or "operator" anywhere, none across punctuation; "the tower is
shared" as "shared tower"), plus key-like phrases
made of a content word of the fragments and a generic key head
(``source``, ``type``, ``condition``, ``channel``, ...: the words the draft's and our templates use for keys
that take a closed set of values). Each candidate is embedded with the same model as the pool and scored
by its similarity to what the key must name:

- a boolean flag: the cluster centroid (what the fragments say), weighted by how many fragments use the
  phrase; phrases of two or three words are preferred to a single word, which alone rarely names an idea
  ("battery" vs "battery backup");
- a closed set of values: the centroid of the values themselves and the cluster centroid: the best
  name is the category that the values are instances of ("mains, battery, generator" -> power source);
- a quantity, a duration or a date-time: the centroid, without unit words; the name gets the unit, or
  ``_duration`` / ``_time``, as a suffix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from an_agent.evolution.codes import code_phrase
from an_agent.evolution.freeform import freeform_phrase, without_values
from an_agent.evolution.inference import ValueSpec
from an_agent.evolution.participants import PARTICIPANTS
from an_agent.evolution.phrases import MAX_NAME, clause_like, phrase_stems, phrase_words, rank_phrases, snake_name
from an_agent.evolution.tenure import tenure_phrase
from an_agent.evolution.value_words import (
    OBJECT_WORDS,
    STOP_WORDS,
    counted_noun,
    event_participle,
    id_noun,
    leading_word,
    moment_suffix,
    name_tokens,
    stem,
    tokens,
    word_set,
)
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.extract import NUMBER_WORDS, UNIT_WORDS
from an_agent.schemas.template import OTHER_KEY
from an_agent.schemas.units import MONEY_PERIOD_WORD, currency_of

_UNIT_SUFFIX = {"degrees": "deg", "volt": "v"}
# What a unit measures: a quantity key named by one word that is none of these ("winds 85 km/h" ->
# wind, "fans at 4200 rpm" -> fan) is named by that word and the measure (wind_speed_kmh, fan_speed_rpm).
_MEASURES = (
    {
        "kmh": ("speed", "velocity"),
        "rpm": ("speed", "rotation", "revolutions"),
        "mbps": ("throughput", "rate", "speed", "capacity", "bandwidth", "traffic", "bitrate"),
        "celsius": ("temperature", "temp", "heat"),
        "kwh": ("energy", "consumption", "yield", "usage", "generation"),
        "volt": ("voltage", "potential"),
        "ms": ("latency", "delay", "jitter", "rtt", "ping", "response"),
        "mhz": ("bandwidth", "frequency", "carrier", "spectrum", "channel", "band"),
        "kw": ("power", "load", "draw", "consumption", "demand"),
        "gb": ("data", "volume", "usage", "allowance", "quota", "traffic"),
        "litres": ("fuel", "diesel", "volume", "level", "tank"),
        "mmh": ("rate", "intensity"),  # rain and other precipitation in mm/h
        "lh": ("consumption", "rate", "flow", "usage"),  # fuel, water in l/h
        "db_per_km": ("attenuation", "loss", "damping"),  # fibre, cable: dB per km
    }
    | dict.fromkeys(  # lengths: named by what is far or long (break_distance_m), not by the unit (was "m")
        ("m", "km"),
        ("distance", "length", "range", "reach", "radius", "depth", "height", "altitude", "span"),
    )
    | dict.fromkeys(  # money: named by what is paid (sla_penalty_eur), "amount" when one word says nothing of it
        ("eur", "usd", "gbp"),
        ("amount", "penalty", "cost", "fee", "price", "charge", "fine", "credit", "compensation", "refund", "bill"),
    )
)  # a unit's suffix is its name (speed_kmh, signal_level_dbm), but for degrees
# What an amount of money said per a period is ("monthly fee", "yearly subscription"), in the singular.
_COSTS = frozenset({"fee", "charge", "bill", "price", "plan", "subscription", "cost", "rent"})
# Words that say a count is of repetitions ("flapped 14 times", "37 occurrences", "5 repeats").
_REPETITIONS = word_set("times occurrences occurrence repeats repetitions recurrences")
_TIME_WORDS = word_set(
    """morning afternoon evening night noon midnight day days end week weekend hour hours minute minutes
    utc gmt monday tuesday wednesday thursday friday saturday sunday time latest
    cet cest bst eet eest edt pst pdt am pm jan january feb february mar march apr april may jun june jul
    july aug august sep sept september oct october nov november dec december"""
)
_FOREIGN_ARTICLES = word_set("du des de la le les el los las del al da das dos ao zum zur und et pour para")

# Heads of key names that take a closed set of values (template style: fault_type, power_source, ...).
_HEADS = (
    "type",
    "source",
    "condition",
    "mode",
    "channel",
    "format",
    "group",
    "class",
    "kind",
    "level",
    "status",
    "cause",
)
_MODIFIERS = 8  # most frequent content words of the fragments tried in front of a head
# Category words of the network-operations domain, tried in front of a head too: the values of a closed
# set seldom name their own category ("on battery", "on generator" never say "power").
_CATEGORIES = (
    "power",
    "weather",
    "device",
    "customer",
    "subscriber",
    "user",
    "event",
    "notification",
    "report",
    "network",
    "service",
    "equipment",
    "traffic",
    "site",
    "vehicle",
    "delivery",
    "contact",
    "time",
)


# The head a key of each category takes in the draft's and our templates' style; others take "type".
_CATEGORY_HEADS = {
    "power": "source",
    "weather": "condition",
    "notification": "channel",
    "contact": "channel",
    "delivery": "channel",
    "network": "domain",
    "time": "window",
}

_CAUSAL = word_set("because due caused cause causes causing reason blame blamed")


def _category_name(texts: Sequence[str], spec: ValueSpec, centroid: Vectors, embedder: Embedder) -> str:
    """'<category> <head>' for a closed set: the category by meaning, the head by convention.

    A set found by a shipped category (``spec.info["key"]``, `categories.category_alternatives`) is
    named by that category's key ("weather condition").
    When the values qualify one noun in the fragments ("fleet customer", "private customer":
    ``spec.info["category"]``, `alternatives.slot_head`), that noun is the category. Otherwise the
    category word (a content word of the fragments, or a domain category of ``_CATEGORIES``) is the
    one whose key-like phrases are closest to the values and the cluster. The embedding does not tell
    heads apart ("weather kind", "weather source", "weather condition" score within 0.05), so the head
    is the draft's convention for that category (`_CATEGORY_HEADS`: power_source, weather_condition),
    ``cause`` for values stated as causes, else ``type`` (fault_type).
    """
    values = set(spec.enum)
    words = Counter(
        w
        for t in texts
        for w in set(name_tokens(t))
        if w not in STOP_WORDS and len(w) > 2 and not any(w[:4] == v[:4] for v in values)  # batteries ~ battery
    )
    modifiers = list(dict.fromkeys([*(w for w, _ in words.most_common(_MODIFIERS)), *_CATEGORIES]))
    # "cause" names values that explain something ("fault_cause"); values that are only stated ("heavy
    # rain at the site") are a condition or a type of their category: the head needs causal wording.
    causal = sum(1 for t in texts if _CAUSAL & set(tokens(t))) >= 0.3 * len(texts)
    key = spec.info.get("key")
    if isinstance(key, str):
        # A shipped category recognised the values (`categories.category_alternatives`): its key names them.
        return key.replace("_", " ")
    named = spec.info.get("category")
    if isinstance(named, str):
        # The fragments name the category themselves: the values qualify it ("fleet customer", "private
        # customer"). The embedding would pick a word of the fragments' topic instead ("vehicle").
        return f"{named} {_CATEGORY_HEADS.get(named, 'cause' if causal else 'type')}"
    heads = [h for h in _HEADS if causal or h != "cause"]
    candidates = [*heads, *(f"{m} {h}" for m in modifiers for h in heads)]
    # One embedding call for both: each call pays a forward pass's fixed cost again.
    embedded = embedder.embed([*spec.enum, *candidates])
    value_vectors, vectors = embedded[: len(spec.enum)], embedded[len(spec.enum) :]
    value_centroid = value_vectors.sum(axis=0)
    value_centroid = value_centroid / (np.linalg.norm(value_centroid) or 1.0)
    # The category is what the values are instances of: their centroid weighs most; the cluster keeps it
    # in the domain of the requests ("outage" is frequent in a cluster of customer kinds, not their kind).
    scores = 0.75 * (vectors @ value_centroid) + 0.25 * (vectors @ centroid)
    # A bare head ("type") says less than "power source": a small bonus for the two-word form.
    scores = scores + np.array([0.0 if " " not in c else 0.03 for c in candidates], dtype=np.float32)
    best = candidates[int(np.argmax(scores))]
    if " " not in best:
        return best
    category = best.split()[0]
    return f"{category} {_CATEGORY_HEADS.get(category, 'cause' if causal else 'type')}"


def _opening_event(verb: str | None, ranked: Sequence[tuple[float, str]]) -> str | None:
    """A moment's event named by the two words most fragments open with ("last seen 03:12", "window opens
    23:00" -> "last seen", "window opens"): a phrase of the three best whose first word is ``verb`` (the
    fragments' `leading_word`)."""
    return next((p for _, p in ranked[:3] if len(p.split()) == 2 and p.split()[0] == verb), None)


def name_key(
    texts: Sequence[str],
    spec: ValueSpec,
    centroid: Vectors,
    embedder: Embedder,
    taken_names: frozenset[str] = frozenset(),
) -> tuple[str, str, tuple[str, ...]]:
    """(key name, the phrase it came from, alternative phrasings) for a cluster and its `ValueSpec`."""
    ranked = rank_phrases(texts, centroid, embedder)
    if spec.info.get("freeform"):  # a name differing in every fragment: its kind names the key, not a value
        ranked = [r for r in ranked if without_values([r[1]], spec.values)]
    if spec.key_type in ("integer", "number") or spec.value_format in ("duration", "date-time"):
        # Units and spoken numbers ("forty six volts") are the value, not the name.
        ranked = [r for r in ranked if not set(r[1].split()) & (UNIT_WORDS | NUMBER_WORDS)] or ranked
    # Articles and prepositions of half-translated headers ("Distance du défaut", "Entfernung zum Bruch")
    # name nothing: a phrase with one is no key name (distance_du_m). Not stop words: "Peter de Vries".
    ranked = [r for r in ranked if not set(r[1].split()) & _FOREIGN_ARTICLES] or ranked
    if spec.value_format in ("duration", "date-time"):
        # The moment is the value, not the name: "by this evening", "by end of day" -> not evening_deadline.
        ranked = [r for r in ranked if not set(r[1].split()) & _TIME_WORDS] or ranked
    phrase = ranked[0][1] if ranked else "request"
    event_suffix: str | None = None
    moment = moment_suffix(texts) if spec.value_format == "date-time" else None  # once: it reads every fragment
    deadline = moment == "deadline"
    # A deadline's suffix is the second word of its name (compensation_deadline): no need to grow it.
    if " " not in phrase and not deadline:
        # One word rarely names an idea ("roaming", "sms"): take the best phrase that grows it
        # ("roaming users", "sms alert"), the recurring phrase whose head it is or modifies.
        longer = [p for _, p in ranked if " " in p and phrase in p.split() and not clause_like(p) and _once(p) == p]
        pairs = [p for p in longer if len(p.split()) == 2]  # a compound noun before a clause
        if pairs or longer:
            phrase = _whole_compound((pairs or longer)[0], texts)
    if (measures := _MEASURES.get(spec.unit or "")) and " " not in phrase and stem(phrase) not in map(stem, measures):
        # One word that is not what the unit measures names the thing measured: add the measure.
        phrase = f"{_singular(phrase)} {measures[0]}"
    if (currency := currency_of(spec.unit)) is not None and spec.unit != currency:
        # Money per a period is named by what is paid ("monthly charge", "price ... p/m"), not by the words
        # the lines open with ("Broadband dead"): the month is the key's period (`units.per_month`).
        phrase = f"{MONEY_PERIOD_WORD} {_cost_word(texts)}"
    counted = counted_noun(texts) if spec.info.get("count") else None
    opener = leading_word(texts)
    tenure = tenure_phrase(texts) if spec.info.get("calendar") else None
    if spec.enum and isinstance(frame := spec.info.get("frame"), str):  # codes, labels: the word they follow
        phrase = code_phrase(texts, frame, STOP_WORDS, spec.info.get("category"), frozenset(_HEADS))
        if (kind := spec.info.get("kind")) and kind not in phrase.split():
            phrase = f"{phrase} {kind}"  # "roaming in DE", "roaming: FR" -> roaming country
        if (head := spec.info.get("head")) and phrase.split()[-1] not in _HEADS:
            phrase = f"{phrase} {head}"  # letter codes after "connector", "conn": connector type
    elif spec.enum and isinstance(kind := spec.info.get("kind"), str):
        phrase = kind  # codes of one kind said after no shared word ("DE", "FR", "ES"): country
    elif spec.enum:
        phrase = _category_name(texts, spec, centroid, embedder)
    elif "kinds" in spec.info and (kind := freeform_phrase([r[1] for r in ranked], spec.values, spec.info["kinds"])):
        phrase = kind
    elif spec.key_type == "array" and spec.id_prefix and (noun := id_noun(texts, spec.id_prefix)) is not None:
        phrase = noun
    elif counted in _REPETITIONS:
        # "flapped 14 times", "37 occurrences": a count of repetitions is named by what repeats (the
        # alarm), not by the word that says it repeats (a key named "times" is named by its unit).
        what = [p for _, p in ranked if not set(p.split()) & (_REPETITIONS | _TIME_WORDS) and not clause_like(p)]
        phrase = f"{what[0] if what else 'repeat'} count"
    elif counted is not None:
        # A count is of something ("~1.2k users", "users affected: 2 400"): the phrase says which
        # (impacted users) when the fragments say the two together, else the noun alone says what is
        # counted ("send 4 guys" is no "send people"); a phrase that says the noun ("hotline calls") is kept.
        if stem(counted) not in map(stem, phrase.split()):
            said = f"{phrase} {counted}"
            together = " " not in phrase and any(said in " ".join(name_tokens(t)) for t in texts)
            phrase = said if together else counted
        # Which of the things are counted is said in front of them (damaged radio units, connected devices):
        # a leading phrase that only adds that word to the chosen one names the count better.
        qualified = [p for _, p in ranked[:3] if p.endswith(f" {phrase}") and len(p.split()) == len(phrase.split()) + 1]
        phrase = next((p for p in qualified if not clause_like(p)), phrase)
        words = phrase.split()
        if stem(words[-1]) == stem(counted):
            # The noun names the things ("people", "connected devices"), not how many: `_count` says it, as
            # for repetitions (alarm_count), after the noun in the singular (connected_device_count).
            phrase = " ".join([*words[:-1], _singular(words[-1]), "count"])
    elif tenure is not None:
        phrase = tenure  # a period said of a relation: how long the customer has been one (`tenure`)
    elif (
        spec.value_format == "date-time"
        and moment != "deadline"
        and _opening_event(opener, ranked) is None
        and (event := event_participle(texts, _TIME_WORDS | PARTICIPANTS)) is not None
    ):
        # When something happened: the event most fragments say ("was shipped", "shipping", "SHIP DATE"),
        # named by its participle, "at" says it is when (shipped_at; was part_time, from "the part").
        phrase, event_suffix = event, "at"
    elif (
        spec.value_format == "duration" or (spec.value_format == "date-time" and moment != "deadline")
    ) and opener is not None:
        # A time value qualifies the action the requests open with ("hold ... until <time>", "keep it
        # for <duration>"): the verb names the key (hold_until, keep_duration), not the whole clause; a
        # thing the requests open with ("The car went to the workshop on ...") names nothing by itself.
        phrase = leading_word(texts, actions=True) or phrase
        # A moment named by two words that open most fragments ("last seen 03:12", "window opens 23:00") is
        # an event: the two words name it, "at" says it is when (last_seen_at).
        if (
            spec.value_format == "date-time"
            and moment == "time"
            and (opening := _opening_event(opener, ranked)) is not None
        ):
            phrase, event_suffix = opening, "at"
    if deadline:
        # A deadline is for a thing ("the compensation"), not for the imperative that opens a request
        # ("please finish the compensation by 12:00" -> compensation_deadline).
        # An imperative opens a request and takes an object: "finish the ...", "retune the ...".
        openers = {
            ws[0] for t in texts if len(ws := [w for w in tokens(t) if w != "please"]) > 1 and ws[1] in OBJECT_WORDS
        }
        words = [w for w in phrase.split() if w not in STOP_WORDS]
        if len(words) > 1 and words[0] in openers:
            phrase = " ".join(words[1:])
    if spec.info.get("codes"):  # a code ("FR", "class C") is no other phrasing of the key
        codes = {v.casefold() for v in spec.enum}
        alternatives = _alternatives(phrase, [p for _, p in ranked if not codes & set(p.split())])
    elif tenure is not None:  # the rest of a tenure's lines says what the request is about: no phrasing of it
        alternatives = ()
    else:  # words of a set ("taxi company", "storm damage") still say what the key is about
        alternatives = _alternatives(phrase, [p for _, p in ranked[1:]] if not spec.enum else [p for _, p in ranked])
    # Stop words inside a phrase ("roll it back", "customer is affected") do not belong in a key name.
    name = snake_name(_once(" ".join(w for w in phrase.split() if w not in STOP_WORDS) or phrase))
    suffix = None
    if spec.unit is not None:
        suffix = currency_of(spec.unit) or _UNIT_SUFFIX.get(spec.unit, spec.unit)  # monthly_fee_eur
    elif spec.value_format == "duration" and tenure is None:  # a tenure says it is a duration
        suffix = "duration"
    elif spec.value_format == "date-time":
        suffix = event_suffix or moment
    elif spec.key_type == "array" and spec.id_prefix:
        suffix = f"{spec.id_prefix.lower().replace('-', '_')}_ids"
    if suffix and not name.endswith("_" + suffix):
        name = f"{name[: MAX_NAME - len(suffix) - 1]}_{suffix}"
    base_name = name
    counter = 2
    while name in taken_names or name == OTHER_KEY:
        name = f"{base_name}_{counter}"
        counter += 1
    return name, phrase, alternatives


def _whole_compound(phrase: str, texts: Sequence[str]) -> str:
    """``phrase`` with the word every one of its occurrences follows ("trip latency", always said in "round
    trip latency" or "round-trip latency", is "round trip latency"): a compound is named whole, not by its
    tail. Hyphens count as spaces; punctuation, a stop word or a number before it is no part of the compound
    (the words are those phrases are made of, `phrases.phrase_words`)."""
    words = phrase.split()
    before: set[str] = set()
    for text in texts:
        said = [part for word in phrase_words(text) for part in (word.split("-") if word else [word])]
        if said[: len(words)] == words:
            return phrase  # said at the start of a fragment: nothing before it
        before.update(said[i - 1] for i in range(1, len(said) - len(words) + 1) if said[i : i + len(words)] == words)
    if len(before) != 1:
        return phrase
    (word,) = before
    return phrase if word in STOP_WORDS or not word.isalpha() else f"{word} {phrase}"


def _cost_word(texts: Sequence[str]) -> str:
    """The cost word (fee, charge, price, ...) that two fragments or more say, the most said; else "fee",
    what a recurring amount paid is when no word says it ("I pay 25e a month")."""
    # Each fragment's words once, in the order said: a tie goes to the word said first, whatever the hash seed.
    said = Counter(w for t in texts for w in dict.fromkeys(_singular(w) for w in tokens(t)) if w in _COSTS)
    best = said.most_common(1)
    return best[0][0] if best and best[0][1] >= 2 else "fee"


def _once(phrase: str) -> str:
    """``phrase`` with each word family once ("backhaul / backhaul utilisation" of a half-translated header
    is "backhaul utilisation", not backhaul_backhaul)."""
    kept: list[str] = []
    for word in phrase.split():
        if stem(word) not in map(stem, kept):
            kept.append(word)
    return " ".join(kept)


def _singular(word: str) -> str:
    """``word`` without its plural ending ("winds" -> "wind", "fans" -> "fan", "batteries" -> "battery";
    "gas", "status" stay)."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


def _alternatives(phrase: str, ranked: Sequence[str], limit: int = 3) -> tuple[str, ...]:
    chosen: list[str] = []
    covered = phrase_stems(phrase)
    for candidate in ranked:
        stems = phrase_stems(candidate)
        if stems & covered:
            continue
        chosen.append(candidate)
        covered |= stems
        if len(chosen) >= limit:
            break
    return tuple(chosen)
