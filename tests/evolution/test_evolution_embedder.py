"""The MiniLM embedder's own batching (little padding) and its bf16 linear layers give the vectors
sentence-transformers' ``encode`` gives (exactly in fp32, to cosine >= 0.9999 in bf16)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest

from an_agent.errors import ConfigError
from an_agent.evolution.embedder import MiniLMEmbedder, _slices, resolve_matmul
from conftest import DATA

TEXTS = [
    "the cabinet is overheating since this morning",
    "",
    "battery",
    "the roaming partner wants an SMS (case 12)",
    "Übertemperatur im Schrank, Lüfter defekt — bitte prüfen",
    "the cabinet is overheating since this morning",  # a repeat gets the same vector
    " ".join(["the backhaul lost connectivity after the storm"] * 60),  # past 256 tokens: truncated
    "hold until 2026-11-23T18:00:00Z, 15 % less power, cells CELL-0301 and CELL-0302",
]


@pytest.fixture(scope="module")
def minilm_fp32() -> Iterator[MiniLMEmbedder]:
    """A model of its own in IEEE float32 (the bf16 switch is hooked on the fixture ``minilm``'s modules)."""
    embedder = MiniLMEmbedder(matmul="fp32")
    embedder.load()
    yield embedder


def corpus_texts() -> list[str]:
    """Every fragment (``payload.other``) of the corpora the similarity thresholds are calibrated on."""
    texts = []
    for path in sorted(DATA.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                other = json.loads(line)["payload"].get("other")
                if isinstance(other, str):
                    texts.append(other)
    return texts


def test_slices_cover_every_position_once_longest_first_at_least_cost() -> None:
    lengths = [3, 2, 3, 1, 3, 2, 3]
    # A free pass: every length alone (joining pads); batch_size still caps a slice.
    assert _slices(lengths, batch_size=2, pass_tokens=0) == [[0, 2], [4, 6], [1, 5], [3]]
    assert _slices(lengths, batch_size=8, pass_tokens=0) == [[0, 2, 4, 6], [1, 5], [3]]
    # Sorted 3 3 3 3 2 2 1. Costs: alone 3P + 17, [3333][221] 2P + 18, [333322][1] 2P + 19, one 21 + P.
    assert _slices(lengths, batch_size=8, pass_tokens=2) == [[0, 2, 4, 6], [1, 5, 3]]  # 22 < 23, 23, 23
    assert _slices(lengths, batch_size=8, pass_tokens=4) == [[0, 2, 4, 6, 1, 5, 3]]  # 25 < 26, 27, 29
    # An expensive pass: one slice of the batch size, then the rest.
    assert _slices(lengths, batch_size=4, pass_tokens=100) == [[0, 2, 4, 6], [1, 5, 3]]
    lengths = [((i * 7) % 13) + 3 for i in range(300)]
    for batch_size, pass_tokens in ((256, 64), (5, 0), (64, 40), (300, 10_000)):
        slices = _slices(lengths, batch_size, pass_tokens)
        assert sorted(p for s in slices for p in s) == list(range(len(lengths)))
        assert len(slices) >= -(-len(lengths) // batch_size)
        for s in slices:
            assert 0 < len(s) <= batch_size
            assert [lengths[p] for p in s] == sorted((lengths[p] for p in s), reverse=True)

        # No cut costs less than the one chosen: compare with every length alone and with one run.
        def cost(cut: list[list[int]], pass_tokens: int = pass_tokens) -> int:
            return sum(pass_tokens + lengths[s[0]] * len(s) for s in cut)

        alone = _slices(lengths, batch_size, 0)
        one_run = _slices(lengths, batch_size, 10**9)
        assert cost(slices) <= min(cost(alone), cost(one_run))
    assert len(_slices(lengths, 300, 10_000)) == 1 and len(_slices(lengths, 256, 0)) == 13
    assert _slices([], batch_size=4) == []


def test_matmul_choice_is_checked_and_auto_resolves_to_a_precision() -> None:
    with pytest.raises(ConfigError, match="matmul"):
        MiniLMEmbedder(matmul="fp16")
    assert resolve_matmul("fp32") == "fp32" and resolve_matmul("bf16") == "bf16"
    assert resolve_matmul("auto") in ("fp32", "bf16")


@pytest.mark.slow
def test_fp32_vectors_equal_encode_vectors_in_the_callers_order(minilm_fp32: MiniLMEmbedder) -> None:
    model = minilm_fp32._model
    small_batches = MiniLMEmbedder(batch_size=2, matmul="fp32")
    small_batches._model = model  # same weights, slices of two: batching must not change a vector
    got = minilm_fp32.embed(TEXTS)
    expected = model.encode(TEXTS, batch_size=256, normalize_embeddings=True, convert_to_numpy=True)
    assert minilm_fp32.matmul_precision == "fp32"
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert np.abs(got - expected).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(got[0], got[5])
    assert np.abs(small_batches.embed(TEXTS) - got).max() < 1e-5
    assert np.abs(minilm_fp32.embed(TEXTS[3:4])[0] - got[3]).max() < 1e-5  # alone as in a batch


@pytest.mark.slow
def test_default_vectors_stay_within_cosine_0_9999_of_encode_on_the_calibration_corpora(
    minilm: MiniLMEmbedder, minilm_fp32: MiniLMEmbedder
) -> None:
    """The default (bf16 linear layers where the CPU multiplies bf16 natively) against sentence-transformers' float32 encode."""
    import torch

    texts = TEXTS + corpus_texts()
    assert len(texts) > 150
    got = minilm.embed(texts)
    expected = minilm_fp32._model.encode(texts, batch_size=256, normalize_embeddings=True, convert_to_numpy=True)
    assert got.shape == (len(texts), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    assert (got * expected).sum(axis=1).min() >= 0.9999
    # Deterministic per text: alone, in a batch, in slices of two, repeated.
    assert np.array_equal(got[0], got[5])
    assert np.abs(minilm.embed(texts[3:4])[0] - got[3]).max() < 1e-6
    small_batches = MiniLMEmbedder(batch_size=2)
    small_batches._model, small_batches.matmul_precision = minilm._model, minilm.matmul_precision
    assert np.abs(small_batches.embed(TEXTS) - got[: len(TEXTS)]).max() < 1e-6
    # The process-wide bf16 switch is on only inside the linear layers.
    assert torch.backends.mkldnn.matmul.fp32_precision == "none"
    assert torch.get_num_threads() == 1  # the default: one torch thread (docs/evolution.md section 10)
    if minilm.matmul_precision == "bf16" and torch.cpu._is_amx_tile_supported():
        # The switch does act (else this test would pass on fp32 while claiming bf16). With AVX-512 BF16
        # and no AMX, oneDNN keeps float32 products (3e-7 from encode's), only faster (`resolve_matmul`).
        assert np.abs(got - expected).max() > 1e-5


@pytest.mark.slow
def test_an_fp32_embedder_stays_fp32_while_a_bf16_one_embeds_in_another_thread(
    minilm: MiniLMEmbedder, minilm_fp32: MiniLMEmbedder
) -> None:
    """The bf16 switch is process-wide: forward passes of all embedders take turns."""
    import threading

    expected = minilm_fp32.embed(TEXTS)
    texts = corpus_texts()
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            minilm.embed(texts[:64])

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        for _ in range(5):
            assert np.abs(minilm_fp32.embed(TEXTS) - expected).max() < 1e-6
    finally:
        stop.set()
        worker.join()
