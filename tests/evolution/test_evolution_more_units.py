"""Issue 31, round 5: units operators write that had no canonical unit yet; countries as ISO codes.

Latency in milliseconds, bandwidth and frequency in MHz, power in kW, data volume in GB and fuel in
litres: each spelling has one canonical unit, other units of the same quantity are converted, and a key
is named by what its unit measures.
"""

from __future__ import annotations

import pytest
from test_evolution_synthesis import induce

from an_agent.evolution.codes import find_codes
from an_agent.evolution.naming import STOP_WORDS
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
