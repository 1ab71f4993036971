"""Issue 31 round 9: money said per a period ("£12.50 a month", "USD 300 per year", "8 euro weekly") is
one unit per currency, per month (a year and a week converted), never its currency alone; a key of one is
named by what is paid (monthly_subscription_gbp) and maps its values back. Probe lines written for these
tests (not taken from the corpora)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from test_evolution_synthesis import induce

from an_agent.evolution.carriers import carried_core
from an_agent.evolution.cohesion import Core
from an_agent.evolution.inference import ValueSpec, infer_value
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.extract import find_counts, find_quantities
from an_agent.schemas.mapping import key_unit, map_text
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import KeyDef
from fake_embedder import FakeEmbedder

NOW = 1_790_000_000.0


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("the phone contract is £12.50 a month", [(12.5, "gbp_per_month")]),
        ("USD 300 per year for the router rental", [(25.0, "usd_per_month")]),
        ("we were quoted 8 euro weekly for the hotspot", [(34.67, "eur_per_month")]),
        ("tv add-on 15,50€/mo", [(15.5, "eur_per_month")]),
        ("$19.99/month unlimited", [(19.99, "usd_per_month")]),
        ("line rental 18 GBP pm", [(18.0, "gbp_per_month")]),
        ("1.200 EUR per annum, the business tariff", [(100.0, "eur_per_month")]),
        ("20e per month for the sim only", [(20.0, "eur_per_month")]),
        ("our yearly subscription was £240", [(20.0, "gbp_per_month")]),
        ("the monthly bill came to $64 this time", [(64.0, "usd_per_month")]),
        ("EUR per month: 30", [(30.0, "eur_per_month")]),
        # Said once, or per no period: the currency alone, as before.
        ("the engineer charged €90 for the visit", [(90.0, "eur")]),
        ("refund of 40 euro for this month please", [(40.0, "eur")]),
        ("I paid 300 euro a year ago for it", [(300.0, "eur")]),
        ("monthly fee €20, setup fee €50", [(20.0, "eur_per_month"), (50.0, "eur")]),
        # "e" is a euro only with a period after it: "Cat 5e", "the 5e floor" are no money.
        ("Cat 5e cable to the router", []),
        ("the 12e arrondissement shop", []),
    ],
)
def test_money_per_a_period_is_one_unit_per_month(text: str, read: list[tuple[float, str]]) -> None:
    assert [(q.value, q.unit) for q in find_quantities(text)] == read


def test_money_per_a_period_is_no_count() -> None:
    assert find_counts("we pay 49 dollars a month") == []


def test_a_key_of_money_per_month_is_named_by_what_is_paid_and_maps_its_values() -> None:
    texts = [
        "subscription is £12.50 a month and it never works",
        "paying £18 per month for the subscription",
        "£144 a year subscription, useless this week",
        "my subscription: 15 GBP monthly",
        "the subscription costs £20/month",
    ]
    spec = infer_value(texts, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS)
    assert spec.key_type == "number" and spec.unit == "gbp_per_month"
    assert spec.values == (12.5, 18.0, 12.0, 15.0, 20.0)
    key = induce(texts, FakeEmbedder()).key
    assert key.key_name == "monthly_subscription_gbp", key.key_name
    assert key.constraints.unit == "gbp_per_month" and key_unit(key) == "gbp_per_month"
    template = TemplateRegistry.default().get("trouble_ticket_v1").with_keys([key])
    result = map_text(template, "the subscription is £240 a year", FakeEmbedder(), now=NOW)
    assert result.payload.get(key.key_name) == 20.0, result.payload


def test_a_key_of_money_per_month_without_a_cost_word_is_a_fee() -> None:
    texts = ["we pay 30 euro a month", "i pay 25e a month", "paying EUR 40 per month", "55 euro monthly, come on"]
    assert induce(texts, FakeEmbedder()).key.key_name == "monthly_fee_eur"


def test_a_key_named_monthly_in_a_currency_holds_money_per_month() -> None:
    def key(name: str) -> KeyDef:
        return KeyDef.build(name, "number", "x", required=False, default_value=None)

    assert key_unit(key("monthly_fee_eur")) == "eur_per_month"
    assert key_unit(key("rent_usd_per_month")) == "usd_per_month"
    assert key_unit(key("sla_penalty_eur")) == "eur"  # said once


def test_an_outlier_stating_money_per_the_key_s_period_stays_with_the_key() -> None:
    texts = ["pay 30 euro a month", "35 euro per month", "€40 a month", "€45/month", "600 euro a year, pro rata pls"]
    vectors = FakeEmbedder().embed(texts)
    core = Core((0, 1, 2, 3), (4,), (), 1.0, 5)

    def infer(of: list[str]) -> Callable[[Core], ValueSpec]:
        return lambda part: infer_value([of[i] for i in part.members], FakeEmbedder(), now=NOW, stop_words=STOP_WORDS)

    kept, spec = carried_core(core, texts, vectors, infer(texts), NOW)
    assert kept.members == (0, 1, 2, 3, 4) and spec.values[-1] == 50.0
    # A simple unit is no such evidence: an outlier stating GB stays out.
    volumes = ["used 3 GB", "12 GB used", "data 7 GB", "5 GB so far", "the 2 GB video call app"]
    out, _ = carried_core(core, volumes, FakeEmbedder().embed(volumes), infer(volumes), NOW)
    assert out.members == (0, 1, 2, 3)
