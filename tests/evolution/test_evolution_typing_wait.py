"""A noted trigger waits for a typing sample (``typing_sample`` fragments or ``typing_wait_hours``).

Small deterministic embedder and the small gates of conftest.SMALL (three identical fragments from two
clients trigger), with a sample of 6 fragments: the patch is made from a cluster big enough for a closed
set's values to recur, after at most a day, or at once when forced (end of a replay, a learner's drain).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from an_agent.clock import ManualClock, to_rfc3339
from an_agent.evolution.engine import EvolutionEngine
from an_agent.evolution.events import EvolutionEvent
from an_agent.store.evolution import EvolutionStore
from conftest import SMALL, FakeEmbedder

ENERGY = "energy_saving_adjust_v1"
HOT = "cabinet temperature alarm"
HOUR = 3600.0


@pytest.fixture
def waiting(tmp_path: Path, fake: FakeEmbedder, clock: ManualClock) -> Iterator[EvolutionEngine]:
    config = replace(SMALL, typing_sample=6, typing_wait_hours=24.0)
    eng = EvolutionEngine(EvolutionStore(tmp_path / "evolution.db"), fake, config=config, clock=clock)
    try:
        yield eng
    finally:
        eng.close()


def send(engine: EvolutionEngine, clock: ManualClock, clients: str) -> None:
    """One payload with HOT in 'other' per client letter, a minute apart."""
    for client in clients:
        payload = {"cell_ids": ["CELL-0401"], "action": "reduce", "other": HOT}
        engine.accept_payload(client, {"schema_id": ENERGY, "payload": payload})
        clock.advance(60)


def kinds(seen: list[EvolutionEvent], kind: str) -> list[EvolutionEvent]:
    return [e for e in seen if e.kind == kind]


def test_a_trigger_below_the_sample_waits_and_the_sample_makes_its_patch(
    waiting: EvolutionEngine, clock: ManualClock
) -> None:
    seen: list[EvolutionEvent] = []
    waiting.on_event(seen.append)
    send(waiting, clock, "aba")  # the gate fires on the third fragment
    (triggered,) = kinds(seen, "cluster-triggered")
    assert waiting.patches() == [] and waiting.synthesis_due == 1
    waiting.tick()  # an hour is not the day it may wait
    send(waiting, clock, "ab")  # 5 fragments: still below the sample; the gate does not fire again
    assert waiting.patches() == [] and len(kinds(seen, "cluster-triggered")) == 1
    send(waiting, clock, "b")  # the sixth fragment reaches it
    (patch,) = waiting.patches()
    assert patch["state"] == "active" and waiting.synthesis_due == 0
    assert patch["timestamp"] == to_rfc3339(triggered.time)  # the first trigger's time, not the sample's


def test_a_trigger_that_waited_its_hours_is_synthesised_by_a_tick(waiting: EvolutionEngine, clock: ManualClock) -> None:
    send(waiting, clock, "aba")
    triggered_at = clock.now() - 60
    clock.advance(23 * HOUR)
    waiting.tick()
    assert waiting.patches() == []
    clock.advance(HOUR)
    waiting.tick()
    (patch,) = waiting.patches()
    assert patch["timestamp"] == to_rfc3339(triggered_at)


def test_force_synthesises_a_waiting_trigger(waiting: EvolutionEngine, clock: ManualClock) -> None:
    send(waiting, clock, "aba")
    assert waiting.synthesise_due() == 0 and waiting.patches() == []
    assert waiting.synthesise_due(force=True) == 1
    assert len(waiting.patches()) == 1 and waiting.synthesis_due == 0


def test_tick_force_synthesises_and_a_zero_wait_does_not_wait(
    tmp_path: Path, fake: FakeEmbedder, clock: ManualClock
) -> None:
    config = replace(SMALL, typing_sample=100, typing_wait_hours=0.0)
    engine = EvolutionEngine(EvolutionStore(tmp_path / "zero.db"), fake, config=config, clock=clock)
    try:
        send(engine, clock, "aba")
        assert len(engine.patches()) == 1  # typing_wait_hours 0: made when the trigger is noted
    finally:
        engine.close()
    engine = EvolutionEngine(EvolutionStore(tmp_path / "tick.db"), fake, config=replace(config, typing_wait_hours=24))
    try:
        engine.ingest([("a", ENERGY, HOT), ("b", ENERGY, HOT), ("a", ENERGY, HOT)])
        engine.tick()
        assert engine.patches() == []
        engine.tick(force=True)
        assert len(engine.patches()) == 1
    finally:
        engine.close()
