"""The MiniLM embedder's unpadded path gives the vectors sentence-transformers' ``encode`` gives."""

from __future__ import annotations

import numpy as np
import pytest

from an_agent.evolution.embedder import MiniLMEmbedder, _length_groups


def test_length_groups_hold_one_length_each_and_cover_every_position_once() -> None:
    tokens = [[1, 2, 3], [1, 2], [4, 5, 6], [7], [1, 2, 3], [9, 9], [8, 8, 8]]
    groups = _length_groups(tokens, batch_size=2)
    assert [positions for _, positions in groups] == [[0, 2], [4, 6], [1, 5], [3]]  # longest first, then in order
    for ids, positions in groups:
        assert len({len(row) for row in ids}) == 1 and len(ids) <= 2
        assert ids == [tokens[p] for p in positions]
    assert sorted(p for _, positions in groups for p in positions) == list(range(len(tokens)))
    assert _length_groups([], batch_size=4) == []


@pytest.mark.slow
def test_unpadded_vectors_equal_encode_vectors_in_the_callers_order(minilm: MiniLMEmbedder) -> None:
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
