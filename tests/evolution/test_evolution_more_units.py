"""Issue 31, round 5: units operators write that had no canonical unit yet; countries as ISO codes.

Latency in milliseconds, bandwidth and frequency in MHz, power in kW, data volume in GB and fuel in
litres: each spelling has one canonical unit, other units of the same quantity are converted, and a key
is named by what its unit measures.
"""

from __future__ import annotations

import json
import re

import pytest
from test_evolution_synthesis import induce

from an_agent.evolution.codes import find_codes
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.replay import replay
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.extract import find_counts, find_quantities
from fake_embedder import FakeEmbedder


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("latency 120 ms on the backhaul", 120.0, "ms"),
        ("RTT: 85ms", 85.0, "ms"),
        ("ping around 300 msec", 300.0, "ms"),
        ("jitter of 12 milliseconds", 12.0, "ms"),
        ("delay went up to 1.2 s", 1.2, "seconds"),  # seconds stay a duration
        ("carrier bandwidth 20 MHz", 20.0, "mhz"),
        ("channel of 100MHz", 100.0, "mhz"),
        ("the 3.5 GHz band", 3500.0, "mhz"),
        ("a 200 kHz carrier", 0.2, "mhz"),
        ("Bandwidth (MHz): 40", 40.0, "mhz"),
        ("site draws 3.2 kW", 3.2, "kw"),
        ("rectifier load 2400 W", 2.4, "kw"),
        ("the radio uses 450 watts", 0.45, "kw"),
        ("cabinet power 5 kilowatts", 5.0, "kw"),
        ("Power draw (kW): 2,5", 2.5, "kw"),
        ("used 35 GB this month", 35.0, "gb"),
        ("only 500 MB left", 0.5, "gb"),
        ("plan of 1 TB", 1000.0, "gb"),
        ("data: 12 gigabytes", 12.0, "gb"),
        ("500mb left on the plan", 0.5, "gb"),  # all lower case: a phone's data, as people write it
        ("a 10 Gb link to the hub", 10000.0, "mbps"),  # a lower-case b is a bit: a rate
        ("line sync at 80 Mb", 80.0, "mbps"),
        ("generator has 200 litres left", 200.0, "litres"),
        ("tank at 150 L", 150.0, "litres"),
        ("refill 80 liters of diesel", 80.0, "litres"),
    ],
)
def test_more_units_have_one_canonical_unit(text: str, value: float, unit: str) -> None:
    found = find_quantities(text)
    assert [(q.value, q.unit) for q in found][:1] == [(value, unit)], found


@pytest.mark.parametrize(
    "text",
    [
        "Ms Lee called twice",  # a title, not milliseconds
        "site W-12 is down",  # no number before the unit
        "MW-0042 link flaps",  # a microwave link's id
        "level L2 support",  # a code, not litres
        "the 5G launch",
        "class A site",
    ],
)
def test_what_is_no_quantity_stays_none(text: str) -> None:
    assert find_quantities(text) == []


def test_a_quantity_is_no_count() -> None:
    assert find_counts("latency 120 ms, 35 GB used, 3 sites") == [(3, 28, 29)]


@pytest.mark.parametrize(
    ("texts", "suffix", "measure"),
    [
        (["latency 120 ms", "latency up to 300 ms", "latency 95ms today", "latency is 150 ms"], "_ms", "latency"),
        (["cabinet 3.2 kW", "cabinet 2400 W at night", "cabinet at 4 kW", "cabinet 3 kilowatts"], "_kw", "power"),
        (["used 35 GB", "used 12 GB so far", "used 800 MB", "used 20 gigabytes"], "_gb", "data"),
        (["fuel 200 litres", "fuel 150 L", "fuel 80 liters", "fuel 120 litres left"], "_litres", "fuel"),
    ],
)
def test_a_key_of_a_new_unit_is_named_by_its_measure(texts: list[str], suffix: str, measure: str) -> None:
    key = induce(texts, FakeEmbedder()).key
    assert key.key_type in ("integer", "number"), key
    assert key.key_name.endswith(suffix) and measure in key.key_name, key.key_name
    assert key.constraints.unit == suffix[1:]


def test_countries_written_as_iso_codes_are_a_set_of_codes_named_country() -> None:
    texts = [
        "Roaming: FR",
        "roaming in DE, no data",
        "customer roaming in FR when it failed",
        "roaming=IT",
        "roaming in IT since Monday",
        "Visited network: ES (Movistar)",
        "roaming in ES",
    ]
    found = find_codes(texts, STOP_WORDS)
    assert found is not None and found.kind == "country"
    assert found.enum == ("DE", "ES", "FR", "IT") and found.values[1] == "DE"
    key = induce(texts, FakeEmbedder()).key
    assert key.key_name == "roaming_country" and key.constraints.enum == ("DE", "ES", "FR", "IT"), key


