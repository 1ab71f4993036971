"""Free-form string keys (evolution/freeform.py): a name that differs in every fragment of a cluster."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator

from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.freeform import find_freeform, fragment_value, freeform_phrase, name_spans, value_head
from an_agent.evolution.inference import infer_value
from an_agent.evolution.synthesis import induce_key
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.jsonschema import template_json_schema
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.validate import validate_payload
from conftest import DATA, FakeEmbedder

NOW = 1_790_000_000.0
PROBES = json.loads((DATA / "freeform_probes.json").read_text())["probes"]


def _value(text: str) -> str | None:
    span = fragment_value(text, STOP_WORDS)
    return span.text if span else None


def test_a_fragment_value_is_its_name_like_span() -> None:
    assert _value("the handset is a Samsung Galaxy S23") == "Samsung Galaxy S23"
    assert _value("customer uses an iPhone 15") == "iPhone 15"
    assert _value("device: Pixel 8 pro") == "Pixel 8 pro"  # a short word after a number belongs to the model
    assert _value("on her OnePlus 11 only") == "OnePlus 11"  # ... a stop word does not
    assert _value("the node runs SR OS 23.10.R1") == "SR OS 23.10.R1"
    assert _value("firmware 21.3.2 on the router") == "21.3.2"
    assert _value("landlord contact Peter de Vries") == "Peter de Vries"
    assert _value("Samsung S23 drops calls") == "Samsung S23"  # the first word, when a model follows it


def test_ids_quantities_dates_and_plain_words_are_no_value() -> None:
    assert _value("Customer says the phone is useless") is None  # a capital that only opens the sentence
    assert _value("links MW-5120 and MW-5121 are down") is None  # identifiers: an array (inference rule 3)
    assert _value("cabinet at 45 degrees") is None  # a quantity
    assert _value("hold until 2026-12-01T06:00Z") is None  # a date-time
    assert _value("hold until Monday 06:00 UTC") is None  # calendar words
    assert [s.text for s in name_spans("the UPS failed, then the NOC called", STOP_WORDS)] == ["UPS", "NOC"]


def test_the_rule_needs_most_fragments_mostly_different_values_and_a_frame() -> None:
    for probe in PROBES:
        found = find_freeform(probe["texts"], STOP_WORDS)
        assert (found is not None) == (probe["key_type"] == "string"), probe["name"]
    # One value in every fragment is no free-form slot (a phrasing habit, or a closed set's matter).
    assert find_freeform([f"send the PDF report {i}" for i in "abcde"], STOP_WORDS) is None
    # One capitalised word per fragment is as often a phrase's start as a name: holidays stay flags.
    holidays = ["offices empty over Easter", "Christmas week, nobody in", "quiet during Ascension", "Pentecost off"]
    assert find_freeform(holidays, STOP_WORDS) is None
    # A minority naming something is not the slot.
    mixed = ["site needs an escort", "escort at the gate", "a Securitas guard escorts", "escort mandatory", "escort"]
    assert find_freeform(mixed, STOP_WORDS) is None


def test_the_key_is_named_by_the_kind_of_its_values() -> None:
    assert value_head(["21.3.2", "SR OS 23.10.R1", "v3.9.7"]) == "version"
    assert value_head(["Maria Lopez", "Mr Jensen", None]) == "name"
    assert value_head(["Galaxy A54", "Xiaomi 13T", "Nokia"]) == "model"
    assert value_head(["INC0012345", "L2600", "B3"]) == "code"
    values = ["Sony Xperia 10 V", "Galaxy A54"]
    assert freeform_phrase(["sony xperia", "handset"], values) == "handset model"
    assert freeform_phrase(["phone model"], values) == "phone model"
    assert freeform_phrase(["sony"], values) is None
    # A noun the values are said of ("the n78 carrier", "the B3 carrier") names them before a better-ranked
    # phrase, when it ends the phrase.
    carriers = ["n78", "B3", "L2600"]
    assert freeform_phrase(["sleep mode", "carrier overnight", "carrier"], carriers, ("carrier",)) == "carrier code"
    found = find_freeform(
        [
            "see ticket INC0012345",
            "same as previous ticket INC0012399",
            "linked to INC0012401",
            "refer to ticket INC0012455",
        ],
        STOP_WORDS,
    )
    # Ticket numbers without a dash are identifiers since issue 31 (`extract.find_ids`: an array key), so no
    # free-form value; a noun they are said of still names codes that are no ids.
    assert found is None
    found = find_freeform(
        ["see ticket R19C10", "same as previous ticket A7X22", "linked to Q4Z9", "refer to ticket B8K71"], STOP_WORDS
    )
    assert found is not None and found.kinds == ("ticket",)


def test_free_form_spec_comes_before_closed_sets_and_flags() -> None:
    texts = PROBES[0]["texts"]
    spec = infer_value(texts, FakeEmbedder(), now=NOW, stop_words=STOP_WORDS)
    assert spec.key_type == "string" and not spec.enum and spec.value_format is None
    assert spec.values[3] == "Sony Xperia 10 V" and spec.info["freeform"]


@pytest.mark.slow
def test_free_form_probes_give_string_keys_with_real_examples_that_project(minilm: MiniLMEmbedder) -> None:
    """freeform_probes.json with the real model: type, a name of the kind, mapping examples of the values,
    a plain string in the JSON Schema projection; the boolean probes stay flags."""
    base = TemplateRegistry.default().get("complaint_ticket_v1")
    for probe in PROBES:
        texts = probe["texts"]
        induced = induce_key(texts, minilm.embed(texts), minilm, now=NOW)
        key = induced.key
        assert key.key_type == probe["key_type"], (probe["name"], key)
        if probe["key_type"] == "boolean":
            continue
        assert set(key.key_name.split("_")) & set(probe["words"]), (probe["name"], key.key_name)
        assert not key.constraints.enum and key.constraints.value_format is None
        assert "as written (free text)" in key.semantic_description
        for text, value in induced.examples:
            assert f"'{text}' -> '{value}'" in key.semantic_description
            assert value in text
        assert induced.spec is not None and induced.core is not None
        core = [texts[i] for i in induced.core.members]  # the spec's values are the core's
        mapped = dict(zip(core, induced.spec.values, strict=True))
        assert any(mapped.get(text) == value for text, value in probe["values"].items()), (probe["name"], mapped)
        template = base.with_keys([key])
        schema = template_json_schema(template)
        Draft202012Validator.check_schema(schema)
        assert schema["properties"][key.key_name]["type"] == ["string", "null"]  # optional: null allowed
        assert not {"enum", "format", "pattern"} & set(schema["properties"][key.key_name])
        for example in schema["examples"]:
            Draft202012Validator(schema).validate(example)
            validate_payload(template, {"schema_id": template.schema_id, "payload": example})
