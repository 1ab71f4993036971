"""The MiniLM embedder's own batching (little padding) gives the vectors sentence-transformers' ``encode`` gives."""

from __future__ import annotations

import numpy as np
import pytest

from an_agent.evolution.embedder import MiniLMEmbedder, _slices


def test_slices_cover_every_position_once_longest_first_within_the_padding_budget() -> None:
    lengths = [3, 2, 3, 1, 3, 2, 3]
    assert _slices(lengths, batch_size=2, pad_budget=0) == [[0, 2], [4, 6], [1, 5], [3]]  # one length each
    assert _slices(lengths, batch_size=8, pad_budget=0) == [[0, 2, 4, 6], [1, 5], [3]]
    assert _slices(lengths, batch_size=8, pad_budget=2) == [[0, 2, 4, 6, 1, 5], [3]]  # 2 texts padded by 1
    assert _slices(lengths, batch_size=8, pad_budget=4) == [[0, 2, 4, 6, 1, 5, 3]]  # and one by 2
    lengths = [((i * 7) % 13) + 3 for i in range(300)]
    for batch_size, budget in ((256, 16), (5, 0), (64, 40)):
        slices = _slices(lengths, batch_size, budget)
        assert sorted(p for s in slices for p in s) == list(range(len(lengths)))
        for s in slices:
            assert len(s) <= batch_size
            assert [lengths[p] for p in s] == sorted((lengths[p] for p in s), reverse=True)
            assert sum(lengths[s[0]] - lengths[p] for p in s) <= budget
    assert _slices([], batch_size=4) == []


@pytest.mark.slow
def test_vectors_equal_encode_vectors_in_the_callers_order(minilm: MiniLMEmbedder) -> None:
    texts = [
        "the cabinet is overheating since this morning",
        "",
        "battery",
        "the roaming partner wants an SMS (case 12)",
        "Übertemperatur im Schrank, Lüfter defekt — bitte prüfen",
        "the cabinet is overheating since this morning",  # a repeat gets the same vector
        " ".join(["the backhaul lost connectivity after the storm"] * 60),  # past 256 tokens: truncated
        "hold until 2026-11-23T18:00:00Z, 15 % less power, cells CELL-0301 and CELL-0302",
    ]
    small_batches = MiniLMEmbedder(batch_size=2)
    small_batches._model = minilm._model  # same weights, slices of two: batching must not change a vector
    got = minilm.embed(texts)
    expected = minilm._model.encode(texts, batch_size=256, normalize_embeddings=True, convert_to_numpy=True)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    assert np.abs(got - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(got[0], got[5])
    assert np.abs(small_batches.embed(texts) - got).max() < 1e-5
    assert np.abs(minilm.embed(texts[3:4])[0] - got[3]).max() < 1e-5  # alone as in a batch
