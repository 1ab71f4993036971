"""Issue 31 round 9: a count of a thing said in number words, periods in years and months, tenures.

Probe lines written for these tests (not taken from the self-care app corpus, whose two intents these
rules fix: README "Issue 31 round 8 (measured only)").
"""

from __future__ import annotations

import re

import pytest
from test_evolution_synthesis import induce

from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.tenure import tenure_phrase
from an_agent.evolution.value_words import counted_noun
from an_agent.schemas.extract import find_counts
from an_agent.schemas.periods import find_periods
from an_agent.schemas.values import parse_constraints


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("the shop runs nine tills on the one line", 9),
        ("only three laptops at home", 3),
        ("a dozen cameras on the site", 12),
        ("twenty-five sensors report in", 25),
        ("forty two handsets in the fleet", 42),
        ("seventeen new routers arrived", 17),  # one word between the number and its noun
        ("four or five tablets", 5),  # the range's upper bound, as for quantities
        ("we run 11 terminals", 11),  # digits as before
        ("number of tills: 6", 6),
        ("three RRUs burnt out", 3),  # an acronym's plural
        ("two SIMs in the router", 2),
        ("[SMS +48601…] we r 4 guys in the team today", 4),  # not the relay's telephone number
    ],
)
def test_a_number_before_a_plural_noun_is_a_count(text: str, value: int) -> None:
    assert [c[0] for c in find_counts(text)] == [value], find_counts(text)


@pytest.mark.parametrize(
    "text",
    [
        "one of the sites",  # no plural noun after it
        "two of them are down",
        "a customer rang",
        "Seven Sisters Road is dark",  # a name
        "three is the limit",
        "been with them 9 years",  # a period, not a count of years
        "the last six months",
        "two hours late",  # a quantity
        "[SMS +48601…] on site now",  # a telephone number cut short by the relay
        "ring me on +353 87 123 4567",
    ],
)
def test_what_is_no_count_in_words_stays_none(text: str) -> None:
    assert find_counts(text) == [], find_counts(text)


@pytest.mark.parametrize(
    ("text", "iso"),
    [
        ("on this plan for 9 years", "P9Y"),
        ("member for seven years", "P7Y"),
        ("for over a decade now", "P10Y"),
        ("two decades on the network", "P20Y"),
        ("signed up 14 months ago", "P14M"),  # said in months, kept in months
        ("with them one and a half years", "P1Y6M"),
        ("nearly a year and a half", "P1Y6M"),
        ("3 years and 4 months", "P3Y4M"),
        ("half a year", "P6M"),
        ("client 5yrs", "P5Y"),
        ("since 30 yrs", "P30Y"),
        ("twenty-one years", "P21Y"),
    ],
)
def test_periods_in_years_and_months_are_iso_durations(text: str, iso: str) -> None:
    assert [p.iso for p in find_periods(text)] == [iso]


@pytest.mark.parametrize(
    "text",
    ["€35 a month", "paying 300 euro a year", "billed per month", "every year it breaks", "a few months", "2027"],
)
def test_a_rates_period_is_no_duration(text: str) -> None:
    assert find_periods(text) == []


def test_the_counted_noun_is_the_family_head_or_the_forms_label() -> None:
    # Narrower nouns (tablets, laptops) are each said by few: the general one most fragments share names it.
    texts = ["six devices here", "only two tablets", "number of devices: 4 (laptops, phones)", "eleven devices"]
    assert counted_noun(texts) == "devices"


@pytest.fixture(scope="module")
def model(minilm: MiniLMEmbedder) -> MiniLMEmbedder:
    return minilm


def test_counts_in_digits_and_words_make_an_integer_count_key(model: MiniLMEmbedder) -> None:
    texts = [
        "our branch has nine cameras recording all night",
        "only four cameras on the premises and the uplink chokes",
        "roughly 15 cameras stream to the cloud",
        "number of cameras: 7",
        "we run twenty cameras at the depot",
        "a dozen cameras upload at once after midnight",
    ]
    key = induce(texts, model).key
    assert key.key_type == "integer", key
    assert key.key_name.endswith("camera_count"), key.key_name
    assert parse_constraints(key.semantic_description).minimum == 0


def test_periods_said_of_a_relation_make_a_tenure_key(model: MiniLMEmbedder) -> None:
    texts = [
        "a member for nine years and the line has been dead since Sunday",
        "been with you for two decades, no dial tone today",
        "member since 5 yrs, the broadband keeps dropping",
        "I joined 14 months ago and nothing works this week",
        "with you one and a half years, the signal is gone",
        "a member for 3 years, no service in the whole estate",
    ]
    key = induce(texts, model).key
    constraints = parse_constraints(key.semantic_description)
    assert key.key_type == "string" and constraints.value_format == "duration", key
    assert key.key_name == "member_tenure", key.key_name
    # The rest of the lines (the outage) is no other phrasing of a tenure; the example is a calendar one.
    assert "also phrased as" not in key.semantic_description
    assert "(P1Y6M = a year and a half)" in key.semantic_description
    assert re.search(r"-> 'P\d+[YM]", key.semantic_description), key.semantic_description


def test_the_tenure_needs_a_relation_around_the_period() -> None:
    assert tenure_phrase(["lived here 30 years", "the mast is 12 years old", "in the village for 8 years"]) is None
    assert tenure_phrase(["customer for 4 years", "with you 6 years", "with us eight years"]) == "customer tenure"