@pytest.mark.parametrize(
    "texts",
    [
        # Capitals that are words or telecom acronyms, not countries; a unit after a number.
        ["NO SERVICE IN THE AREA", "CALL US BACK", "NR cell down, RU alarm", "SA core ok", "NR and SA again"],
        ["used 35 GB", "used 20 GB", "used 12 GB", "used 8 GB", "used 9 GB"],
    ],
)
def test_words_and_units_in_capitals_are_no_countries(texts: list[str]) -> None:
    found = find_codes(texts, STOP_WORDS)
    assert found is None or found.kind != "country", found


LATENCY = [
    "latency 120 ms on the backhaul",
    "RTT: 85ms towards the core",
    "ping around 300 msec from the site",
    "round trip time 95 milliseconds",
    "latency up to 250 ms at busy hour",
    "latency measured at 140ms",
    "RTT 60 ms, too high for the app",
    "latency 180 ms on the link",
    "backhaul latency 210 msec",
    "latency is 130 ms again",
]
FUEL = [
    "generator has 200 litres left",
    "fuel tank at 150 L",
    "only 80 liters of diesel in the genset",
    "fuel level 120 litres",
    "generator fuel down to 60 l",
    "diesel remaining 90 litres",
    "tank holds 40 litres now",
    "fuel at 170 L after refill",
    "genset fuel 75 liters",
    "fuel 55 litres, order more",
]
VISIT = {  # each line and the moment it names
    "technician visit 15/01/2027 15:00": "2027-01-15T15:00:00Z",
    "site visit planned Jan 16, 2027 3 PM": "2027-01-16T15:00:00Z",
    "visit on 17 January 2027 at 09:30": "2027-01-17T09:30:00Z",
    "engineer visit 18.01.2027 10:00 CET": "2027-01-18T09:00:00Z",
    "next visit: 19 Jan 2027, 2pm": "2027-01-19T14:00:00Z",
    "visit booked for 20/01/2027 08:00": "2027-01-20T08:00:00Z",
    "field visit January 21st 2027 at 11 am": "2027-01-21T11:00:00Z",
    "technician on site 22 Jan 2027 16:00": "2027-01-22T16:00:00Z",
    "visit scheduled 23.01.2027 13:00": "2027-01-23T13:00:00Z",
    "site visit 24 January 2027 at 9am": "2027-01-24T09:00:00Z",
}
ONE_OFFS = [
    "the customer changed his phone number",
    "the NOC coffee machine is broken",
    "a new colleague starts on Monday",
    "the ticket was opened twice by mistake",
    "parking at the site is difficult",
    "the landlord wants to renegotiate the lease",
]


@pytest.mark.slow
def test_new_units_and_date_spellings_make_typed_keys_end_to_end(minilm: MiniLMEmbedder) -> None:
    texts = [*LATENCY, *FUEL, *VISIT, *ONE_OFFS]
    order = sorted(range(len(texts)), key=lambda i: (i * 7) % len(texts))  # interleaved, deterministic
    lines = []
    for n, i in enumerate(order):
        payload = {"fault_type": "unknown", "affected_site_ids": ["SITE-1"], "severity": "minor", "other": texts[i]}
        stamp = f"2027-01-1{4 + n // 20}T{(n % 20):02d}:10:00Z"
        line = {"timestamp": stamp, "client_id": f"c{i % 5}", "schema_id": "fault_diagnosis_v1", "payload": payload}
        lines.append(json.dumps(line))
    report = replay(lines, minilm).to_dict()
    keys = {k["key_name"]: k for p in report["patches"] for k in p["new_keys"]}
    assert len(report["patches"]) == 3, sorted(keys)
    latency = next(k for name, k in keys.items() if name.endswith("_ms"))
    assert "latency" in latency["key_name"] and latency["key_type"] == "integer"
    assert "Unit: ms." in latency["semantic_description"]
    fuel = next(k for name, k in keys.items() if name.endswith("_litres"))
    assert "Unit: litres." in fuel["semantic_description"]
    visit = next(k for k in keys.values() if "Format: date-time." in k["semantic_description"])
    assert "visit" in visit["key_name"], visit["key_name"]
    # The examples of the description are read right, whatever their spelling.
    examples = re.findall(r"'([^']+)' -> '([^']+)'", visit["semantic_description"])
    assert len(examples) >= 3 and all(VISIT[text] == stamp for text, stamp in examples), examples


@pytest.mark.parametrize(
    ("texts", "enum"),
    [
        (
            ["severity S1 declared", "S2 incident on the ring", "S3 for now", "S1 again", "to S3", "S2 watch"],
            ("S1", "S2", "S3"),
        ),
        (
            ["escalated to L2", "L1 could not fix it", "needs L3 support", "L2 is on it", "back to L1", "L3 joined"],
            ("L1", "L2", "L3"),
        ),
        (
            ["in Q1 again", "planned for Q3", "Q2 budget", "Q1 target", "Q4 freeze", "after Q2"],
            ("Q1", "Q2", "Q3", "Q4"),
        ),
    ],
)
def test_letters_that_spell_a_unit_after_a_number_are_a_prefix_before_one(
    texts: list[str], enum: tuple[str, ...]
) -> None:
    # "l" is litres and "s" seconds after a number ("150 l", "2s"); before one they are a code's prefix.
    found = find_codes(texts, STOP_WORDS)
    assert found is not None and found.enum == enum, found
