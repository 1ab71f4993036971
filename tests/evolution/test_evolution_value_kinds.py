"""Issue 31 round 8: a cluster restates an existing key only when the key can hold the kind of value the
cluster states (`an_agent.evolution.value_kinds.holds`): a count of damaged radio units is no new value of
``fault_type``, a repair's duration no ``deadline``."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.inference import ValueSpec
from an_agent.evolution.replay import replay
from an_agent.evolution.value_kinds import holds
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import KeyDef
from conftest import DATA

REGISTRY = TemplateRegistry.default()


def _key(schema_id: str, name: str) -> KeyDef:
    key = REGISTRY.get(schema_id).key(name)
    assert key is not None
    return key


FAULT_TYPE = _key("fault_diagnosis_v1", "fault_type")
DEADLINE = _key("trouble_ticket_v1", "deadline")
ACTIONS = _key("trouble_ticket_v1", "recommended_actions")
VEHICLES = _key("complaint_ticket_v1", "affected_vehicle_count")
MINUTES = _key("energy_saving_adjust_v1", "duration_minutes")
CAUSE = _key("fault_diagnosis_v1", "suspected_root_cause")
TILT = _key("coverage_compensation_v1", "antenna_tilt_delta_deg")

COUNT = ValueSpec("integer", (3, 4))
QUANTITY = ValueSpec("number", (1.5,), unit="db")
MOMENT = ValueSpec("string", (), value_format="date-time")
DURATION = ValueSpec("string", ("PT2H",), value_format="duration")
CODES = ValueSpec("string", ("P1", "P2"), enum=("P1", "P2"), info={"codes": True})
WORDS = ValueSpec("string", ("rodents",), enum=("rodents", "vandalism"))
IDS = ValueSpec("array", (), id_prefix="INC")
FLAG = ValueSpec("boolean", ())
FREE = ValueSpec("string", ("Sao Mai",), info={"freeform": True})


@pytest.mark.parametrize(
    ("key", "spec", "held"),
    [
        (VEHICLES, COUNT, True),  # a count restates a count
        (TILT, QUANTITY, True),
        (FAULT_TYPE, COUNT, False),  # ... never a value of a closed set of words
        (ACTIONS, COUNT, False),
        (DEADLINE, MOMENT, True),
        (DEADLINE, DURATION, False),  # how long is no moment
        (MINUTES, DURATION, True),  # a number of minutes holds a duration
        (VEHICLES, MOMENT, False),
        (FAULT_TYPE, CODES, True),  # codes may be new values of a closed set
        (ACTIONS, CODES, False),  # ... not sentences of a list
        (FAULT_TYPE, IDS, False),
        (FAULT_TYPE, WORDS, True),
        (CAUSE, WORDS, True),
        (FAULT_TYPE, FLAG, True),  # a flag or free words: their words decide
        (DEADLINE, FLAG, True),
        (CAUSE, FREE, True),
        (DEADLINE, None, True),
    ],
)
def test_a_key_holds_the_kinds_of_value_it_can_restate(key: KeyDef, spec: ValueSpec | None, held: bool) -> None:
    assert holds(key, spec) is held


@pytest.mark.slow
def test_a_count_and_a_duration_are_new_keys_not_modifications_on_the_machine_translated_corpus(
    minilm: MiniLMEmbedder,
) -> None:
    """Before the rule (round 8's baseline) the radio-unit count modified ``fault_type`` and the repair
    duration ``deadline``."""
    lines = (DATA / "heldout_mt_corpus.jsonl").read_text().splitlines()
    labels = [json.loads(line)["label"] for line in lines]
    report = replay(lines, minilm).to_dict()
    members = {c["cluster_id"]: c["members"] for c in report["clusters"]}
    made: dict[str, list[tuple[str, str, str]]] = {}
    for patch in report["patches"]:
        label = Counter(labels[m] for m in members[patch["cluster_id"]]).most_common(1)[0][0]
        made.setdefault(label, [])
        made[label] += [("new", k["key_name"], k["key_type"]) for k in patch["new_keys"]]
        made[label] += [("modified", k["key_name"], k["key_type"]) for k in patch["modified_keys"]]
    assert made["cluster:damaged_radio_units"] == [("new", "damaged_radio_unit_count", "integer")]
    [(kind, name, key_type)] = made["cluster:repair_duration"]
    assert (kind, key_type) == ("new", "string") and name != "deadline"
    assert all(name not in ("fault_type", "deadline") for keys in made.values() for _, name, _ in keys)
