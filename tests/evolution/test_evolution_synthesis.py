"""Intent induction (names, types, descriptions), conflict detection, security detection."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from an_agent.evolution.alternatives import find_alternatives
from an_agent.evolution.cohesion import core_of
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.conflicts import find_conflict, meaning_score
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.phrases import clause_like, main_clause, snake_name
from an_agent.evolution.synthesis import ExistingKey, induce_key, is_security_relevant, refine_key
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.anchors import example_mappings
from an_agent.schemas.jsonschema import template_json_schema
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import KeyDef, is_snake_case
from an_agent.schemas.validate import validate_payload
from an_agent.schemas.values import check_value
from conftest import DATA, FakeEmbedder


def induce(texts: list[str], embedder: FakeEmbedder | MiniLMEmbedder | None = None, **kwargs: object):  # type: ignore[no-untyped-def]
    embedder = embedder or FakeEmbedder()
    return induce_key(texts, embedder.embed(texts), embedder, **kwargs)  # type: ignore[arg-type]


def test_numeric_fragments_make_a_numeric_key_named_with_its_unit() -> None:
    induced = induce(["keep throughput above 20 Mbps", "throughput at least 10 Mbps", "throughput 15 Mbps please"])
    key = induced.key
    assert key.key_type == "integer" and key.key_name.endswith("_mbps") and "throughput" in key.key_name
    assert key.experimental and not key.required and key.default_value is None
    assert "Observed values: 10 to 20." in key.semantic_description
    assert "'keep throughput above 20 Mbps' -> 20" in key.semantic_description
    # The unit and a range wide enough for what was seen (0 to the first of 1, 2, 5 x 10^k at or above
    # twice the largest: 40 -> 50) are stated in the template's phrases, so that validation and the JSON
    # Schema projection read them.
    assert "Unit: mbps." in key.semantic_description and "Range: 0 to 50." in key.semantic_description
    assert key.constraints.unit == "mbps" and (key.constraints.minimum, key.constraints.maximum) == (0, 50)
    assert check_value("integer", key.constraints, 35) is None and check_value("integer", key.constraints, 500)


def test_fractional_values_make_a_number_key() -> None:
    key = induce(["gain 1.5 dB", "gain 2 dB", "gain 0.5 dB please"]).key
    assert key.key_type == "number" and key.constraints.unit == "db"


def test_time_quantities_make_a_duration_key() -> None:
    key = induce(["delay 1.5 hours", "delay 2 hours", "delay 30 minutes", "delay it for a while"]).key
    assert key.key_type == "string" and key.key_name.endswith("_duration")
    assert key.constraints.value_format == "duration" and "Format: duration." in key.semantic_description
    assert "'delay 1.5 hours' -> 'PT1H30M'" in key.semantic_description or "-> 'PT1H30M'" in key.semantic_description
    assert check_value("string", key.constraints, "PT45M") is None
    assert check_value("string", key.constraints, "45 minutes") is not None


def test_dates_make_a_date_time_key_named_for_a_deadline() -> None:
    texts = ["hold it until 2026-10-07 06:00 UTC", "wait until 2026-10-08T22:00Z", "hold until tomorrow at 08:00"]
    key = induce(texts, now=1_790_000_000.0).key
    assert key.key_type == "string" and key.constraints.value_format == "date-time"
    assert key.key_name.endswith("_until")
    assert "-> '2026-10-07T06:00:00Z'" in key.semantic_description
    assert check_value("string", key.constraints, "2026-10-09T01:00:00Z") is None


@pytest.mark.slow
def test_words_that_fill_one_slot_make_a_closed_set(minilm: MiniLMEmbedder) -> None:
    texts = [
        "the site runs on battery now",
        "site switched to generator",
        "mains power is back at the site",
        "still on battery at the hub",
        "generator is feeding the site",
        "running on the generator since noon",
        "mains supply restored",
        "battery only since the storm",
        "the site is on mains again",
    ]
    values = find_alternatives(texts, minilm, STOP_WORDS)
    assert sorted(v for v, _ in values) == ["battery", "generator", "mains"]
    key = induce(texts, minilm).key
    assert sorted(key.constraints.enum) == ["battery", "generator", "mains"]
    assert key.key_name == "power_source"  # named for the category of the values, not a frequent word
    assert "-> 'battery'" in key.semantic_description and "-> 'generator'" in key.semantic_description
    # Different wordings of one idea are not a closed set: they never fill the same slot.
    assert (
        find_alternatives(
            [
                "the heat wave is here",
                "the radio units run hot",
                "cabinet temperature high",
                "heat in the shelter",
                "hot cabinet again",
                "temperature alarm raised",
            ],
            minilm,
            STOP_WORDS,
        )
        == []
    )


def test_a_new_value_of_an_idea_extends_the_keys_allowed_values() -> None:
    cause = KeyDef.build(
        "fault_cause",
        "string",
        "Why the fault happened. Acceptable values: fibre_cut, power_loss. "
        "Example mapping: 'the fibre was cut' -> 'fibre_cut'.",
    )
    texts = ["lightning strike on the mast", "the mast was hit by lightning", "lightning damaged the radio"]
    induced = induce(texts)
    refined = refine_key(cause, induced)
    assert refined.key_type == "string" and refined.constraints.enum[:2] == ("fibre_cut", "power_loss")
    new = refined.constraints.enum[2:]
    assert len(new) == 1 and "lightning" in new[0]
    assert refined.semantic_description.startswith("Why the fault happened. Acceptable values: fibre_cut, power_loss, ")
    assert check_value("string", refined.constraints, new[0]) is None
    assert f"'lightning strike on the mast' -> '{new[0]}'" in refined.semantic_description
    # The same cluster against a key without allowed values, or one it names, widens the description only.
    free = KeyDef.build("suspected_root_cause", "string", "Free-text hypothesis of the root cause.")
    assert refine_key(free, induced).constraints.enum == ()
    assert "Also covers requests phrased like" in refine_key(free, induced).semantic_description
    assert refine_key(cause, induced, same_name=True).constraints.enum == ("fibre_cut", "power_loss")


def test_outliers_neither_type_nor_exemplify_the_key() -> None:
    texts = [
        "keep throughput above 20 Mbps",
        "throughput at least 10 Mbps",
        "throughput 15 Mbps please",
        "throughput of 12 Mbps minimum",
        "no less than 18 Mbps throughput",
        "the mast was repainted",
    ]
    vectors = FakeEmbedder().embed(texts)
    core = core_of(vectors)
    assert 5 in core.outliers and 5 not in core.members
    induced = induce(texts)
    assert all(text != "the mast was repainted" for text, _ in induced.examples)


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
    # The root cause of a fault is not root access.
    assert not is_security_relevant("suspected_root_cause", "Free-text hypothesis of the root cause")
    assert is_security_relevant("root_shell", "root access to the node")


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
        "cluster:roaming_partner": {"roaming", "roamers", "partner", "inbound"},
        "cluster:high_temperature": {"temperature", "thermal", "hot", "heat", "overheating"},
        "cluster:iot_sensitivity": {"iot", "sensors", "meters", "smart", "devices"},
        "cluster:maintenance_window": {"maintenance", "window"},
        "cluster:personal_sms": {"sms", "text", "message"},
        "cluster:rollback_plan": {"rollback", "roll", "back", "fallback", "revert", "kpis", "drop", "automatic"},
    }
    for label, words in expected_words.items():
        texts = [r["payload"]["other"] for r in rows if r["label"] == label]
        key = induce(texts, minilm).key
        assert is_snake_case(key.key_name) and len(key.key_name.split("_")) >= 2, (label, key.key_name)
        names = set(key.key_name.split("_")) | set(key.constraints.enum)
        assert names & words, (label, key.key_name, key.constraints.enum)
        if key.key_type == "boolean":
            assert sum(f"'{t}' -> true" in key.semantic_description for t in texts) == 3
        else:
            assert key.key_type == "string" and len(key.constraints.enum) >= 3
            assert sum(f"'{t}' -> '" in key.semantic_description for t in texts) == 3


@pytest.mark.slow
def test_refinement_extends_the_right_key_with_the_real_model(minilm: MiniLMEmbedder) -> None:
    """A new kind of fault extends fault_type; a suspected cause refines suspected_root_cause; a new idea adds a key."""
    registry = TemplateRegistry.default()
    probes = json.loads((DATA / "refinement_probes.json").read_text())["probes"]
    for probe in probes:
        template = registry.get(probe["schema_id"])
        vectors = minilm.embed(probe["texts"])
        induced = induce(probe["texts"], minilm)
        existing = [ExistingKey(k, "base") for k in template.keys]
        threshold = EvolutionConfig().conflict_threshold
        conflict = find_conflict(induced, vectors, existing, minilm, threshold, probe["texts"])
        if probe["expect"] is None:
            assert conflict is None, (probe["name"], conflict)
            continue
        assert conflict is not None and conflict.existing.key.key_name == probe["expect"], (probe["name"], conflict)
        target = conflict.existing.key
        refined = refine_key(target, induced, value=conflict.value)
        assert refined.key_name == target.key_name and refined.key_type == target.key_type
        if "value" in probe:  # a new value of the idea: it validates, with real examples
            assert refined.constraints.enum == (*target.constraints.enum, probe["value"])
            assert check_value(refined.key_type, refined.constraints, probe["value"]) is None
            assert f"-> '{probe['value']}'" in refined.semantic_description
        else:  # free text: the description covers the new phrasings
            assert refined.constraints.enum == target.constraints.enum
            assert "Also covers requests phrased like" in refined.semantic_description


@pytest.mark.slow
def test_value_carrying_fragments_give_typed_well_named_keys_that_project(minilm: MiniLMEmbedder) -> None:
    """Realistic value-carrying probes: type, constraints, name; the JSON Schema of the patched template
    meta-validates and its examples validate against it and against our validator."""
    base = TemplateRegistry.default().get("energy_saving_adjust_v1")
    for probe in json.loads((DATA / "typed_probes.json").read_text())["probes"]:
        key = induce(probe["texts"], minilm, now=1_790_000_000.0).key
        assert key.key_type == probe["key_type"], (probe["name"], key)
        c = key.constraints
        if "enum" in probe:
            assert sorted(c.enum) == probe["enum"], (probe["name"], c)
            assert set(key.key_name.split("_")) & set(probe["words"]), (probe["name"], key.key_name)
        if "format" in probe:
            assert c.value_format == probe["format"], (probe["name"], c)
        if "unit" in probe:
            assert c.unit == probe["unit"] and c.minimum is not None and c.maximum is not None
        if "suffix" in probe:
            assert key.key_name.endswith(probe["suffix"]), (probe["name"], key.key_name)
        assert is_snake_case(key.key_name) and 2 <= len(key.key_name.split("_")) <= 4, key.key_name
        template = base.with_keys([key])
        schema = template_json_schema(template)
        Draft202012Validator.check_schema(schema)
        prop = schema["properties"][key.key_name]
        if c.value_format == "duration":
            assert prop["format"] == "duration" and "pattern" in prop
        if c.unit is not None:
            assert prop["x-unit"] == c.unit
        validator = Draft202012Validator(schema)
        for example in schema["examples"]:
            validator.validate(example)
            validate_payload(template, {"schema_id": template.schema_id, "payload": example})


def test_names_come_from_the_request_not_its_condition() -> None:
    assert main_clause("restore full capacity if throughput falls") == "restore full capacity "
    assert main_clause("if traffic rises, roll back at once").strip() == "roll back at once"
    assert main_clause("text me when it is diagnosed") == "text me "
    assert main_clause("keep it for the scheduled maintenance window") == "keep it for the scheduled maintenance window"
    assert clause_like("sensors rely") and clause_like("visitors roaming") and clause_like("throughput falls")
    assert not clause_like("roaming users") and not clause_like("call drop") and not clause_like("smart meters")
