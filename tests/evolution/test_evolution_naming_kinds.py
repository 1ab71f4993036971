"""Names that say the idea, and closed sets whose values are of one kind (issue 14; docs/evolution.md, section 5)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from an_agent.evolution.alternatives import content_words, find_alternatives, not_values
from an_agent.evolution.categories import category_alternatives
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.inference import infer_value
from an_agent.evolution.naming import _singular, _whole_compound, name_key
from an_agent.evolution.phrases import candidate_phrases, snake_name
from an_agent.evolution.replay import replay
from an_agent.evolution.value_words import STOP_WORDS, leading_word, tokens
from conftest import DATA, POWER

NOW = datetime(2026, 11, 10, 12, 0, tzinfo=UTC).timestamp()

# The obstruction cluster of heldout_recall_corpus.jsonl as synthesis saw it (with the temporary-cell
# lines that merged into it): it made an enumeration of cell, front, tower, blocks, main.
OBSTRUCTION = [
    "a new noise barrier along the motorway shields the cell",
    "trees in front of the antenna have grown a lot",
    "solar panels were mounted in front of the antenna",
    "a huge billboard was put up right in front of the panel",
    "emergency mobile tower installed next to the stadium",
    "temporary COW deployed in the parking lot",
    "a tower crane stands in the beam",
    "the new stadium roof blocks the line of sight",
    "a wind turbine went up in the main lobe",
    "a truck with a mobile cell will arrive tomorrow",
    "a new office building now blocks the sector",
    "set up a portable base station for the weekend",
    "a cell on wheels is being driven to the site",
    "portable cell site brought in while the main site is down",
]
# heldout_recall_corpus.jsonl, cluster:device_model, with the one-offs its core kept.
DEVICES = [
    "the caller was on the metro when she rang",
    "customer says the phone is useless in his cellar",
    "customer uses an iPhone 15",
    "the affected device is a Huawei P30",
    "the handset is a Samsung Galaxy S23",
    "happens with the Fairphone 5",
    "caller's phone is a Motorola g54",
    "customer's phone model is iPhone SE 2nd gen",
    "the customer bought a new iPhone case",
]
# heldout_blind_corpus.jsonl, cluster:shared_tower, as synthesis saw it.
SHARED = [
    "a second operator's antennas are on this mast",
    "the other operator on this tower must be informed",
    "the tower is shared with another operator",
    "two operators use the same cabinet on this mast",
    "the mast is co-located with a competitor",
    "the other operator's logo is on the shelter",
]


def _flagged(texts: list[str]) -> set[str]:
    _, candidates, _ = content_words(texts, STOP_WORDS)
    return {candidates[i] for i in not_values(texts, candidates)}


def test_verbs_complex_prepositions_and_evaluative_adjectives_are_not_values() -> None:
    flagged = _flagged(OBSTRUCTION)
    assert {"block", "front", "main"} <= flagged  # "blocks the", "in front of", "the main lobe"
    assert not {"cell", "tower", "antenna", "stadium"} & flagged
    # Nouns followed by "of" after an article stay nouns ("the basement of the mall"); "mains" is not "main".
    assert not _flagged(["the basement of the mall", "the basement of the hotel", "no signal in the basement"])
    assert not {"battery", "mains", "generator"} & _flagged(POWER)


def test_an_enumeration_of_junk_words_is_refused(minilm: MiniLMEmbedder) -> None:
    """Without the noun test the obstruction cluster was `site_type` with cell, front, tower, blocks, main."""
    values = {v for v, _ in find_alternatives(OBSTRUCTION, minilm, STOP_WORDS)}
    assert not values & {"front", "blocks", "main"}, values
    assert category_alternatives(OBSTRUCTION, minilm, STOP_WORDS) is None
    spec = infer_value(OBSTRUCTION, minilm, now=NOW, stop_words=STOP_WORDS, vectors=minilm.embed(OBSTRUCTION))
    assert spec.key_type == "boolean" and not spec.enum


def test_closed_sets_of_one_kind_stay(minilm: MiniLMEmbedder) -> None:
    assert [v for v, _ in find_alternatives(POWER, minilm, STOP_WORDS)] == ["battery", "mains", "generator"]


def test_phrases_do_not_cross_punctuation_nor_hold_a_participant() -> None:
    phrases = candidate_phrases(["it's Christmas day, offices are closed", "the customer is deaf - call back"])
    assert "day offices" not in phrases and "christmas day" in phrases
    assert "customer" not in phrases and "deaf call" not in phrases
    assert set(candidate_phrases(["customer's phone model is an iPhone"])) >= {"phone", "phone model"}
    assert not [p for p in candidate_phrases(["please call the customer back"]) if "customer" in p]
    # A spaced slash separates a header and its gloss (round 8: "bruch distance" named the sheet corpus's key).
    glossed = candidate_phrases(["Entfernung zum Bruch / distance to break: 1 870 m"])
    assert "bruch distance" not in glossed and "distance" in glossed


def test_a_participant_does_not_name_the_key(minilm: MiniLMEmbedder) -> None:
    """Who the requests are about (customer, caller, operator) is no name: `customer_phone` -> `phone_model`,
    `operator` -> a word of what is said about the operator."""
    assert _name(DEVICES, minilm) == "phone_model"  # was customer_phone
    assert "operator" not in _name(SHARED, minilm)  # was operator


def _name(texts: list[str], minilm: MiniLMEmbedder) -> str:
    """The name `naming.name_key` gives these fragments (the core synthesis saw, no second core test)."""
    vectors = minilm.embed(texts)
    centroid = vectors.sum(axis=0)
    centroid = centroid / np.linalg.norm(centroid)
    spec = infer_value(texts, minilm, now=NOW, stop_words=STOP_WORDS, vectors=vectors)
    return name_key(texts, spec, centroid, minilm)[0]


def test_a_present_state_is_named_with_its_participle_first() -> None:
    """ "the tower is shared" -> "shared tower"; an event ("was restarted") or a progressive ("is
    overheating") stays as it is said."""
    phrases = candidate_phrases(["the tower is shared with another operator", "the mast is co-located"])
    assert {"shared tower", "co-located mast"} <= set(phrases) and "tower is shared" not in phrases
    assert "restarted car" not in candidate_phrases(["the car was restarted twice"])
    assert "overheating equipment" not in candidate_phrases(["the equipment is overheating"])


def _keys(corpus: str, minilm: MiniLMEmbedder) -> dict[str, dict[str, Any]]:
    """The key of each labelled intent's patch in a replay of ``corpus`` (with the real model)."""
    lines = (DATA / corpus).read_text().splitlines()
    labels = [json.loads(line)["label"] for line in lines]
    report = replay(lines, minilm).to_dict()
    members = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    out = {}
    for patch in report["patches"]:
        label = Counter(labels[m] for m in members[patch["cluster_id"]]).most_common(1)[0][0]
        out[label] = (patch["new_keys"] + patch["modified_keys"])[0]
    return out


@pytest.mark.slow
def test_held_out_names_say_the_idea_and_no_junk_enumeration(minilm: MiniLMEmbedder) -> None:
    """heldout_recall / heldout_blind (docs/evolution-dev-corpus.md): no key is named after a participant
    (was `customer`, `operator`, `customer_phone`), no phrase spans a comma (was `day_offices`), and no
    key is an enumeration of cell, front, tower, blocks, main (the words of the obstruction and
    temporary-cell lines; since the two-ideas split the obstruction lines make no patch on this corpus
    and the temporary cell's is a flag: docs/evolution.md, section 4)."""
    recall = _keys("heldout_recall_corpus.jsonl", minilm)
    assert recall["cluster:device_model"]["key_name"] == "phone_model"
    # Each line names another model: a free-form string (evolution/freeform.py), no longer a flag.
    assert recall["cluster:device_model"]["key_type"] == "string"
    assert "-> 'Motorola g54'" in recall["cluster:device_model"]["semantic_description"]
    assert recall["cluster:public_holiday"]["key_name"] != "day_offices"
    temporary = recall["cluster:temporary_cell"]
    assert temporary["key_type"] == "boolean", temporary
    assert "cluster:obstruction" not in recall
    for key in recall.values():  # no junk set on any key: "blocks" is a verb, "front" part of "in front of"
        values = key["semantic_description"].partition("Acceptable values:")[2].split(".")[0]
        assert "blocks" not in values and "front" not in values, key
    blind = _keys("heldout_blind_corpus.jsonl", minilm)
    assert blind["cluster:shared_tower"]["key_name"] == "co_located_mast"
    assert "customer" not in blind["cluster:accessibility"]["key_name"]


@pytest.mark.parametrize(
    ("texts", "what"),
    [
        (
            [
                "alarm repeated 25 times overnight",
                "alarm flapped 14 times since midnight",
                "same alarm came 6 times this week",
                "the alarm was raised 9 times today",
            ],
            "alarm",
        ),
        (
            [
                "the modem rebooted 4 times last night",
                "modem restarts: 7 times since Monday",
                "it says the modem rebooted 12 times",
                "modem went down and up 3 times",
            ],
            "modem",
        ),
    ],
)
def test_a_count_of_repetitions_is_named_by_what_repeats(texts: list[str], what: str, minilm: MiniLMEmbedder) -> None:
    """ "flapped 14 times": the key counts repetitions of the alarm; "times" says it repeats, as a unit would
    (it was the key `times`). Measured: `alarm_count`, `modem_restarts_count`."""
    name = _name(texts, minilm)
    assert name.startswith(f"{what}_") and name.endswith("_count") and "times" not in name


def test_a_moment_is_named_by_the_event_most_fragments_say(minilm: MiniLMEmbedder) -> None:
    """When something happened: the event's participle with "at" (shipped_at; was part_time, from "the part"
    most fragments open with), unless two opening words name the event (last_seen_at stays)."""
    shipped = [
        "the part was shipped May 16th, 2027, 10:30 am PST",
        "part sent out 2027-05-14 18:00 UTC according to vendor",
        "SHIP DATE 16-MAY-2027 11:05 GMT",
        "the replacement RRU was shipped on 14/05/2027",
        "we confirm shipping of the fan module 4:30 pm CEST 13 May 2027",
        "spare shipment date: 16.05.2027, 08:40",
    ]
    assert _name(shipped, minilm) == "shipped_at"
    seen = ["last seen 2027-03-03 02:45Z", "last seen at 03:12 UTC", "node last seen 01:10", "last seen 04:40 today"]
    assert _name(seen, minilm) == "last_seen_at"


@pytest.mark.parametrize(
    ("phrase", "name"),
    [
        ("última configuración", "ultima_configuracion"),
        ("Straße gesperrt", "strasse_gesperrt"),
        ("Łódź site", "lodz_site"),
    ],
)
def test_a_name_of_accented_words_keeps_their_letters_in_ascii(phrase: str, name: str) -> None:
    assert snake_name(phrase) == name


def test_an_accented_word_is_one_token() -> None:
    # "configuración" was "configuraci" and "n": a description listed "configuraci n" as a phrasing.
    assert tokens("Dernière modif. (configuración)") == ["dernière", "modif", "configuración"]


def test_a_phrase_never_says_one_word_twice() -> None:
    # "Auslastung Backhaul / backhaul utilisation" named its key backhaul_backhaul, then backhaul_percent.
    phrases = candidate_phrases(["Auslastung Backhaul / backhaul utilisation: 78 %", "backhaul utilisation 93 %"])
    assert "backhaul backhaul" not in phrases and phrases["backhaul utilisation"] == 2


def test_a_thing_the_requests_open_with_is_no_action() -> None:
    """Round 8: "The car went to the workshop on <time>" named its moment key `car_time`; the action a time
    qualifies opens a request without a determiner ("hold until ...")."""
    things = ["The car went to the dealer on 27/4", "Car at the dealer workshop on 2027-04-30", "The car was serviced"]
    assert leading_word(things) == "car"  # what opens the fragments, for the event they may name
    assert leading_word(things, actions=True) is None
    holds = ["hold the change until 23:00", "hold it until Monday", "the change waits until noon"]
    assert leading_word(holds, actions=True) == "hold"


def test_a_compound_is_named_whole_not_by_its_tail() -> None:
    # "trip latency" is only ever said in "round trip latency" / "round-trip latency": the compound names it.
    said = ["round trip latency now 80 ms", "the round-trip latency is 95 ms", "RTT 48 ms", "latency 74 ms"]
    assert _whole_compound("trip latency", said) == "round trip latency"
    # Said after two different words, at a fragment's start, or after punctuation: the phrase stays.
    assert _whole_compound("trip latency", [*said, "one-way trip latency 40 ms"]) == "trip latency"
    assert _whole_compound("fan speed", ["fan speed 4200 rpm", "the cabinet fan speed is 3600 rpm"]) == "fan speed"
    assert _whole_compound("distance break", ["Bruch / distance break 1 870 m", "Bruch / distance break 3 km"]) == (
        "distance break"
    )
    # A stop word before it is no part of a compound.
    assert _whole_compound("packet loss", ["the packet loss is 3 %", "with packet loss of 2 %"]) == "packet loss"


@pytest.mark.slow
def test_a_latency_said_as_round_trip_is_named_round_trip(minilm: MiniLMEmbedder) -> None:
    texts = [
        "round trip latency to the core is 85 ms since the swap",
        "the round-trip latency measured 120 ms in the busy hour",
        "latency is 74ms on the compensating cells",
        "round trip latency: 95 millisec",
        "RTT to the gateway now 60 ms",
        "latency 0.2 seconds, far too high",
    ]
    vectors = minilm.embed(texts)
    centroid = vectors.sum(axis=0)
    spec = infer_value(texts, minilm, now=NOW, stop_words=STOP_WORDS, vectors=vectors)
    name, _, _ = name_key(texts, spec, centroid / np.linalg.norm(centroid), minilm)
    assert name == "round_trip_latency_ms", name


@pytest.mark.parametrize(
    ("plural", "singular"),
    [
        ("winds", "wind"),
        ("fans", "fan"),
        ("batteries", "battery"),
        ("gas", "gas"),
        ("status", "status"),
        ("ties", "tie"),
    ],
)
def test_a_plural_noun_in_the_singular(plural: str, singular: str) -> None:
    assert _singular(plural) == singular
