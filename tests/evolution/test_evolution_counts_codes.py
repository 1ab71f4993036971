"""Issue 31 round 2: codes written after a frame word ("Tier-2", "Cat M1", "band n78"), counts as people
write them ("~1.2k", "2 400", "3,500"), a quantity stated more often than a moment, wind and temperature
units (m/s, mi/h, F). Probe lines written for these tests (not taken from the held-out corpora).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from an_agent.clock import ManualClock
from an_agent.evolution.boilerplate import content_text
from an_agent.evolution.codes import find_codes
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.engine import EvolutionEngine
from an_agent.evolution.inference import infer_value
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.embedding import Vectors
from an_agent.schemas.extract import find_counts, find_quantities
from an_agent.schemas.values import parse_constraints
from an_agent.store.evolution import EvolutionStore
from conftest import FakeEmbedder, patches_by_label

NOW = datetime(2027, 5, 10, 12, 0, tzinfo=UTC).timestamp()

TIERS = [
    "support level: tier 1",
    "moved to Tier-2 this morning",
    "Tier3 owns it now",
    "second line (tier 2) is on it",
    "stays with tier 1",
    "vendor escalation, Tier-3",
]
CATEGORIES = [
    "the meter modem is Cat M1",
    "a Cat-4 router in the bus",
    "Cat 1 bis module, old firmware",
    "UE category: Cat 4",
    "tracker on Cat-M1",
    "cat 1 device in the kiosk",
]
BANDS = [
    "n78 layer only, band n78 is the one",
    "band: B7 is degraded",
    "on band n78 since noon",
    "band B7 again",
    "the 2600 band, B7",
    "band 28 is fine, band n1 is not",
]


def test_codes_after_a_frame_word_are_a_closed_set() -> None:
    tiers = find_codes(TIERS, STOP_WORDS)
    assert tiers is not None and tiers.enum == ("1", "2", "3") and tiers.frame == "tier"
    assert tiers.values == ("1", "2", "3", "2", "1", "3")
    categories = find_codes(CATEGORIES, STOP_WORDS)
    assert categories is not None and categories.enum == ("1", "M1", "4")
    assert categories.values == ("M1", "4", "1", "4", "M1", "1")  # "Cat-4", "cat 1": one value per spelling
    bands = find_codes(BANDS, STOP_WORDS)
    # Each value as most write it (n78, B7); the first code of the family each fragment names.
    assert bands is not None and set(bands.enum) == {"n78", "B7", "28"}
    assert bands.values[:4] == ("n78", "B7", "n78", "B7")


def test_numbers_after_a_word_that_are_no_codes() -> None:
    # Quantities, numbers written in groups, clock times and decimals after a word are no codes.
    assert find_codes(["band 20 MHz wide", "band 10 MHz", "band 5 MHz", "band 20 MHz"], STOP_WORDS) is None
    assert find_codes(["users 2 400", "users 1 200", "users 3 100", "users 2 400"], STOP_WORDS) is None
    assert find_codes(["window 01:00", "window 02:00", "window 03:00", "window 01:00"], STOP_WORDS) is None
    assert find_codes(["version 2.4", "version 3.1", "version 2.4", "version 5.0"], STOP_WORDS) is None
    # A code of its own shape keeps its family: "priority P1" is P<n>, not the frame "priority".
    prios = find_codes(["priority P1", "priority P2", "prio P3", "priority P1", "prio P2"], STOP_WORDS)
    assert prios is not None and prios.enum == ("P1", "P2", "P3")


def test_codes_after_a_frame_word_make_an_enumeration_key() -> None:
    spec = infer_value(TIERS, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS)
    assert spec.key_type == "string" and parse_constraints(" ".join(spec.phrases)).enum == ("1", "2", "3")


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        ("~1.2k users impacted", [1200]),
        ("users affected: 2 400", [2400]),
        ("about 3,500 subscribers lost service", [3500]),
        ("| impacted users | 4 100 |", [4100]),
        ("nb of impacted users ~ 900", [900]),
        ("roughly 15k customers", [15000]),
        # No count: a decimal comma with a unit, a clock time, a date, an id, a version, a quantity.
        ("peak was 1,5 Gbps", []),
        ("ETA 14:30", []),
        ("since 2027-03-04", []),
        ("see CELL-0401", []),
        ("firmware 21.3.2", []),
        ("wind 25 m/s", []),
    ],
)
def test_counts_as_people_write_them(text: str, counts: list[int]) -> None:
    assert [c[0] for c in find_counts(text)] == counts


def test_a_count_is_an_integer_key() -> None:
    texts = [
        "around 300 subscribers lost service",
        "users affected: 1 250",
        "~2k users impacted",
        "impacted users 480",
        "estimate 5,100 customers down",
        "many users complain",
    ]
    spec = infer_value(texts, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS)
    assert spec.key_type == "integer" and spec.values == (300, 1250, 2000, 480, 5100, None)
    assert spec.phrases == ("Range: 0 to 20000.",) and spec.unit is None
    # Bare numbers in fewer than COUNT_SHARE of the fragments are no count: the cluster is a flag.
    flags = ["users complain again", "users are angry", "users call the desk", "about 300 users", "users wait"]
    assert infer_value(flags, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS).key_type == "boolean"


def test_a_quantity_stated_more_often_than_a_moment_is_the_value() -> None:
    texts = [
        "the meter gave 38 kWh yesterday",
        "27 kWh today, cloudy",
        "yield 0.04 MWh",
        "panels produced 41 kWh yesterday",
        "31 kWh",
    ]
    spec = infer_value(texts, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS)
    assert spec.key_type == "integer" and spec.unit == "kwh" and spec.values == (38, 27, 40, 41, 31)
    # Moments stated as often as the quantity stay the value: "back at 14:00 after 30 minutes" is a moment.
    moments = ["back up at 14:00", "restored 09:30 UTC", "up again 11:15", "recovered at 16:45, 20 kWh lost"]
    assert infer_value(moments, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS).value_format == "date-time"


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("gusts of 20 m/s on the hill", 72.0, "kmh"),
        ("wind 40 mi/h", 64.374, "kmh"),
        ("cabinet at 95F", 35.0, "celsius"),
        ("rack reads 86 F", 30.0, "celsius"),
    ],
)
def test_wind_and_fahrenheit_spellings(text: str, value: float, unit: str) -> None:
    assert [(q.value, q.unit) for q in find_quantities(text)][:1] == [(value, unit)]


def test_a_lower_case_f_after_a_number_is_no_fahrenheit() -> None:
    assert find_quantities("a 5 f cable") == []


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("Dear team, the cabinet door is broken. Kind regards, Anna", "the cabinet door is broken"),
        ("Hello all! generator fuel is low. Thanks", "generator fuel is low"),
        ("Good morning colleagues: the mast needs paint. BR Jan Novak", "the mast needs paint"),
        ("@field pls check the fan", "check the fan"),
        ("fyi: the lift is out of order", "the lift is out of order"),
        # Nothing to strip, or nothing left: the text as it is (its full stop too).
        ("Measured downlink: 700 kbit/s.", "Measured downlink: 700 kbit/s."),
        ("thanks to the storm the site is down", "thanks to the storm the site is down"),
        ("the br router is down", "the br router is down"),
        ("thx all", "thx all"),
        ("Hello", "Hello"),
    ],
)
def test_fragments_are_compared_without_greetings_and_sign_offs(text: str, content: str) -> None:
    assert content_text(text) == content


def test_the_pool_embeds_the_content_and_keeps_the_text(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    engine = EvolutionEngine(EvolutionStore(tmp_path / "evo.db"), embedder, clock=ManualClock(1_800_000_000.0))
    try:
        text = "Dear all, the cabinet door is broken. Kind regards, Anna"
        (cluster_id,) = engine.ingest([("client-1", "fault_diagnosis_v1", text)])
        assert embedder.seen == ["the cabinet door is broken"]
        assert [f.text for f in engine.store.fragments(cluster_id)] == [text]  # stored as written
    finally:
        engine.close()


class RecordingEmbedder(FakeEmbedder):
    """The test suite's deterministic embedder, recording what it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.seen.extend(texts)
        return super().embed(texts)


