"""The text-embedding contract shared by NL mapping (here) and schema evolution (`an_agent.evolution`).

The implementation backed by all-MiniLM-L6-v2 lives in `an_agent.evolution.embedder`; tests inject
small deterministic embedders that satisfy the same protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    """Turns texts into dense vectors.

    `embed` returns a float32 array of shape ``(len(texts), dimension)`` whose rows have unit L2 norm,
    so a dot product is the cosine similarity. It must be deterministic for a given text and safe to
    call from several threads one at a time (callers serialise).
    """

    @property
    def dimension(self) -> int:
        """Length of each vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit-norm vectors for ``texts`` (an empty sequence gives shape ``(0, dimension)``)."""
        ...


def normalise_rows(vectors: npt.NDArray[np.floating]) -> Vectors:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32."""
    out = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalised: Vectors = (out / norms).astype(np.float32)
    return normalised
