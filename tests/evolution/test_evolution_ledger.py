"""Issue 31 round 6: a ticket tool's journal header before each note, the notices of formal English
("Kindly note"), codes written apart from their digits ("IP 65"), and the held-out ledger corpus
`heldout_ledger_corpus.jsonl` end to end (tests/evolution/data/README.md, written before the round)."""

from __future__ import annotations

import json

import pytest
from bench.evolution_corpora import score

from an_agent.evolution.boilerplate import content_text, without_journal_header
from an_agent.evolution.carriers import carries_value
from an_agent.evolution.codes import codes_in, find_codes
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.inference import ValueSpec
from an_agent.evolution.replay import replay
from an_agent.evolution.value_words import STOP_WORDS
from conftest import DATA


@pytest.mark.parametrize(
    ("note", "content"),
    [
        ("2027-05-17 11:48 UTC - M.Wojcik (Work notes) volume used so far: 510MB", "volume used so far: 510MB"),
        ("[17/05/2027 18:41] P. Dubois : total unavailability: 2 days 3 h", "total unavailability: 2 days 3 h"),
        ("17.05. 22:38 GH: the infotainment downloaded 3 GB", "the infotainment downloaded 3 GB"),
        ("17/05 22:14 - A.Yilmaz - data used 2.05 GB", "data used 2.05 GB"),
        ("18-May-2027 07:14 AM IST - R.Iyer: the spare left", "the spare left"),
        ("05/17/2027 11:48:22 AM John Smith: restarted the node", "restarted the node"),
        ("[10:43] site back", "site back"),  # a chat's bracketed time
    ],
)
def test_a_journal_header_goes(note: str, content: str) -> None:
    assert without_journal_header(note) == content
    assert content_text(note) == content


@pytest.mark.parametrize(
    "text",
    [
        "14:00 UTC: service restored",  # a moment the note states, not who wrote it when
        "2027-01-15 15:00 UTC - service restored",
        "2027-01-15 15:00 UTC - Service restored",
        "15:00 Team meeting - moved",
        "02:45Z node last seen",
        "16 Jan 2027 10:00 CET: restored",
        "SITE-12 | door open",
    ],
)
def test_a_moment_that_is_no_header_stays(text: str) -> None:
    assert without_journal_header(text) == text


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ("Kindly note BTS was down approx 5 hours", "BTS was down approx 5 hours"),
        ("Kindly be informed user plane latency is 81 ms", "user plane latency is 81 ms"),
        ("Please note that the site is down", "the site is down"),
        ("For your information: DG fuel 5 l/h", "DG fuel 5 l/h"),
        ("Dear customer, the part was shipped today. Best regards, TAC", "the part was shipped today"),
        ("please notice the noise", "please notice the noise"),
    ],
)
def test_a_notice_of_formal_english_is_no_content(text: str, content: str) -> None:
    assert content_text(text) == content


def test_codes_written_apart_from_their_digits_are_the_same_codes() -> None:
    texts = [
        "enclosure is IP 65 as per datasheet",
        "protection class of the junction box: IP-67",
        "the RRU housing is rated IP65",
        "outdoor unit: IP67",
        "the cabinet is ip54 class",
        "the old box is only IP54",
    ]
    found = find_codes(texts, STOP_WORDS)
    assert found is not None and found.enum == ("IP54", "IP65", "IP67"), found
    assert found.values == ("IP65", "IP67", "IP65", "IP67", "IP54", "IP54")
    # An id's dash and a decimal are not a code apart: "CELL-0401", "PM 2.5", "at 5 pm".
    assert find_codes(["CELL-0401 down", "PM 2.5 high", "at 5 pm", "CELL-0402 down"], STOP_WORDS) is None


