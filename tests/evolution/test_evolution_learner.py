"""The agent's background learner (runtime/schemas.py) learns from the payloads that queued up in batches."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

from an_agent.clock import ManualClock
from an_agent.evolution.engine import EvolutionEngine
from an_agent.runtime.schemas import PayloadCheck, SchemaService
from an_agent.schemas.embedding import Vectors
from an_agent.store.evolution import EvolutionStore
from conftest import FakeEmbedder


class GatedEmbedder(FakeEmbedder):
    """Holds its first call until the test opens the gate; records the batch sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.sizes: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.gate.wait(60)
        self.sizes.append(len(texts))
        return super().embed(texts)


def test_payloads_that_queue_up_are_learnt_in_one_embedding_call(tmp_path: Path, clock: ManualClock) -> None:
    embedder = GatedEmbedder()
    engine = EvolutionEngine(EvolutionStore(tmp_path / "evolution.db"), embedder, clock=clock)
    service = SchemaService(engine, clock, lambda _: None)
    try:
        texts = [f"the battery backup of site {i} is low" for i in range(40)]
        for i, text in enumerate(texts):
            envelope = {"schema_id": "fault_diagnosis_v1", "payload": {"fault_type": "power_failure", "other": text}}
            service.accept(PayloadCheck(f"task-{i}", f"client-{i % 7}", envelopes=[envelope]))
        # The learner holds at most the first payloads in the gated call; the rest queue up meanwhile.
        embedder.gate.set()
        service.drain()
        # The learner's calls come first (synthesis embeds phrases after them): all 40 fragments in the
        # first call or the first two, not in 40 calls.
        sizes = embedder.sizes
        assert sizes[0] == len(texts) or sizes[0] + sizes[1] == len(texts), sizes
        assert sum(c.size for c in engine.clusters()) == len(texts)
    finally:
        service.close()


class RecordingEmbedder(GatedEmbedder):
    """`GatedEmbedder` that also remembers every text it embedded."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def embed(self, texts: Sequence[str]) -> Vectors:
        vectors = super().embed(texts)
        self.seen.update(texts)
        return vectors


def test_synthesis_waits_until_the_queued_payloads_are_ingested(tmp_path: Path, clock: ManualClock) -> None:
    # More payloads than one learning batch, of one recurring intent from many clients: the intent triggers
    # in an early batch while later ones are still queued. Synthesis (seconds of model time per patch on the
    # real model) must not hold them up: the patch is made once every queued payload is in the pool.
    embedder = RecordingEmbedder()
    engine = EvolutionEngine(EvolutionStore(tmp_path / "evolution.db"), embedder, clock=clock)
    service = SchemaService(engine, clock, lambda _: None)
    texts = [f"the battery backup of the site is low, reported by team {i}" for i in range(600)]
    ingested_at_publication: list[int] = []
    engine.on_event(
        lambda event: (
            ingested_at_publication.append(sum(t in embedder.seen for t in texts))
            if event.kind == "patch-published"
            else None
        )
    )
    try:
        for i, text in enumerate(texts):
            envelope = {"schema_id": "fault_diagnosis_v1", "payload": {"fault_type": "power_failure", "other": text}}
            service.accept(PayloadCheck(f"task-{i}", f"client-{i % 7}", envelopes=[envelope]))
        embedder.gate.set()
        service.drain()
        assert len(embedder.sizes) >= 3 and max(embedder.sizes) <= 256, embedder.sizes  # several batches
        assert ingested_at_publication and ingested_at_publication[0] == len(texts), ingested_at_publication
    finally:
        service.close()


def test_the_learner_leaves_a_trigger_waiting_for_its_sample_until_a_drain_or_the_stop(
    tmp_path: Path, clock: ManualClock
) -> None:
    published: list[str] = []
    for ending in ("drain", "stop"):
        engine = EvolutionEngine(EvolutionStore(tmp_path / f"{ending}.db"), FakeEmbedder(), clock=clock)
        engine.on_event(lambda e, end=ending: published.append(end) if e.kind == "patch-published" else None)
        service = SchemaService(engine, clock, lambda _: None)
        try:
            # Six clients: the default gate (heat 50, 5 clients) fires, below the typing sample of 10.
            for i in range(6):
                payload = {"fault_type": "power_failure", "other": "the battery backup of the site is low"}
                envelope = {"schema_id": "fault_diagnosis_v1", "payload": payload}
                service.accept(PayloadCheck(f"task-{i}", f"client-{i}", envelopes=[envelope]))
            noted = threading.Event()
            while not noted.wait(0.01):  # until the learner has learnt all six (no time limit asserted)
                if sum(c.size for c in engine.clusters()) == 6 and engine.synthesis_due:
                    noted.set()
            assert engine.patches() == [] and published == ([] if ending == "drain" else ["drain"])
            if ending == "drain":
                service.drain()
                assert len(engine.patches()) == 1 and engine.synthesis_due == 0
        finally:
            service.close()
    assert published == ["drain", "stop"]
