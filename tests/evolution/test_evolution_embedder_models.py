"""Another sentence-transformers model behind the `Embedder` seam (issue 31: the stronger-model measurement).

`MiniLMEmbedder(path=DIR)` reads the directory's pooling and dimension and embeds as
sentence-transformers' ``encode`` does: a CLS-pooled copy of MiniLM, and an MPNet-architecture model
(which takes no segment ids; built here, tiny and random, in the format sentence-transformers saves).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from an_agent.errors import ConfigError
from an_agent.evolution.embedder import MiniLMEmbedder, model_path, pooling_of
from conftest import DATA

TEXTS = ["the battery of the site is low", "x", "the customer says the stadium has no coverage during the match"]


def encoded(path: Path) -> np.ndarray:
    """What sentence-transformers itself computes for TEXTS with the model at ``path``."""
    from sentence_transformers import SentenceTransformer

    vectors: np.ndarray = SentenceTransformer(str(path), device="cpu", local_files_only=True).encode(
        TEXTS, normalize_embeddings=True
    )
    return vectors


def linked_copy(source: Path, target: Path) -> Path:
    """``source``'s files linked into ``target`` (its pooling directory copied, so that it can be edited)."""
    target.mkdir()
    for item in source.iterdir():
        if item.name == "1_Pooling":
            (target / item.name).mkdir()
            for f in item.iterdir():
                (target / item.name / f.name).write_bytes(f.read_bytes())
        else:
            (target / item.name).symlink_to(item)
    return target


def test_the_pooling_and_dimension_are_read_from_the_directory(tmp_path: Path) -> None:
    assert pooling_of(model_path()) == ("mean", 384)
    pooling = tmp_path / "m" / "1_Pooling"
    pooling.mkdir(parents=True)
    (tmp_path / "m" / "config.json").write_text(json.dumps({"hidden_size": 48}))
    (pooling / "config.json").write_text(json.dumps({"embedding_dimension": 48, "pooling_mode": "cls"}))
    assert pooling_of(tmp_path / "m") == ("cls", 48)
    (pooling / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 48, "pooling_mode_max_tokens": True, "pooling_mode_mean_tokens": False})
    )
    with pytest.raises(ConfigError, match="pools by max_tokens: only mean or CLS"):
        pooling_of(tmp_path / "m")
    (pooling / "config.json").unlink()
    assert pooling_of(tmp_path / "m") == ("mean", 48)  # a bare transformer: mean pooling over hidden_size
    with pytest.raises(ConfigError, match="not a sentence-transformers model directory"):
        MiniLMEmbedder(path=tmp_path)


@pytest.mark.slow
def test_a_cls_pooled_model_embeds_as_sentence_transformers_does(tmp_path: Path) -> None:
    copy = linked_copy(model_path(), tmp_path / "minilm-cls")
    config = copy / "1_Pooling" / "config.json"
    pooling = json.loads(config.read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    config.write_text(json.dumps(pooling))
    embedder = MiniLMEmbedder(path=copy, matmul="fp32")
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (3, 384)
    assert np.min(np.sum(vectors * encoded(copy), axis=1)) > 0.9999
    mean = MiniLMEmbedder(matmul="fp32").embed(TEXTS)
    assert np.max(np.sum(vectors * mean, axis=1)) < 0.99  # the CLS pooling was used, not the default mean


@pytest.mark.slow
def test_a_model_without_segment_ids_embeds_as_sentence_transformers_does(tmp_path: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer, models
    from transformers import MPNetConfig, MPNetModel, MPNetTokenizerFast

    torch.manual_seed(31)
    bert_tokens = {"bos_token": "[CLS]", "eos_token": "[SEP]", "sep_token": "[SEP]", "cls_token": "[CLS]"}
    tokenizer = MPNetTokenizerFast(
        tokenizer_file=str(model_path() / "tokenizer.json"),
        unk_token="[UNK]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        **bert_tokens,
    )
    config = MPNetConfig(
        vocab_size=len(tokenizer),
        pad_token_id=tokenizer.pad_token_id,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=130,
    )
    MPNetModel(config).save_pretrained(tmp_path / "raw")
    tokenizer.save_pretrained(tmp_path / "raw")
    transformer = models.Transformer(str(tmp_path / "raw"), max_seq_length=64)
    SentenceTransformer(modules=[transformer, models.Pooling(32, "mean"), models.Normalize()]).save(
        str(tmp_path / "st")
    )
    embedder = MiniLMEmbedder(path=tmp_path / "st", matmul="fp32")
    assert embedder.dimension == 32
    assert np.min(np.sum(embedder.embed(TEXTS) * encoded(tmp_path / "st"), axis=1)) > 0.9999


def test_replay_with_a_directory_that_is_no_model_says_so(tmp_path: Path) -> None:
    corpus = DATA / "dev_other_corpus.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "an_agent.cli", "schema", "replay", str(corpus), "--model", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert f"{tmp_path} is not a sentence-transformers model directory" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_replay_runs_on_another_model_directory_from_the_command_line(tmp_path: Path) -> None:
    """`an-agent schema replay FILE --model DIR` in its own process, on a CLS-pooled copy of MiniLM.

    The CLS model gives other vectors, so its clusters' cohesions differ from the bundled model's: the
    directory given is what embedded the fragments.
    """
    copy = linked_copy(model_path(), tmp_path / "minilm-cls")
    config = copy / "1_Pooling" / "config.json"
    pooling = json.loads(config.read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    config.write_text(json.dumps(pooling))
    corpus = DATA / "dev_other_corpus.jsonl"

    def replay(*model: str) -> tuple[dict[str, Any], str]:
        done = subprocess.run(
            [sys.executable, "-m", "an_agent.cli", "schema", "replay", str(corpus), "--json", *model],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout), done.stderr

    (other, said), (bundled, _) = replay("--model", str(copy)), replay()
    assert f"loading the embedding model from {copy}" in said
    lines = sum(1 for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip())
    assert other["accepted"] == bundled["accepted"] == lines
    assert other["patches"], "the CLS copy of MiniLM still gathers the corpus's intents"
    assert [c["cohesion"] for c in other["clusters"]] != [c["cohesion"] for c in bundled["clusters"]]
