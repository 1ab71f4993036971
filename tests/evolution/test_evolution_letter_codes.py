"""Round 8 of issue 31: letter codes as the values of one slot (LC / SC / FC / MPO connectors), and names
read through the chat abbreviations lexicon ("ppl", "techs", "hght", "abt"). Probe lines written for these
tests, in the kinds the SMS development corpus showed (not its lines)."""

from __future__ import annotations

import json

import pytest
from bench.evolution_corpora import score
from test_evolution_synthesis import induce

from an_agent.evolution.chat_words import ABBREVIATIONS, HEDGES, full_word
from an_agent.evolution.codes import find_codes
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.letter_codes import find_letter_codes
from an_agent.evolution.phrases import candidate_phrases
from an_agent.evolution.replay import replay
from an_agent.evolution.value_words import STOP_WORDS, counted_noun, name_tokens
from conftest import DATA
from fake_embedder import FakeEmbedder

CONNECTORS = [
    "need SC connectors for the new shelf",
    "the connector is LC, bring two",
    "LC-LC patch cords, 3 m",
    "FC/PC connector on the old ODF",
    "[SMS +4917…] swap the conn to SC pls",
    "MPO-24 trunk connector to the ODF",
    "lc connector dirty again",
    "conn type: FC, screw type",
    "WA/Jonas: MPO connector cassette needed",
]


def test_letter_codes_next_to_one_frame_word_are_an_enumeration() -> None:
    found = find_codes(CONNECTORS, STOP_WORDS)
    assert found is not None and set(found.enum) == {"LC", "SC", "FC", "MPO"}, found
    assert found.frame == "connector" and found.head == "type", found
    # Each fragment's value is its code in capitals: the suffix of "LC-LC", "FC/PC", "MPO-24" is a detail of
    # it, "lc" next to the frame the same value; the ODF and the gateway's tags (SMS, WA) are no value.
    assert found.values == ("SC", "LC", "LC", "FC", "SC", "MPO", "LC", "FC", "MPO"), found.values


def test_letter_codes_make_a_key_named_by_their_frame_and_head() -> None:
    key = induce(CONNECTORS, FakeEmbedder()).key
    assert key.key_name == "connector_type", key.key_name
    assert key.key_type == "string" and set(key.constraints.enum or ()) == {"LC", "SC", "FC", "MPO"}, key
    assert "PC" not in (key.constraints.enum or ()) and "ODF" not in (key.constraints.enum or ())


@pytest.mark.parametrize(
    "texts",
    [
        # Acronyms of the chat and the office: in no slot, or one value, or none that varies.
        [
            "[SMS +3934…] FYI the NOC says the ETA is 14:00",
            "WA/Ana: ASAP, SLA breach otherwise",
            "OK, GPS shows the van at the site",
            "FYI: ETA 30 min as per NOC",
            "[WA Ola] SMS from the NOC: all OK",
            "UTC times only in the SLA report",
        ],
        # A code in every fragment is the topic ("the OTDR shows"), whatever its frame.
        [
            "OTDR trace shows a break",
            "the OTDR trace is noisy",
            "OTDR trace attached",
            "ran the OTDR trace twice",
        ],
        # Codes that share every fragment are context, not values of one slot.
        [
            "the ODF port on the BBU side",
            "ODF port and BBU port both dirty",
            "BBU port, ODF port: same issue",
            "check the ODF port near the BBU",
        ],
    ],
)
def test_acronyms_that_are_no_values_make_no_letter_codes(texts: list[str]) -> None:
    assert find_letter_codes(texts, STOP_WORDS) is None
    assert find_codes(texts, STOP_WORDS) is None


def test_earlier_code_families_keep_their_shape() -> None:
    # Letter codes are tried only when no family of digits, prefixes, a frame's capital or countries makes
    # a set: these keep their family (and countries their kind).
    prios = find_codes(["priority P1", "prio P2 SLA", "priority P3 NOC", "priority P1", "prio P2"], STOP_WORDS)
    assert prios is not None and prios.enum == ("P1", "P2", "P3") and prios.head is None
    countries = find_codes(
        ["roaming in DE", "Visited network: ES", "roaming in FR", "roaming: DE", "in ES today", "roaming CH"],
        STOP_WORDS,
    )
    assert countries is not None and countries.kind == "country" and countries.head is None
    classes = find_codes(["site class: B", "site class = C", "class A site", "Class B", "class-C"], STOP_WORDS)
    assert classes is not None and classes.enum == ("A", "B", "C") and classes.head is None


@pytest.mark.parametrize(
    ("word", "full"),
    [
        ("ppl", "people"),
        ("techs", "technicians"),
        ("hght", "height"),
        ("batt", "battery"),
        ("prio", "priority"),
        ("pwr", "power"),
        ("nbr", "number"),
        ("lvl", "level"),
        ("temp", "temperature"),
        ("conn", "connector"),
        ("abt", "about"),
        ("approx", "approximately"),
        ("battery", "battery"),  # a word in full stays itself
    ],
)
def test_chat_abbreviations_are_the_word_they_stand_for(word: str, full: str) -> None:
    assert full_word(word) == full


def test_the_lexicon_keeps_ambiguous_clippings_out() -> None:
    # "tech" is technician or technology, "attn" attenuation or attention, "gen" generator or generation.
    assert not {"tech", "attn", "gen", "ant"} & set(ABBREVIATIONS)
    assert all(full_word(h) == h for h in HEDGES)  # hedges are written in full already


def test_names_are_read_in_full_words_and_hedges_name_nothing() -> None:
    assert name_tokens("ant hght abt 32m, batt 40%") == ["ant", "height", "about", "32m", "battery", "40"]
    phrases = candidate_phrases(["attenuation abt 1.1 dB/km", "fibre attenuation approx 0.9 dB/km"])
    assert "attenuation" in phrases and "fibre attenuation" in phrases
    assert not [p for p in phrases if {"abt", "about", "approx", "approximately"} & set(p.split())], phrases
    key = induce(["batt charge 40%", "battery charge 62 %", "batt charge at 35 pct", "battery charge ~50%"]).key
    assert key.key_name == "battery_charge_percent", key.key_name


def test_a_count_of_people_is_named_by_what_is_counted() -> None:
    texts = ["need 3 ppl on site", "send 4 guys for the pull", "2 techs tomorrow", "3 people for the climb"]
    assert counted_noun(texts) == "people"  # ppl, guys, people: one noun; techs (technicians) once
    key = induce([*texts, "5 technicians incl the driver", "team of 2 ppl is enough"], FakeEmbedder()).key
    assert key.key_type == "integer" and key.key_name.endswith("people_count"), key.key_name


@pytest.mark.slow
def test_sms_development_corpus_connectors_and_crew(minilm: MiniLMEmbedder) -> None:
    """The SMS corpus (a development corpus from round 8): the connector codes are the connector type's
    values, the crew count is named by what it counts, the attenuation without its hedge."""
    path = DATA / "heldout_sms_corpus.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    report = replay(lines, minilm).to_dict()
    result = score(report, [json.loads(line)["label"] for line in lines], path.stem)
    assert not result.spurious and "cluster:connector_type" in result.pure, result
    keys = {k["key_name"]: k for p in report["patches"] for k in p["new_keys"]}
    assert "Acceptable values: LC, FC, MPO, SC." in keys["connector_type"]["semantic_description"]
    assert "people_count" in keys and keys["people_count"]["key_type"] == "integer", sorted(keys)
    assert not [name for name in keys if "abt" in name.split("_") or "ppl" in name.split("_")], sorted(keys)
