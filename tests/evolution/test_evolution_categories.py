"""Closed sets recognised by category (evolution/categories.py), with the real model."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from an_agent.evolution.alternatives import separation
from an_agent.evolution.categories import (
    CATEGORY_MIN,
    CATEGORY_SEPARATION,
    category_alternatives,
    shipped_categories,
)
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.inference import infer_value
from an_agent.evolution.synthesis import induce_key
from an_agent.evolution.value_words import STOP_WORDS
from conftest import DATA, POWER

NOW = datetime(2026, 11, 10, 12, 0, tzinfo=UTC).timestamp()

# Each weather kind said once or twice, no shared frame: the lexical closed set finds nothing here.
WEATHER = [
    "heavy storm over the area, expect more outages",
    "strong wind is shaking the antennas on the hill",
    "snow is piling up on the panels",
    "heavy rain is attenuating the microwave links",
    "flooding near the river site",
    "the storm knocked the dish out of alignment",
    "rain is getting into the cabinet",
]
# Wordings of one request (heldout_noise_corpus.jsonl, cluster:incident_report): incident, outage, report.
REPORTS = [
    "send a post-incident report to the enterprise client",
    "the account manager asks for a formal outage report for the client",
    "please prepare an incident summary document for the customer",
    "the customer wants a written incident report once it is fixed",
    "write up the incident for the client's service review",
    "management wants a written post-mortem shared with the customer",
    "the client's contract requires a detailed report after every outage",
    "a root cause report is owed to the customer within five days",
]


def test_the_shipped_categories_name_snake_case_keys() -> None:
    categories = shipped_categories()
    assert {"weather_condition", "power_source", "transport_medium", "customer_tier"} <= {c.key for c in categories}
    assert all(re.fullmatch(r"[a-z]+(_[a-z]+)+", c.key) for c in categories)


@pytest.mark.slow
def test_weather_words_fall_under_weather(minilm: MiniLMEmbedder) -> None:
    found = category_alternatives(WEATHER, minilm, STOP_WORDS)
    assert found is not None and found.category.key == "weather_condition"
    values = [v for v, _ in found.values]
    assert {"storm", "rain"} <= set(values) and len(values) >= 4, values
    assert min(found.margins) >= CATEGORY_MIN
    key = induce_key(WEATHER, minilm.embed(WEATHER), minilm, now=NOW).key
    assert key.key_name == "weather_condition" and set(key.constraints.enum) == set(values), key


@pytest.mark.slow
def test_incident_outage_report_are_wordings_not_a_closed_set(minilm: MiniLMEmbedder) -> None:
    # Pairwise, these wordings are no closer than the weather kinds (0.17-0.40 vs 0.42-0.68): what keeps
    # them out is that no category holds them.
    words = minilm.embed(["incident", "outage", "report"])
    phrases = minilm.embed([c.phrase for c in shipped_categories()])
    assert float((words @ phrases.T).max()) < CATEGORY_MIN
    assert category_alternatives(REPORTS, minilm, STOP_WORDS) is None
    spec = infer_value(REPORTS, minilm, now=NOW, stop_words=STOP_WORDS, vectors=minilm.embed(REPORTS))
    assert spec.key_type == "boolean"


@pytest.mark.slow
def test_battery_mains_generator_stay_the_lexical_closed_set(minilm: MiniLMEmbedder) -> None:
    spec = infer_value(POWER, minilm, now=NOW, stop_words=STOP_WORDS, vectors=minilm.embed(POWER))
    assert spec.enum == ("battery", "mains", "generator") and "key" not in spec.info


@pytest.mark.slow
def test_wordings_that_fall_under_a_category_do_not_separate(minilm: MiniLMEmbedder) -> None:
    """Solar / photovoltaic are power sources to the model, but the solar cluster says one thing: its
    fragments do not group by the word (separation below CATEGORY_SEPARATION), so the key stays a flag.
    The category took solar, photovoltaic and supply until the noun test (`alternatives.not_values`): "the
    panels on the roof supply this site" uses supply as a verb, and two members are no set."""
    rows = [json.loads(line) for line in (DATA / "heldout_noise_corpus.jsonl").read_text().splitlines()]
    texts = [r["payload"]["other"] for r in rows if r["label"] == "cluster:solar_power"]
    vectors = minilm.embed(texts)
    assert category_alternatives(texts, minilm, STOP_WORDS) is None
    taken = [(w, frozenset({w})) for w in ("solar", "photovoltaic", "supply")]
    margin = separation(taken, texts, vectors)
    assert margin is not None and margin < CATEGORY_SEPARATION
    assert infer_value(texts, minilm, now=NOW, stop_words=STOP_WORDS, vectors=vectors).key_type == "boolean"
