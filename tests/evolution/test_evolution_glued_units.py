"""Issue 31, round 8: units as people glue and abbreviate them; quantities per a length.

"45 mtrs", "25mtr", "100ft" are lengths; a lone "m" glued to its number ("32m", "5m") is metres or
minutes as the words of its sentence say, else as its key's other fragments say, else unread; "0.9dB/km",
"dB per km", "0.55dBkm", "loss/km = 1.2 dB" are a number in dB per km (per mile converted), in a key
named by what is measured, then the unit.
"""

from __future__ import annotations

import json

import pytest
from bench.evolution_corpora import score
from test_evolution_synthesis import induce

from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.inference import infer_value
from an_agent.evolution.replay import replay
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.extract import find_quantities
from an_agent.schemas.mapping import map_text
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.values import parse_constraints
from conftest import DATA
from fake_embedder import FakeEmbedder


def _read(text: str, glued_m: str | None = None) -> list[tuple[float, str]]:
    return [(q.value, q.unit) for q in find_quantities(text, glued_m)]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("antenna @ 45 mtrs on the lattice tower", 45.0),
        ("antenna at 25mtr AGL", 25.0),
        ("antennas mounted at 100ft on the water tower", 30.48),
        ("ant. height 60 ft only, low site", 18.288),
        ("antenna centre line 35 m", 35.0),
        ("height of antenna approx 18 m, rooftop", 18.0),
        ("tower of 40 mts", 40.0),
        # glued to an "m", with a word of length in its sentence
        ("anten y\u00fcksekli\u011fi ~28m (antenna height)", 28.0),
        ("ant hght on the nbr site is 32m, can tilt ok", 32.0),
        ("rooftop antennas only 12m above street!!", 12.0),
        ("AGL hght 52m per site docs", 52.0),
        ("antennas at abt 38m, mast is 40", 38.0),
        ("trench 1.5m deep", 1.5),
    ],
)
def test_abbreviated_and_glued_lengths_are_metres(text: str, value: float) -> None:
    assert _read(text)[:1] == [(value, "m")], find_quantities(text)


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("waited 5m on the hotline", 5.0),
        ("back in 5m", 5.0),
        ("down for 5m", 5.0),
        ("after ~15m it came back", 15.0),
        ("reboot took 20m", 20.0),
        ("2h 15m outage", 135.0),  # with the hours before it: one duration
    ],
)
def test_a_glued_m_with_a_word_of_time_is_minutes(text: str, minutes: float) -> None:
    assert _read(text)[:1] == [(minutes, "minutes")], find_quantities(text)


@pytest.mark.parametrize(
    "text",
    [
        "need MPO-MPO 5m",  # no word says which: unread
        "waited 5m at the mast",  # both say one: unread
        "the antenna is at 30m. We sent the photos",  # the length word is in another sentence
        "2 M users on the cell",  # millions
        "5M subscribers",
        "a 12 m2 shelter",  # an area
        "5mm of rain",
    ],
)
def test_what_says_no_length_or_time_stays_unread(text: str) -> None:
    assert [q for q in find_quantities(text) if q.unit in ("m", "km", "minutes")] == []


def test_a_glued_m_takes_the_unit_its_caller_gives_only_when_its_sentence_is_silent() -> None:
    assert _read("need MPO-MPO 5m", "m") == [(5.0, "m")]
    assert _read("need MPO-MPO 5m", "minutes") == [(5.0, "minutes")]
    assert _read("waited 5m", "m") == [(5.0, "minutes")]  # its sentence said it first
    assert _read("gusts of 25m/s", "m") == [(90.0, "kmh")]  # a speed stays a speed


def test_a_length_key_reads_the_glued_m_its_sentences_leave_open_as_metres() -> None:
    texts = [
        "antenna at 45 mtrs",
        "antenna at 35 m",
        "antenna at 100ft",
        "antenna at 38m",  # no word of length: settled by the key's unit
        "antenna at 52m",
    ]
    spec = infer_value(texts, FakeEmbedder(), now=0.0, stop_words=STOP_WORDS)
    assert spec.unit == "m" and spec.values == (45, 35, 30.48, 38, 52), spec


def test_a_duration_key_reads_the_glued_m_its_sentences_leave_open_as_minutes() -> None:
    texts = ["on the hotline 45min", "on the hotline 2 hrs", "on the hotline 90 mins", "on the hotline 5m"]
    spec = infer_value(texts, FakeEmbedder(), now=0.0, stop_words=STOP_WORDS)
    assert spec.value_format == "duration" and spec.values == ("PT45M", "PT2H", "PT1H30M", "PT5M"), spec


