"""A small deterministic embedder for fast tests of clustering and lifecycle logic (the real model is tested too)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from an_agent.schemas.embedding import Vectors, normalise_rows

_STOP = {"a", "an", "the", "to", "of", "in", "on", "is", "are", "for", "and", "please", "me", "my", "with", "at"}


class FakeEmbedder:
    """Bag of content words hashed into 64 dimensions: texts sharing words are similar, others ~orthogonal.

    Deterministic (sha1, not Python's salted hash) and instant, for tests of clustering and lifecycle
    logic; the real model is tested separately (marked slow).
    """

    dimension = 64

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                if word not in _STOP:
                    out[row, int(hashlib.sha1(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        return normalise_rows(out)
