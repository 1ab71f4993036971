"""Issue 31, round 7: values as sheets and forms write them (money, lengths, counts, MIMO codes).

Amounts with a currency before or after them and numbers in groups of three the European and the
English way; a number said in words is a word apart from its unit ("AC" is no "a °C"); keys named by
what is measured, not by the unit.
"""

from __future__ import annotations

import pytest
from test_evolution_synthesis import induce

from an_agent.schemas.extract import find_counts, find_quantities
from fake_embedder import FakeEmbedder


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("EUR 1.200,00", 1200.0, "eur"),
        ("1 200 \u20ac", 1200.0, "eur"),
        ("1\u00a0200 \u20ac", 1200.0, "eur"),  # a no-break space between the groups
        ("3.100 \u20ac", 3100.0, "eur"),
        ("975,50;EUR", 975.5, "eur"),
        ("USD 1,150.00", 1150.0, "usd"),
        ("we owe them $4,200", 4200.0, "usd"),
        ("around 3 000 euros", 3000.0, "eur"),
        ("\u20ac850", 850.0, "eur"),
        ("GBP 300", 300.0, "gbp"),
        ("\u00a3300", 300.0, "gbp"),
        ("1.5 EUR", 1.5, "eur"),  # one digit after the dot: a decimal
        ("Coffee machine | 2,50 EUR", 2.5, "eur"),
        ("Penalty owed ..........: EUR 525", 525.0, "eur"),
        ("Penalty (EUR): 1.200,00", 1200.0, "eur"),
        ("P\u00e9nalit\u00e9 SLA (\u20ac)\t1 200", 1200.0, "eur"),  # the currency in the label, a tab, the amount
        ("penalty = 850 EUR; clause = 4.2", 850.0, "eur"),
        ("fine of 2.450,50 \u20ac", 2450.5, "eur"),
        ("-1.200,00 EUR", -1200.0, "eur"),
    ],
)
def test_money_amounts_have_their_currency_as_unit(text: str, value: float, unit: str) -> None:
    found = find_quantities(text)
    assert [(q.value, q.unit) for q in found][:1] == [(value, unit)], found


@pytest.mark.parametrize(
    "text",
    [
        "clause 4.2 of the contract",
        "the price list, tab 2",
        "$ sign in the password",  # no amount after the symbol
        "EURO-2044 ticket",  # an id
        "EUR1200X",  # glued to a word
    ],
)
def test_what_is_no_amount_stays_none(text: str) -> None:
    assert [q for q in find_quantities(text) if q.unit in ("eur", "usd", "gbp")] == []


@pytest.mark.parametrize(
    ("text", "value", "unit"),
    [
        ("AC setpoint (\u00b0C) | 27", 27.0, "celsius"),
        ("Klima-Sollwert / AC set point ........: 26,5 \u00b0C", 26.5, "celsius"),
        ("an hour", 1.0, "hours"),  # a word number apart from its unit is still read
        ("a 1,150.5 km run", 1150.5, "km"),
        ("12.6 km from CO", 12.6, "km"),
        ("between 20 and 30 km/h", 30.0, "kmh"),
    ],
)
def test_a_number_in_words_glued_to_a_unit_letter_is_no_quantity(text: str, value: float, unit: str) -> None:
    found = find_quantities(text)
    assert [(q.value, q.unit) for q in found][:1] == [(value, unit)], found


def test_an_amount_is_no_count() -> None:
    assert find_counts("penalty EUR 1.200,00 for 3 sites") == [(3, 25, 26)]


def test_a_money_key_is_named_by_what_is_paid_and_takes_the_most_stated_currency() -> None:
    texts = [
        "SLA penalty: EUR 1.200,00",
        "SLA penalty 3.100 \u20ac",
        "SLA penalty of 3 000 euros",
        "SLA penalty | USD 1,150.00",
        "SLA penalty: \u20ac850",
    ]
    key = induce(texts, FakeEmbedder()).key
    assert key.key_type == "number" and key.constraints.unit == "eur", key
    assert key.key_name == "sla_penalty_eur", key.key_name
    # Currencies are not converted: the dollar amount has no value in the euro key.
    assert "'SLA penalty | USD 1,150.00' ->" not in key.semantic_description
    assert "Observed values: 850 to 3100." in key.semantic_description, key.semantic_description
