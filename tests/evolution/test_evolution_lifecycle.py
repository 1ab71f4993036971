"""The engine's lifecycle on a simulated clock: trigger, patch, trial, promotion, deprecation, withdrawal.

Uses the small deterministic embedder and small gates (conftest.SMALL): three identical fragments from
two clients trigger. Real-model behaviour is covered by test_evolution_replay.py.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from an_agent.clock import ManualClock, to_rfc3339
from an_agent.errors import SchemaError
from an_agent.evolution.engine import Acceptance, EvolutionEngine
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.policy import DefaultUpdatePolicy
from an_agent.store.evolution import EvolutionStore
from conftest import SMALL, FakeEmbedder

DAY = 86400.0
ENERGY = "energy_saving_adjust_v1"
HOT = "cabinet temperature alarm"


def envelope(other: Any = None, schema_id: str = ENERGY, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = (
        {"cell_ids": ["CELL-0401"], "action": "reduce"}
        if schema_id == ENERGY
        else {"fault_type": "base_station_outage"}
    )
    payload.update(extra)
    if other is not None:
        payload["other"] = other
    return {"schema_id": schema_id, "payload": payload}


def trigger(
    engine: EvolutionEngine,
    clock: ManualClock,
    text: str = HOT,
    clients: tuple[str, ...] = ("a", "b", "a"),
    schema_id: str = ENERGY,
) -> dict[str, Any]:
    """Send ``text`` from each client a minute apart; returns the newest patch."""
    for client in clients:
        engine.accept_payload(client, envelope(text, schema_id))
        clock.advance(60)
    patches = engine.patches()
    assert patches, "expected the fragments to trigger a patch"
    return patches[-1]


def events_of(engine: EvolutionEngine) -> list[EvolutionEvent]:
    seen: list[EvolutionEvent] = []
    engine.on_event(seen.append)
    return seen


def new_key(patch: dict[str, Any]) -> str:
    assert len(patch["new_keys"]) == 1
    return str(patch["new_keys"][0]["key_name"])


def use_key(engine: EvolutionEngine, clock: ManualClock, key: str, value: Any, times: int, clients: int = 3) -> None:
    for i in range(times):
        engine.accept_payload(f"user{i % clients}", envelope(**{key: value}))
        clock.advance(3600)


def test_trigger_publishes_an_experimental_patch(engine: EvolutionEngine, clock: ManualClock) -> None:
    events = events_of(engine)
    engine.accept_payload("a", envelope(HOT))
    engine.accept_payload("b", envelope(HOT))
    assert engine.patches() == []  # heat 20 < 25
    patch = trigger(engine, clock, clients=("a",))
    assert patch["client_id"] is None and patch["parent_schema_id"] == ENERGY and patch["state"] == "active"
    key = patch["new_keys"][0]
    assert key["experimental"] is True and key["required"] is False and key["key_type"] == "boolean"
    assert set(key["key_name"].split("_")) <= {"cabinet", "temperature", "alarm"}
    assert "'cabinet temperature alarm' -> true" in key["semantic_description"]
    assert patch["expiration"] > patch["timestamp"]
    kinds = [e.kind for e in events]
    assert kinds[-2:] == ["cluster-triggered", "patch-published"]
    assert events[-1].patch is not None and events[-1].patch["patch_id"] == patch["patch_id"]
    # Delivered to every client: template, inline suggestion; the base keys are all still there, same types.
    base = engine.registry.get(ENERGY)
    template = engine.template("energy_saving_adjust", "someone-new")
    assert template.key(key["key_name"]) is not None and template.key(key["key_name"]).experimental  # type: ignore[union-attr]
    for k in base.keys:
        assert template.key(k.key_name) is not None and template.key(k.key_name).key_type == k.key_type  # type: ignore[union-attr]
    assert template.keys[-1].key_name == "other"
    suggestion = engine.schema_update_suggestion("someone-new", ENERGY)
    assert suggestion is not None and suggestion["patches"][0]["patch_id"] == patch["patch_id"]
    assert engine.schema_update_suggestion("someone-new", "fault_diagnosis_v1") is None


def test_used_key_is_promoted_after_the_trial(engine: EvolutionEngine, clock: ManualClock) -> None:
    patch = trigger(engine, clock)
    key = new_key(patch)
    events = events_of(engine)
    engine.schema_update_suggestion("user0", ENERGY)  # delivered to user0 (adoption)
    use_key(engine, clock, key, True, times=6)
    engine.accept_payload("user1", envelope())  # one payload without the key: usage 6/7
    metrics = engine.key_metrics(patch["patch_id"], key)
    assert (metrics.seen, metrics.present, metrics.type_ok, metrics.aligned) == (7, 6, 6, 6)
    # Delivered inline to "a" (whose payload triggered it) and to user0..2; adopted by user0..2.
    assert (metrics.delivered, metrics.adopted) == (4, 3) and metrics.client_adoption_rate == 0.75
    clock.advance(6 * DAY)
    engine.tick()
    assert engine.key_state(patch["patch_id"], key) == "experimental"
    clock.advance(1 * DAY)
    engine.tick()
    assert engine.key_state(patch["patch_id"], key) == "stable"
    changed = [e for e in events if e.kind == "key-state-changed"]
    assert [(e.previous_state, e.state) for e in changed] == [("experimental", "stable")]
    stable = engine.template(ENERGY, "x").key(key)
    assert stable is not None and not stable.experimental and not stable.deprecated


def test_unused_key_is_deprecated_withdrawn_then_retired(
    engine: EvolutionEngine, clock: ManualClock, caplog: pytest.LogCaptureFixture
) -> None:
    patch = trigger(engine, clock)
    key = new_key(patch)
    for i in range(5):
        engine.accept_payload(f"user{i}", envelope())  # never uses the key: usage 0 %
    clock.advance(7 * DAY)
    engine.tick()
    assert engine.key_state(patch["patch_id"], key) == "deprecated"
    deprecated = engine.template(ENERGY, "x").key(key)
    assert deprecated is not None and deprecated.deprecated
    accepted = engine.accept_payload("x", envelope(**{key: True}))
    assert any("deprecated" in w for w in accepted.payload.warnings)
    clock.advance(14 * DAY)
    engine.tick()
    assert engine.key_state(patch["patch_id"], key) == "withdrawn"
    assert engine.template(ENERGY, "x").key(key) is None
    assert engine.patches()[0]["state"] == "closed"
    events = events_of(engine)
    with caplog.at_level(logging.WARNING, logger="an_agent.evolution"):
        accepted = engine.accept_payload("legacy", envelope(**{key: True}))
    assert accepted.payload.values[key] is True and key in accepted.payload.compat_keys_used
    assert any("withdrawn" in w for w in accepted.payload.warnings)
    assert any(key in r.getMessage() and "withdrawn" in r.getMessage() for r in caplog.records)
    assert [e.kind for e in events] == ["withdrawn-key-used"]
    clock.advance(30 * DAY)
    engine.tick()
    assert engine.key_state(patch["patch_id"], key) == "retired"
    with pytest.raises(SchemaError) as refused:
        engine.accept_payload("legacy", envelope(**{key: True}))
    assert refused.value.problems == [f"{key}: not a key of {ENERGY}; put free text in 'other'"]


def test_trial_is_extended_without_enough_payloads_then_deprecated(engine: EvolutionEngine, clock: ManualClock) -> None:
    patch = trigger(engine, clock)
    key = new_key(patch)
    events = events_of(engine)
    for _ in range(SMALL.max_trial_extensions):
        clock.advance(7 * DAY)
        engine.tick()
        assert engine.key_state(patch["patch_id"], key) == "experimental"
    clock.advance(7 * DAY)
    engine.tick()
    assert engine.key_state(patch["patch_id"], key) == "deprecated"
    details = [e.detail for e in events if e.kind == "key-state-changed"]
    assert sum("trial extended" in d for d in details) == SMALL.max_trial_extensions


def test_wrongly_typed_values_are_dropped_and_count_against_the_key(
    engine: EvolutionEngine, clock: ManualClock
) -> None:
    patch = trigger(engine, clock)
    key = new_key(patch)
    accepted = engine.accept_payload("x", envelope(**{key: "yes"}))
    assert key not in accepted.payload.values and key in accepted.payload.nonconforming
    use_key(engine, clock, key, "yes", times=5)
    metrics = engine.key_metrics(patch["patch_id"], key)
    assert metrics.usage_frequency == 1.0 and metrics.value_type_correctness == 0.0
    clock.advance(7 * DAY)
    engine.tick()
    assert engine.key_state(patch["patch_id"], key) == "deprecated"


def test_restating_the_intent_in_other_counts_as_misaligned(engine: EvolutionEngine, clock: ManualClock) -> None:
    patch = trigger(engine, clock)
    key = new_key(patch)
    for i in range(5):
        engine.accept_payload(f"user{i}", envelope(HOT, **{key: True}))
    metrics = engine.key_metrics(patch["patch_id"], key)
    assert metrics.value_type_correctness == 1.0 and metrics.semantic_alignment_accuracy == 0.0


def test_convergence_guard_queues_triggers_until_a_slot_frees(
    tmp_path: Path, fake: FakeEmbedder, clock: ManualClock
) -> None:
    config = SMALL.with_overrides({"max_experimental_keys": 1})
    engine = EvolutionEngine(EvolutionStore(tmp_path / "e.db"), fake, config=config, clock=clock)
    try:
        first = trigger(engine, clock)
        events = events_of(engine)
        for client in ("a", "b", "a"):
            engine.accept_payload(client, envelope("roaming partner users affected"))
        assert len(engine.patches()) == 1 and len(engine.queued()) == 1
        assert [e.kind for e in events][-2:] == ["cluster-triggered", "trigger-queued"]
        engine.accept_payload("c", envelope())
        engine.accept_payload("d", envelope())
        clock.advance(7 * DAY)  # the first key is decided (deprecated: unused): the queued trigger goes ahead
        engine.tick()
        assert engine.key_state(first["patch_id"], new_key(first)) == "deprecated"
        assert engine.queued() == [] and len(engine.patches()) == 2
        second = engine.patches()[-1]
        assert set(new_key(second).split("_")) <= {"roaming", "partner", "users", "affected"}
        assert "trigger-dequeued" in [e.kind for e in events]
    finally:
        engine.close()


def test_single_client_intent_gets_a_per_client_patch(engine: EvolutionEngine, clock: ManualClock) -> None:
    patch = trigger(engine, clock, text="send me an sms", clients=("solo", "solo", "solo"))
    key = new_key(patch)
    assert patch["client_id"] == "solo"
    assert engine.template(ENERGY, "solo").key(key) is not None
    assert engine.template(ENERGY, "other-client").key(key) is None
    assert engine.template(ENERGY).key(key) is None  # not in the global schema
    assert engine.schema_update_suggestion("other-client", ENERGY) is None
    assert engine.accept_payload("solo", envelope(**{key: True})).payload.values[key] is True
    with pytest.raises(SchemaError, match="invalid structured payload"):
        engine.accept_payload("other-client", envelope(**{key: True}))


def test_per_client_patch_is_superseded_when_the_intent_goes_global(
    engine: EvolutionEngine, clock: ManualClock
) -> None:
    personal = trigger(engine, clock, text="send me an sms", clients=("solo", "solo", "solo"))
    for client in ("b", "c", "d", "e"):
        engine.accept_payload(client, envelope("send me an sms"))
        clock.advance(60)
    patches = engine.patches()
    assert len(patches) == 2 and patches[1]["client_id"] is None
    assert engine.key_state(personal["patch_id"], new_key(personal)) == "withdrawn"
    assert engine.template(ENERGY, "anyone").key(new_key(patches[1])) is not None


def test_patches_wait_for_an_authorised_user_when_automatic_evolution_is_off(
    tmp_path: Path, fake: FakeEmbedder, clock: ManualClock
) -> None:
    policy = DefaultUpdatePolicy(admins=["alice"], automatic=False)
    engine = EvolutionEngine(EvolutionStore(tmp_path / "e.db"), fake, config=SMALL, clock=clock, policy=policy)
    try:
        events = events_of(engine)
        patch = trigger(engine, clock)
        key = new_key(patch)
        assert patch["state"] == "pending" and events[-1].kind == "patch-pending-approval"
        assert engine.template(ENERGY, "a").key(key) is None and engine.schema_update_suggestion("a", ENERGY) is None
        with pytest.raises(SchemaError, match="not authorised"):
            engine.approve_patch(patch["patch_id"], "mallory")
        approved = engine.approve_patch(patch["patch_id"], "alice")
        assert approved["state"] == "active" and engine.template(ENERGY, "a").key(key) is not None
        assert [e.kind for e in events][-2:] == ["patch-published", "patch-approved"]
        with pytest.raises(SchemaError, match="not pending"):
            engine.reject_patch(patch["patch_id"], "alice")
    finally:
        engine.close()


def test_rejected_patch_does_not_come_back(tmp_path: Path, fake: FakeEmbedder, clock: ManualClock) -> None:
    policy = DefaultUpdatePolicy(admins=["alice"], automatic=False)
    engine = EvolutionEngine(EvolutionStore(tmp_path / "e.db"), fake, config=SMALL, clock=clock, policy=policy)
    try:
        patch = trigger(engine, clock)
        assert engine.reject_patch(patch["patch_id"], "alice")["state"] == "rejected"
        for client in ("c", "d", "e"):
            engine.accept_payload(client, envelope(HOT))
        assert len(engine.patches()) == 1
    finally:
        engine.close()


def test_security_relevant_keys_are_never_published_automatically(engine: EvolutionEngine, clock: ManualClock) -> None:
    patch = trigger(engine, clock, text="include the router admin password")
    assert patch["state"] == "pending"
    with pytest.raises(SchemaError, match="not authorised"):
        engine.approve_patch(patch["patch_id"], "an-agent:evolution")
    assert engine.approve_patch(patch["patch_id"], "alice")["state"] == "active"


def test_same_name_refines_the_existing_key_instead_of_duplicating(engine: EvolutionEngine, clock: ManualClock) -> None:
    base = engine.registry.get("fault_diagnosis_v1").key("severity")
    assert base is not None
    patch = trigger(engine, clock, text="severity", schema_id="fault_diagnosis_v1")
    assert patch["new_keys"] == [] and [k["key_name"] for k in patch["modified_keys"]] == ["severity"]
    refined = engine.template("fault_diagnosis_v1", "x").key("severity")
    assert refined is not None and refined.key_type == base.key_type and refined.required == base.required
    assert refined.semantic_description.startswith(base.semantic_description)
    assert "Also covers requests phrased like: 'severity'" in refined.semantic_description
    assert refined.constraints.enum == base.constraints.enum  # still validated as before
    with pytest.raises(SchemaError):
        engine.accept_payload("x", envelope(schema_id="fault_diagnosis_v1", severity="apocalyptic"))


def test_manual_withdrawal_needs_an_authorised_user(engine: EvolutionEngine, clock: ManualClock) -> None:
    patch = trigger(engine, clock)
    key = new_key(patch)
    with pytest.raises(SchemaError, match="not authorised"):
        engine.withdraw_key(patch["patch_id"], key, "mallory")
    engine.withdraw_key(patch["patch_id"], key, "alice")
    assert engine.key_state(patch["patch_id"], key) == "withdrawn"


def test_invalid_payload_is_refused_and_nothing_is_stored(engine: EvolutionEngine, clock: ManualClock) -> None:
    engine.accept_payload("a", envelope(HOT))
    before = engine.clusters()
    with pytest.raises(SchemaError) as refused:
        engine.accept_payload("a", envelope(HOT, action="explode", duration_minutes=0))
    assert refused.value.problems == [
        "action: 'explode' is not one of suspend, resume, reduce",
        "duration_minutes: 0 is outside the range 1 to 10080",
    ]
    assert engine.clusters() == before


def test_listener_can_unsubscribe_and_a_failing_listener_is_contained(
    engine: EvolutionEngine, clock: ManualClock
) -> None:
    seen: list[str] = []

    def broken(event: EvolutionEvent) -> None:
        raise RuntimeError("listener bug")

    engine.on_event(broken)
    stop = engine.on_event(lambda e: seen.append(e.kind))
    trigger(engine, clock)
    assert "patch-published" in seen
    stop()
    count = len(seen)
    trigger(engine, clock, text="roaming partner users")
    assert len(seen) == count


def test_bulk_ingest_leaves_synthesis_off_the_ingest_path(engine: EvolutionEngine, clock: ManualClock) -> None:
    seen = events_of(engine)
    engine.ingest([("a", ENERGY, HOT), ("b", ENERGY, HOT), ("a", ENERGY, HOT)])
    assert [e.kind for e in seen if e.kind == "cluster-triggered"] == ["cluster-triggered"]
    assert engine.patches() == []  # triggered, not yet synthesised
    triggered_at = clock.now()
    clock.advance(600)
    assert engine.synthesise_due() == 1 and engine.synthesise_due() == 0
    (patch,) = engine.patches()
    assert patch["state"] == "active" and new_key(patch)
    assert patch["timestamp"] == to_rfc3339(triggered_at)  # the patch carries the time of its trigger
    engine.ingest([("c", ENERGY, HOT)])
    assert engine.synthesise_due() == 0 and len(engine.patches()) == 1  # a patched cluster does not re-trigger


def test_accept_payloads_learns_a_batch_and_refuses_items_one_by_one(
    engine: EvolutionEngine, fake: FakeEmbedder
) -> None:
    good = envelope("battery backup low", "fault_diagnosis_v1")
    bad = {"schema_id": "fault_diagnosis_v1", "payload": {"other": "no fault type"}}  # a required key is missing
    calls = fake.calls
    results = engine.accept_payloads(
        [("a", good), ("b", bad), ("c", envelope("battery backup is low", "fault_diagnosis_v1"))]
    )
    assert fake.calls == calls + 1  # one embedding call for the batch
    assert isinstance(results[1], SchemaError) and "fault_type" in " ".join(results[1].problems)
    first, third = results[0], results[2]
    assert isinstance(first, Acceptance) and isinstance(third, Acceptance)
    assert first.cluster_ids == third.cluster_ids  # the two paraphrases ended in one cluster
    assert [c.size for c in engine.clusters()] == [2]  # nothing stored for the refused one
