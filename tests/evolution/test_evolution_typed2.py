"""Round 3 of issue 14: closed sets named by few lines each, the closest idea's new value, moment and
clause names, dBm; and `heldout_typed2_corpus.jsonl` end to end (expected kinds in
tests/evolution/data/README.md), plus the refinements it shares with `heldout_typed_corpus.jsonl`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from an_agent.evolution.alternatives import (
    _heads,
    _share_a_frame,
    find_alternatives,
    modifier_words,
    slot_head,
    word_stem,
)
from an_agent.evolution.conflicts import find_conflict
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.inference import infer_value
from an_agent.evolution.phrases import clause_like
from an_agent.evolution.synthesis import ExistingKey, induce_key
from an_agent.evolution.value_words import STOP_WORDS, id_noun, moment_suffix
from an_agent.schemas.extract import find_quantities
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.values import parse_constraints
from conftest import DATA, FakeEmbedder, patches_by_label

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC).timestamp()

SEGMENTS = [  # customer segments: fleet three times, rental and taxi twice, private once
    "complaint is from a fleet customer",
    "the car belongs to a fleet customer",
    "rental car, the renter called the hotline",
    "taxi driver complaining again",
    "fleet account, 30 vans on the same contract",
    "private customer, got the car last month",
    "it's a rental vehicle from the airport branch",
    "reported by a taxi company",
]


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


def _candidates(texts: list[str]) -> tuple[list[str], list[set[int]]]:
    stems = sorted({word_stem(w) for t in texts for w in t.lower().replace(",", " ").split() if w not in STOP_WORDS})
    return stems, [{i for i, t in enumerate(texts) if c in {word_stem(w) for w in t.lower().split()}} for c in stems]


def test_a_noun_that_several_words_qualify_is_a_head() -> None:
    texts = ["a fleet customer", "the private customer again", "fleet account", "a taxi"]
    candidates, docs = _candidates(texts)
    assert _heads(texts, candidates, docs) == {"customer"}
    # "heavy" stands before two recurring words: an adjective of degree, so rain stays a value, not a head.
    weather = ["heavy rain", "heavy storm", "freezing rain", "the storm again", "rain and wind", "wind"]
    candidates, docs = _candidates(weather)
    assert _heads(weather, candidates, docs) == set()
    assert {candidates[i] for i in modifier_words(weather, candidates, docs)} == {"heavy", "freez"}


def test_a_value_before_a_head_is_no_modifier() -> None:
    texts = ["a fleet customer", "the fleet customer", "a private customer", "taxi company", "taxi rank"]
    candidates, docs = _candidates(texts)
    assert not {candidates[i] for i in modifier_words(texts, candidates, docs)} & {"fleet", "private"}


@pytest.mark.slow
def test_values_named_once_join_when_they_qualify_the_same_head(minilm: MiniLMEmbedder) -> None:
    alternatives = find_alternatives(SEGMENTS, minilm, STOP_WORDS)
    values = [v for v, _ in alternatives]
    # "private" is named once, before "customer" like "fleet"; "customer" is the category, "car" what
    # "rental" qualifies: neither is a value.
    assert set(values) == {"fleet", "rental", "taxi", "private"}, values
    assert slot_head(SEGMENTS, alternatives, STOP_WORDS) == "customer"
    key = induce_key(SEGMENTS, minilm.embed(SEGMENTS), minilm, now=NOW).key
    assert key.key_name == "customer_type" and key.constraints.enum[0] == "fleet", key


def test_a_value_named_once_without_a_shared_head_stays_out() -> None:
    # Two recurring values and words said once that qualify nothing: no closed set of three (FakeEmbedder
    # makes every word of one kind, so only the frame rule keeps "wind" and "snow" out).
    texts = ["storm again", "storm warning", "rain at the site", "rain all day", "wind", "snow"]
    assert find_alternatives(texts, FakeEmbedder(), STOP_WORDS) == []


def test_dbm_is_an_absolute_level_with_a_range_below_zero() -> None:
    assert [(q.value, q.unit) for q in find_quantities("RSRP -110 dBm, raise by 2 dB")] == [(-110, "dbm"), (2, "db")]
    texts = ["edge at -115 dBm", "measured -108 dBm", "-112dBm at the edge", "about -120 dBm indoors"]
    spec = infer_value(texts, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS)
    assert spec.unit == "dbm" and "Range: -500 to 0." in spec.phrases, spec


def test_the_preposition_says_which_moment() -> None:
    assert moment_suffix(["hold until 06:00", "till tomorrow morning", "until the match ends"]) == "until"
    assert moment_suffix(["done by 17:30", "before 06:00", "no later than 09:15", "until 10:00"]) == "deadline"
    assert moment_suffix(["start at 06:00", "from 2026-11-21 12:00 UTC"]) == "time"
    assert moment_suffix(["outage at 06:00 due to the storm", "down at 07:00 due to power"]) == "time"
    assert moment_suffix(["the report is due tomorrow at 09:00", "due 2026-11-21 12:00 UTC"]) == "deadline"


def test_identifiers_are_named_from_the_words_before_them() -> None:
    changes = ["linked to change request CR-20931", "under changes CR-4410 and CR-4411", "ref CR-7781 approved"]
    assert id_noun(changes, "CR") == "change"
    hops = ["also look at microwave hop MW-5120", "include the microwave hop MW-1190", "MW-7712 flaps"]
    assert id_noun(hops, "MW") == "microwave hop"
    assert id_noun(["see CR-1", "CR-2 covers this"], "CR") is None


def test_a_past_form_after_a_noun_reads_as_a_clause() -> None:
    assert clause_like("driver rebooted") and clause_like("customer bought") and clause_like("customer prefers")
    assert not clause_like("shared site") and not clause_like("energy saving") and not clause_like("cable theft")


@pytest.mark.slow
def test_a_deadline_is_named_for_its_thing_not_its_time_or_imperative(minilm: MiniLMEmbedder) -> None:
    texts = [
        "compensation must be active by 17:30",
        "please finish the compensation by 2026-11-21 12:00 UTC",
        "have the compensation in place before 06:00",
        "compensation ready by this evening",
        "the compensation has to be on by 22:00",
    ]
    key = induce_key(texts, minilm.embed(texts), minilm, now=NOW).key
    assert key.key_name == "compensation_deadline" and key.constraints.value_format == "date-time", key
    assert key.semantic_description.startswith("By when compensation")


def _conflict(minilm: MiniLMEmbedder, corpus: str, label: str, schema_id: str) -> tuple[str | None, str | None]:
    texts = [r["payload"]["other"] for r in _rows(corpus) if r["label"] == label]
    vectors = minilm.embed(texts)
    induced = induce_key(texts, vectors, minilm, now=NOW)
    existing = [ExistingKey(k, "base") for k in TemplateRegistry.default().get(schema_id).keys]
    conflict = find_conflict(induced, vectors, existing, minilm, 0.48, texts)
    return (conflict.existing.key.key_name, conflict.value) if conflict else (None, None)


@pytest.mark.slow
def test_a_new_value_of_the_closest_idea_below_the_threshold(minilm: MiniLMEmbedder) -> None:
    # Below the conflict threshold (0.42 and 0.40), but clearly the closest key, and the fragments are
    # near its allowed values: a new value of that key.
    name, value = _conflict(minilm, "heldout_typed2_corpus.jsonl", "conflict:cable_theft", "trouble_ticket_v1")
    assert name == "fault" and value is not None and ("theft" in value or "stolen" in value), (name, value)
    name, value = _conflict(minilm, "heldout_typed_corpus.jsonl", "conflict:voice_quality", "complaint_ticket_v1")
    assert name == "complaint_category" and value is not None and "voice" in value, (name, value)
    # Closest to complaint_category too (0.06 ahead of the next key), but the fragments are far from its
    # values: a reboot is a new idea, not a complaint category.
    assert _conflict(minilm, "heldout_typed2_corpus.jsonl", "cluster:device_rebooted", "complaint_ticket_v1") == (
        None,
        None,
    )
    # Near the allowed values (0.37) but saying one of them again (0.45 to no_coverage) in places of its
    # own ("no signal in the underground car park"): not a new value.
    assert _conflict(minilm, "heldout_recall_corpus.jsonl", "cluster:indoor_location", "complaint_ticket_v1") == (
        None,
        None,
    )


# What the replay makes of each intent of heldout_typed2_corpus.jsonl (the README's table).
NEW_KEYS: dict[str, dict[str, Any]] = {
    "cluster:customer_segment": {"name": "customer_type", "type": "string", "enum": {"fleet", "taxi", "private"}},
    "cluster:compensation_deadline": {"name": "compensation_deadline", "type": "string", "format": "date-time"},
    "cluster:edge_signal_level": {"suffix": "_dbm", "type": "integer", "unit": "dbm", "range": (-500, 0)},
    "cluster:neighbour_load": {"suffix": "_percent", "type": "integer", "unit": "percent", "range": (0, 100)},
    "cluster:change_requests": {"name": "change_cr_ids", "type": "array"},
    "cluster:device_rebooted": {"type": "boolean"},
    "cluster:transport_medium": {"type": "boolean"},  # not reached: an enumeration (docs/evolution.md, section 5)
}


@pytest.mark.slow
def test_heldout_typed2_corpus_end_to_end(minilm: MiniLMEmbedder) -> None:
    by_label = patches_by_label("heldout_typed2_corpus.jsonl", minilm)
    for label, expected in NEW_KEYS.items():
        (key,) = by_label[label]["new_keys"]
        c = parse_constraints(key["semantic_description"])
        assert key["key_type"] == expected["type"], (label, key)
        assert key["key_name"] == expected.get("name", key["key_name"]), (label, key["key_name"])
        assert key["key_name"].endswith(expected.get("suffix", "")), (label, key["key_name"])
        assert c.value_format == expected.get("format") and c.unit == expected.get("unit"), (label, c)
        assert set(c.enum) >= expected.get("enum", set()), (label, c.enum)
        if "range" in expected:
            assert (c.minimum, c.maximum) == expected["range"], (label, c)
        assert not clause_like(key["key_name"].replace("_", " ")), (label, key["key_name"])
    # A new value of the diagnosed fault, not a new key; a new cause widens the free-text cause key.
    (fault,) = by_label["conflict:cable_theft"]["modified_keys"]
    assert by_label["conflict:cable_theft"]["new_keys"] == [] and fault["key_name"] == "fault"
    added = set(parse_constraints(fault["semantic_description"]).enum) - {
        "fibre_cut",
        "port_fault",
        "mains_power_lost",
        "software_hang",
        "cell_misconfiguration",
        "unknown",
    }
    assert len(added) == 1 and ("theft" in added.pop() or "stolen" in fault["semantic_description"]), fault
    cause = by_label["conflict:software_cause"]
    assert cause["new_keys"] == [] and [k["key_name"] for k in cause["modified_keys"]] == ["suspected_root_cause"]


def test_a_slot_frame_skips_articles_and_possessives_not_quantifiers() -> None:
    """An article, a demonstrative or a possessive names no slot ("swap the battery" and "swap her fuse"
    share "swap"); "no" is part of it ("no power" and "no signal" fill one slot): `value_words.ARTICLES`."""
    others = ["site down since noon", "alarm cleared at dawn", "ticket closed by ops"]
    assert _share_a_frame(["battery", "fuse"], ["swap the battery", "swap her fuse", *others])
    assert _share_a_frame(["power", "signal"], ["no power at the site", "lost it, no signal", *others])
    assert not _share_a_frame(["battery", "fuse"], ["swap the battery", "check her fuse", *others])