@pytest.mark.slow
def test_held_out_chat_corpus_counts_codes_units_and_moments(minilm: MiniLMEmbedder) -> None:
    """heldout_chat_corpus.jsonl (tests/evolution/data/README.md): one patch per intent, none spurious, the
    kinds this round reached (docs/evolution-dev-corpus.md has the table)."""
    got = patches_by_label("heldout_chat_corpus.jsonl", minilm)
    keys = {lab: patch["new_keys"] + patch["modified_keys"] for lab, patch in got.items()}
    assert all(len(k) == 1 for k in keys.values())
    key = {lab: k[0] for lab, k in keys.items()}

    def constraints(label: str) -> Any:
        return parse_constraints(key[label]["semantic_description"])

    users = key["cluster:affected_users"]
    assert users["key_type"] == "integer" and users["key_name"] == "impacted_user_count"
    assert set(constraints("cluster:escalation_tier").enum) == {"1", "2", "3"}
    assert set(constraints("cluster:device_category").enum) == {"1", "M1", "4", "6"}
    assert {"n78", "n28", "B20", "B3"} <= set(constraints("cluster:frequency_band").enum)
    solar = key["cluster:solar_yield"]
    assert solar["key_name"].endswith("_kwh") and constraints("cluster:solar_yield").unit == "kwh"
    assert constraints("cluster:wind_speed").unit == "kmh" and constraints("cluster:peak_traffic").unit == "mbps"
    assert constraints("cluster:battery_temperature").unit == "celsius"
    # Three moments, each a key of its own: never a modification of occurred_at or deadline.
    for label, name in [
        ("cluster:last_seen", "last_seen_at"),
        ("cluster:change_window_open", "window_opens_at"),
        ("cluster:technician_eta", "eta_time"),
    ]:
        assert not got[label]["modified_keys"] and key[label]["key_name"] == name
        assert constraints(label).value_format == "date-time"
