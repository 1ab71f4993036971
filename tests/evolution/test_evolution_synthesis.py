"""Intent induction (names, types, descriptions), conflict detection, security detection."""

from __future__ import annotations

import json

import pytest

from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.synthesis import (
    ExistingKey,
    find_conflict,
    induce_key,
    is_security_relevant,
    meaning_score,
    snake_name,
)
from an_agent.schemas.anchors import example_mappings
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import is_snake_case
from conftest import DATA, FakeEmbedder


def induce(texts: list[str], embedder: FakeEmbedder | MiniLMEmbedder | None = None, **kwargs: object):  # type: ignore[no-untyped-def]
    embedder = embedder or FakeEmbedder()
    return induce_key(texts, embedder.embed(texts), embedder, **kwargs)  # type: ignore[arg-type]


def test_numeric_fragments_make_a_numeric_key_named_with_its_unit() -> None:
    induced = induce(["keep throughput above 20 Mbps", "throughput at least 10 Mbps", "throughput 15 Mbps please"])
    key = induced.key
    assert key.key_type == "integer" and key.key_name.endswith("_mbps") and "throughput" in key.key_name
    assert key.experimental and not key.required and key.default_value is None
    assert "Observed values: 10 to 20 mbps" in key.semantic_description
    assert "'keep throughput above 20 Mbps' -> 20" in key.semantic_description


def test_fractional_values_make_a_number_key() -> None:
    assert induce(["delay 1.5 hours", "delay 2 hours", "delay 0.5 hours"]).key.key_type == "number"


def test_identifier_fragments_make_an_array_key() -> None:
    key = induce(["also check RNC-11", "RNC-12 is involved", "see RNC-13 and RNC-14"]).key
    assert key.key_type == "array" and key.key_name.endswith("_rnc_ids")
    assert "Item format: RNC-<alnum>." in key.semantic_description
    assert key.constraints.item_format == "RNC-<alnum>"
    assert "-> ['RNC-13', 'RNC-14']" in key.semantic_description


def test_time_ranges_make_a_string_key() -> None:
    key = induce(["only between 01:00 and 05:00", "window 02:00-04:00", "between 00:30 and 03:00 only"]).key
    assert key.key_type == "string"
    assert "-> '01:00-05:00'" in key.semantic_description


def test_statements_make_a_boolean_flag_with_real_examples() -> None:
    texts = ["roaming users are affected", "roaming subscribers affected", "inbound roaming users down"]
    induced = induce(texts, max_examples=2)
    assert induced.key.key_type == "boolean" and induced.key.default_value is False
    assert len(induced.examples) == 2 and all(text in texts for text, _ in induced.examples)
    assert [v for _, v in example_mappings(induced.key)] == [True, True]
    assert "from 3 'other' fragments of 1 client." in induced.key.semantic_description


def test_names_are_snake_case_and_avoid_taken_names() -> None:
    assert snake_name("over-temperature warning") == "over_temperature_warning"
    assert snake_name("tonight's window") == "tonight_window"
    assert snake_name("5g cells") == "x_5g_cells"
    taken = frozenset({"roaming", "roaming_2"})
    key = induce(["roaming", "roaming", "roaming"], taken_names=taken).key
    assert key.key_name == "roaming_3" and is_snake_case(key.key_name)


def test_security_terms_are_detected() -> None:
    assert is_security_relevant("router_password", "the admin password")
    assert is_security_relevant("x", "charge the payment card")
    assert not is_security_relevant("roaming", "roaming users affected")


def test_a_name_collision_is_a_conflict() -> None:
    registry = TemplateRegistry.default()
    existing = [ExistingKey(k, "base") for k in registry.get("fault_diagnosis_v1").keys]
    fake = FakeEmbedder()
    texts = ["severity", "severity", "severity"]
    induced = induce(texts, fake)
    conflict = find_conflict(induced, fake.embed(texts), existing, fake, threshold=2.0)
    assert conflict is not None and conflict.reason == "name" and conflict.existing.key.key_name == "severity"


@pytest.mark.slow
def test_paraphrases_of_existing_keys_conflict_and_new_intents_do_not(minilm: MiniLMEmbedder) -> None:
    """The shipped conflict_threshold separates the probe sets from the corpora's new intents."""
    from an_agent.evolution.config import EvolutionConfig

    threshold = EvolutionConfig().conflict_threshold
    registry = TemplateRegistry.default()
    for probe in json.loads((DATA / "conflict_probes.json").read_text())["probes"]:
        texts = probe["texts"]
        existing = [ExistingKey(k, "base") for k in registry.get(probe["schema_id"]).keys]
        induced = induce(texts, minilm)
        conflict = find_conflict(induced, minilm.embed(texts), existing, minilm, threshold)
        assert conflict is not None, probe["key_name"]
        assert conflict.existing.key.key_name == probe["key_name"]
    for corpus in ("dev_other_corpus.jsonl", "field_other_corpus.jsonl"):
        rows = [json.loads(line) for line in (DATA / corpus).read_text().splitlines()]
        for label in {r["label"] for r in rows if r["label"].startswith("cluster:")}:
            texts = [r["payload"]["other"] for r in rows if r["label"] == label]
            schema = rows[[r["label"] for r in rows].index(label)]["schema_id"]
            vectors = minilm.embed(texts)
            scores = [meaning_score(vectors, k, minilm) for k in registry.get(schema).keys if k.key_name != "other"]
            assert max(scores) < threshold, label


@pytest.mark.slow
def test_real_model_names_the_dev_intents_sensibly(minilm: MiniLMEmbedder) -> None:
    rows = [json.loads(line) for line in (DATA / "dev_other_corpus.jsonl").read_text().splitlines()]
    expected_words = {
        "cluster:roaming_partner": {"roaming", "roamers", "partner"},
        "cluster:high_temperature": {"temperature", "thermal", "hot", "heat", "overheating"},
        "cluster:iot_sensitivity": {"iot", "sensors", "meters", "smart", "devices"},
        "cluster:maintenance_window": {"maintenance", "window"},
        "cluster:personal_sms": {"sms", "text", "message"},
        "cluster:rollback_plan": {"rollback", "roll", "back", "fallback", "revert", "kpis", "drop", "automatic"},
    }
    for label, words in expected_words.items():
        texts = [r["payload"]["other"] for r in rows if r["label"] == label]
        key = induce(texts, minilm).key
        assert is_snake_case(key.key_name) and set(key.key_name.split("_")) & words, (label, key.key_name)
        assert key.key_type == "boolean"
        assert sum(f"'{t}' -> true" in key.semantic_description for t in texts) == 3
