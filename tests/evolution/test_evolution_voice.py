"""Issue 31 round 4: values as speech-to-text writes them (numbers said in words, volts), and the held-out
voice corpus `heldout_voice_corpus.jsonl` end to end (tests/evolution/data/README.md)."""

from __future__ import annotations

import pytest

from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.phrases import candidate_phrases
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.extract import find_counts, find_quantities, spoken_number
from conftest import patches_with_purity


@pytest.mark.parametrize(
    ("words", "value"),
    [
        ("forty eight point two", 48.2),
        ("fifty-one", 51.0),
        ("forty six", 46.0),
        ("nineteen", 19.0),
        ("one hundred twenty", 120.0),
        ("two hundred and five", 205.0),
        ("three point five", 3.5),
        ("seventy", 70.0),
    ],
)
def test_numbers_said_in_words(words: str, value: float) -> None:
    assert spoken_number(words) == value


def test_what_is_no_number_said_in_words() -> None:
    for words in ("forty eight volts", "point two", "the fifty", "hundred", ""):
        assert spoken_number(words) is None, words


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("battery voltage reads forty eight point two volts", 48.2, "volt"),
        ("uh the bank is at forty six volts now dropping", 46.0, "volt"),
        ("okay battery voltage fifty one volt on the meter", 51.0, "volt"),
        ("measured 47.5 volts on the battery string", 47.5, "volt"),
        ("dc voltage of the batteries is 52 v", 52.0, "volt"),
        ("rectifier output 53.5 VDC", 53.5, "volt"),
        ("one hundred twenty km/h on the motorway", 120.0, "kmh"),
        ("twenty-five percent of the cells", 25.0, "percent"),
    ],
)
def test_spoken_numbers_and_volts_are_quantities(text: str, value: float, unit: str) -> None:
    assert [(q.value, q.unit) for q in find_quantities(text)][:1] == [(value, unit)]


def test_a_v_that_is_no_volt() -> None:
    # A letter v in a version or a model is not a unit; only a number right before it makes one.
    assert find_quantities("firmware v2 on the 4G modem") == []
    assert find_quantities("the handset is a Sony Xperia 10 V") == []  # a model's name
    assert [(q.value, q.unit) for q in find_quantities("Battery 48 V")] == [(48.0, "volt")]
    assert find_quantities("um voltage on the bank forty nine point six") == []  # no unit said
    assert [c[0] for c in find_counts("about 1,200 users")] == [1200]  # counts unchanged


def test_contractions_are_no_part_of_a_name() -> None:
    phrases = candidate_phrases(["i measured the battery voltage it's fifty volts"])
    assert "battery voltage" in phrases
    assert not any("it's" in (p.split()[0], p.split()[-1]) for p in phrases)  # no name starts or ends with one
    assert {"it's", "don't", "there's"} <= STOP_WORDS


@pytest.mark.slow
def test_held_out_voice_corpus(minilm: MiniLMEmbedder) -> None:
    got = patches_with_purity("heldout_voice_corpus.jsonl", minilm)
    voltage, purity = got["cluster:battery_voltage"]
    key = voltage["new_keys"][0]
    assert key["key_name"] == "battery_voltage_v" and key["key_type"] == "number"
    assert "Unit: volt." in key["semantic_description"] and purity == 1.0
    for flag in ("cluster:water_ingress", "cluster:indoor_only", "cluster:road_blocked", "cluster:noise_complaint"):
        patch, purity = got[flag]
        assert patch["new_keys"][0]["key_type"] == "boolean" and purity >= 0.9, (flag, purity)