def test_glued_m_alone_makes_no_quantity_key() -> None:
    # The key's unit is chosen from what its fragments state without doubt: "m" alone decides nothing.
    texts = ["antenna at 38m", "antenna at 52m", "antenna at 30m", "antenna at 41m"]
    spec = infer_value(texts, FakeEmbedder(), now=0.0, stop_words=STOP_WORDS)
    assert spec.unit is None, spec


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("OTDR shows attn 0.9dB/km on span 2", 0.9),
        ("attenuazione 0,72 dB/km on the link", 0.72),
        ("fiber attenuation abt 0.8db/km measured from POP", 0.8),
        ("atten. 1.1 dB per km!!! way too much", 1.1),
        ("attn 0.55dBkm after the splice", 0.55),
        ("measured 0.7 decibel per kilometer on the trunk", 0.7),
        ("loss/km = 1.2 dB, expected 0.25 max", 1.2),  # the per-length in the label
        ("loss per km approx 0.6 dB", 0.6),
        ("Attenuation (dB/km): 0,4", 0.4),  # the unit in the label
        ("avg loss 1.4 dB/mi on the old cable", 0.87),  # per mile converted
        ("span atten 2.1 dB/mile", 1.305),
        ("0.6-0.9 dB/km", 0.9),  # a range: its upper bound
    ],
)
def test_decibels_per_length_are_one_unit(text: str, value: float) -> None:
    assert _read(text)[:1] == [(value, "db_per_km")], find_quantities(text)


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("signal -95dB in the car park", -95.0, "db"),
        ("rx level -80 dBm", -80.0, "dbm"),  # a power level, never dB per metre
        ("rx -70dBm/mW", -70.0, "dbm"),
        ("raise the power by 2 dB", 2.0, "db"),
        ("5 dB km of cable", 5.0, "db"),  # apart from its unit: no per-length
        ("winds 85 km/h", 85.0, "kmh"),
        ("capacity 300 Mbit/s", 300.0, "mbps"),
        ("PV yield 38 kWh", 38.0, "kwh"),
        ("rain 42 mm/hr", 42.0, "mmh"),
        ("cabinet 41 \u00b0C", 41.0, "celsius"),
        ("load 70percent", 70.0, "percent"),
        ("penalty 850 EUR", 850.0, "eur"),
    ],
)
def test_other_units_keep_their_reading(text: str, value: float, unit: str) -> None:
    assert _read(text)[:1] == [(value, unit)], find_quantities(text)


def test_a_key_of_decibels_per_km_is_named_by_what_is_measured_then_the_unit() -> None:
    texts = ["fibre 0.9dB/km", "fibre 0,72 dB/km", "fibre 1.1 dB per km", "fibre 1.4 dB/mi", "fibre 1.2 dB/km"]
    key = induce(texts, FakeEmbedder()).key
    assert key.key_type == "number" and key.constraints.unit == "db_per_km", key
    assert key.key_name == "fibre_attenuation_db_per_km", key.key_name
    assert "Observed values: 0.72 to 1.2." in key.semantic_description, key.semantic_description
    assert parse_constraints(key.semantic_description).unit == "db_per_km"


def test_a_decibels_per_km_key_of_a_patched_template_maps_its_values() -> None:
    texts = ["fibre 0.9dB/km", "fibre 0,72 dB/km", "fibre 1.1 dB per km", "fibre 1.4 dB/mi"]
    key = induce(texts, FakeEmbedder()).key
    template = TemplateRegistry.default().get("fault_diagnosis_v1").with_keys([key])
    result = map_text(template, "the fibre shows 2.1 dB/mile", FakeEmbedder(), now=1_790_000_000.0)
    assert result.payload.get(key.key_name) == 1.305, result.payload


@pytest.mark.slow
def test_sms_corpus_antenna_height_and_fibre_attenuation(minilm: MiniLMEmbedder) -> None:
    """The SMS corpus (a development corpus from round 8): the antenna height is a length in m and the
    attenuation a number in dB per km, each one pure patch; no patch is spurious."""
    path = DATA / "heldout_sms_corpus.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    report = replay(lines, minilm).to_dict()
    result = score(report, [json.loads(line)["label"] for line in lines], path.stem)
    assert not result.spurious and {"cluster:antenna_height", "cluster:fibre_attenuation"} <= set(result.pure)
    keys = {k["key_name"]: k for p in report["patches"] for k in p["new_keys"]}
    height = next(k for name, k in keys.items() if "height" in name)
    assert height["key_name"].endswith("_m") and "Unit: m." in height["semantic_description"], height
    attenuation = next(k for name, k in keys.items() if "atten" in name)
    assert attenuation["key_name"].endswith("_db_per_km"), attenuation
    assert "Unit: db_per_km." in attenuation["semantic_description"], attenuation


@pytest.mark.timeout(60)
def test_a_text_full_of_glued_units_is_read_in_one_pass() -> None:
    # Each glued "m" looks at a bounded window around it, so 100,000 of them are read in one pass.
    assert len(find_quantities("mast 32m; waited 5m; 0.9dB/km; loss/km = 1.2 dB. " * 25_000)) == 100_000


def test_a_length_key_of_a_patched_template_maps_a_glued_m_its_sentence_leaves_open() -> None:
    texts = ["antenna at 45 mtrs", "antenna at 35 m", "antenna at 100ft", "antenna at 18 m"]
    key = induce(texts, FakeEmbedder()).key
    assert key.key_name.endswith("_m"), key.key_name
    template = TemplateRegistry.default().get("coverage_compensation_v1").with_keys([key])
    result = map_text(template, "the antenna is at 38m", FakeEmbedder(), now=1_790_000_000.0)
    assert result.payload.get(key.key_name) == 38, result.payload
