"""Unit centroids of one scenario's clusters, kept contiguous for nearest-centroid search (`pool`)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]


class CentroidIndex:
    """Unit centroids of one scenario's clusters, kept contiguous for nearest-centroid search.

    Rows ``[0, len)`` are the live centroids (removal moves the last row into the hole), so a search is
    one matrix-vector product over exactly the live clusters.
    """

    def __init__(self, dimension: int, capacity: int = 64) -> None:
        self._m = np.zeros((capacity, dimension), dtype=np.float32)
        self._ids: list[str] = []
        self._row: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def put(self, cluster_id: str, unit: Vector) -> None:
        row = self._row.get(cluster_id)
        if row is None:
            row = len(self._ids)
            if row == len(self._m):
                self._m = np.vstack([self._m, np.zeros_like(self._m)])
            self._row[cluster_id] = row
            self._ids.append(cluster_id)
        self._m[row] = unit

    def remove(self, cluster_id: str) -> None:
        row = self._row.pop(cluster_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._m[row] = self._m[last]
            self._ids[row] = moved
            self._row[moved] = row
        self._ids.pop()
        self._m[last] = 0.0

    def similarities(self, unit: Vector) -> tuple[list[str], npt.NDArray[np.float32]]:
        """(cluster ids, cosine similarity of each centroid to ``unit``)."""
        return list(self._ids), self._m[: len(self._ids)] @ unit

    def nearest_k(self, unit: Vector, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (cluster id, similarity) pairs, most similar first."""
        count = len(self._ids)
        if count == 0:
            return []
        sims = self._m[:count] @ unit
        k = min(k, count)
        top = np.argpartition(-sims, k - 1)[:k]
        return sorted(((self._ids[int(i)], float(sims[int(i)])) for i in top), key=lambda t: -t[1])

    def screen(self, units: Matrix) -> tuple[list[str], Matrix]:
        """(cluster ids, similarity of each centroid (rows) to each of ``units`` (columns)): one product."""
        count = len(self._ids)
        return list(self._ids), self._m[:count] @ units.T

    def similarities_of(self, cluster_ids: Sequence[str], unit: Vector) -> Matrix:
        """Similarity of ``unit`` to the centroids of ``cluster_ids`` (all in the index)."""
        return self._m[[self._row[c] for c in cluster_ids]] @ unit

    def nearest(self, unit: Vector, exclude: str | None = None) -> tuple[str | None, float]:
        """The most similar centroid and its similarity (None, -inf when there is none)."""
        count = len(self._ids)
        if count == 0 or (count == 1 and exclude in self._row):
            return None, -math.inf
        sims = self._m[:count] @ unit
        if exclude is not None and exclude in self._row:
            sims[self._row[exclude]] = -np.inf
        best = int(np.argmax(sims))
        return self._ids[best], float(sims[best])