def test_an_acronyms_codes_in_nearly_every_fragment_are_a_set_named_by_the_acronym() -> None:
    """A typing sample of seven notes names six IP ratings, one of them twice: codes of one prefix in nearly
    every fragment fill the slot (one value named twice is enough), and no word frames them in 40 % of
    the fragments ("cabinet" before two), so the acronym names them."""
    texts = [
        "ENCLOSURE IP CLASS: IP66",
        "the cabinet is ip54 class, not enough for outside",
        "the replacement cabinet must be IP65, the site is next to the sea",
        "enclosure rating on the nameplate: IP55",
        "new battery cabinet is rated IP55",
        "the junction box is IP 67",
        "the RRU housing is rated IP68",
    ]
    found = find_codes(texts, STOP_WORDS)
    assert found is not None and found.enum == ("IP54", "IP55", "IP65", "IP66", "IP67", "IP68"), found
    assert found.frame == "ip code"
    # Codes in five of six notes, one named twice, fill the slot; in four of six, none twice, they do not.
    assert find_codes(["P1 now", "P2 later", "P3 whenever", "P4 never", "P1 again", "the fan is loud"], STOP_WORDS)
    assert find_codes(["P1 now", "P2 later", "P3 whenever", "P4 never", "the fan is loud", "noted"], STOP_WORDS) is None


@pytest.mark.slow
def test_held_out_ledger_corpus(minilm: MiniLMEmbedder) -> None:
    """Written before round 6 and recorded then (2 of 9 intents pure): the journal headers' moments are no
    value, units and dates in their spellings are read, the ship date is a key of its own."""
    path = DATA / "heldout_ledger_corpus.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    report = replay(lines, minilm).to_dict()
    result = score(report, [json.loads(line)["label"] for line in lines], path.stem)
    assert not result.spurious and len(result.pure) >= 7, result
    keys = {k["key_name"]: k for p in report["patches"] for k in p["new_keys"]}
    # No template key absorbed a new concept, and no key evolution made is revised while on trial.
    assert not [k["key_name"] for p in report["patches"] for k in p["modified_keys"]]
    # One patch for the latency's wordings (two before round 6's fold, which joined the second cluster to
    # the first's; since round 9 the lines in seconds, "0,12 s", "0.2 seconds", join its cluster directly:
    # seconds are kindred to its milliseconds).
    latency = [
        p for p in report["patches"] if p["new_keys"] and p["new_keys"][0]["key_name"] == "round_trip_latency_ms"
    ]
    assert len(latency) == 1
    described = {name: k["semantic_description"] for name, k in keys.items()}
    assert "Unit: ms." in described["round_trip_latency_ms"]  # the headers' times made it a date-time key
    assert "Observed values: 48 to 200." in described["round_trip_latency_ms"]  # 0.2 seconds is 200 ms
    assert "Unit: gb." in described["data_volume_used_gb"] and "Unit: kw." in described["power_consumption_kw"]
    assert "Unit: lh." in described["generator_fuel_lh"]
    assert "Format: date-time." in described["shipped_at"]  # deadline is not modified
    assert "'SHIP DATE 16-MAY-2027 11:05 GMT' -> '2027-05-16T11:05:00Z'" in described["shipped_at"]
    assert "Acceptable values: IP54, IP55, IP65, IP66, IP67" in described["ip_code"]
    assert "Acceptable values: DE, FR, NL, PL." in described["depot_country"]  # CZ joined after the patch
    assert "Format: duration." in described["total_downtime_duration"]


def test_a_country_written_by_its_name_is_its_code() -> None:
    """ "the depot in Poland" names PL as "depot PL" does; names that are also first names or words
    ("Jordan", "Georgia", "Chad") are left out, and a sentence's words are no country."""
    texts = [
        "the spare part store for our region is in FR (Lyon)",
        "they have the board only in the depot in Poland",
        "the spare comes from the vendor depot in NL",
        "depot DE has 2 units in stock",
        "depot location: PL (Poznan hub)",
        "the nearest depot is in the Netherlands",
    ]
    found = find_codes(texts, STOP_WORDS)
    assert found is not None and found.kind == "country" and found.enum == ("DE", "FR", "NL", "PL"), found
    assert found.values == ("FR", "PL", "NL", "DE", "PL", "NL")
    assert codes_in("roaming in the United Kingdom and Czech Republic") == {"GB", "CZ"}
    assert codes_in("Jordan from Georgia called Chad") == set()


def test_a_fragment_that_names_a_code_in_another_spelling_carries_the_value() -> None:
    spec = ValueSpec("string", (), enum=("DE", "FR", "PL"), info={"codes": True, "kind": "country"})
    assert carries_value(spec, "they have the board only in the depot in Poland", 0.0)
    assert not carries_value(spec, "the spare board left the warehouse", 0.0)
    ip = ValueSpec("string", (), enum=("IP54", "IP65"), info={"codes": True})
    assert carries_value(ip, "the enclosure is IP 65 as per datasheet", 0.0)
