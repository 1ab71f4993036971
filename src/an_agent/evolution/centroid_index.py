"""Unit centroids of one scenario's clusters, kept contiguous for nearest-centroid search (`pool`).

`CentroidIndex` holds the live centroids as rows of one matrix; `Screen` holds the similarities of a
batch of vectors to those rows, taken in one matrix product when the batch begins, and keeps them exact
while the batch changes the clusters (the changed clusters' centroids are copied to a small matrix of
their own, re-measured per vector).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]


class CentroidIndex:
    """Unit centroids of one scenario's clusters, kept contiguous for nearest-centroid search.

    Rows ``[0, len)`` are the live centroids (removal moves the last row into the hole), so a search is
    one matrix-vector product over exactly the live clusters. Beside each centroid: the cluster's
    eviction keys (heat, heat_at, last_seen, as given to `put`) and the order in which the ids were
    first put, so that eviction ranks every cluster with array operations (`eviction_keys`).
    """

    def __init__(self, dimension: int, capacity: int = 64) -> None:
        self._m = np.zeros((capacity, dimension), dtype=np.float32)
        self._keys = np.zeros((capacity, 3), dtype=np.float64)
        self._seq = np.zeros(capacity, dtype=np.int64)
        self._next_seq = 0
        self._ids: list[str] = []
        self._row: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def dimension(self) -> int:
        return int(self._m.shape[1])

    def put(self, cluster_id: str, unit: Vector, keys: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> None:
        """Store (or replace) the centroid and eviction keys (heat, heat_at, last_seen) of ``cluster_id``."""
        row = self._row.get(cluster_id)
        if row is None:
            row = len(self._ids)
            if row == len(self._m):
                self._m = np.vstack([self._m, np.zeros_like(self._m)])
                self._keys = np.vstack([self._keys, np.zeros_like(self._keys)])
                self._seq = np.concatenate([self._seq, np.zeros_like(self._seq)])
            self._row[cluster_id] = row
            self._ids.append(cluster_id)
            self._seq[row] = self._next_seq
            self._next_seq += 1
        self._m[row] = unit
        self._keys[row] = keys

    def eviction_keys(self) -> tuple[list[str], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """(ids, their (heat, heat_at, last_seen) rows, the order in which they were first put): views."""
        count = len(self._ids)
        return self._ids, self._keys[:count], self._seq[:count]

    def vector(self, cluster_id: str) -> Vector | None:
        """The centroid stored for ``cluster_id`` (a view of its row), or None."""
        row = self._row.get(cluster_id)
        return None if row is None else self._m[row]

    def remove(self, cluster_id: str) -> None:
        row = self._row.pop(cluster_id, None)
        if row is None:
            return
        last = len(self._ids) - 1
        if row != last:
            moved = self._ids[last]
            self._m[row] = self._m[last]
            self._keys[row] = self._keys[last]
            self._seq[row] = self._seq[last]
            self._ids[row] = moved
            self._row[moved] = row
        self._ids.pop()
        self._m[last] = 0.0

    def nearest_k(self, unit: Vector, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (cluster id, similarity) pairs, most similar first."""
        count = len(self._ids)
        if count == 0:
            return []
        sims = self._m[:count] @ unit
        k = min(k, count)
        top = np.argpartition(-sims, k - 1)[:k]
        return sorted(((self._ids[int(i)], float(sims[int(i)])) for i in top), key=lambda t: -t[1])

    def screen(self, units: Matrix, floor: float) -> Screen:
        """A `Screen` of ``units`` (rows) against the centroids as they are now: one matrix product."""
        count = len(self._ids)
        return Screen(list(self._ids), dict(self._row), self._m[:count] @ units.T, self.dimension, floor)

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


class Screen:
    """Similarities of a batch of vectors (columns) to the centroids as they were when the batch began.

    Only similarities at or above ``floor`` are asked for (a caller breaks at the first candidate below
    its threshold): when the screen opens, one comparison over the whole product lists, per column, the
    rows that reach ``floor``. A cluster changed since (started, joined, merged, removed: `touch`) is
    stale there; the changed clusters still live are kept apart, their current centroids as rows of a
    small contiguous matrix in the order they first changed, and re-measured per vector. Every other
    entry is exact, so screening changes no decision; a vector costs a look at its few listed rows and
    one product with the changed clusters (a few per vector of the batch), whatever the number of
    clusters.
    """

    def __init__(self, ids: list[str], rows: dict[str, int], sims: Matrix, dimension: int, floor: float) -> None:
        """``ids``/``rows``: the clusters of the product's rows (both ways), ``sims``: (clusters, vectors)."""
        self.ids = ids
        self.floor = floor
        self.rows = rows  # unchanged clusters only
        self._stale = np.zeros(len(ids), dtype=bool)
        # Listed from just below the floor: float32 rounding must not drop a candidate (the caller's own
        # test, in float64, decides). Hits are few: found in the flat product, then grouped by column.
        listed = np.float32(floor) - np.float32(1e-6)
        flat = np.flatnonzero(sims >= listed)
        by_column = np.argsort(flat % sims.shape[1], kind="stable")
        flat = flat[by_column]
        self._hit_rows: npt.NDArray[np.intp] = flat // sims.shape[1]
        self._hit_sims: Matrix = sims.reshape(-1)[flat]
        self._hit_start: npt.NDArray[np.intp] = np.searchsorted(flat % sims.shape[1], np.arange(sims.shape[1] + 1))
        self._changed_ids: list[str] = []
        self._changed_row: dict[str, int] = {}
        self._changed = np.empty((16, dimension), dtype=np.float32)

    def unchanged(self, cluster_id: str) -> bool:
        """True when ``cluster_id`` was screened and has not changed since (its row is exact)."""
        return cluster_id in self.rows

    def alone(self, column: int, cluster_id: str) -> bool:
        """True when no cluster but ``cluster_id`` itself can be at or above ``floor`` for ``column``.

        (No cluster changed since the screen opened, and ``column`` lists no other unchanged one.)
        """
        if self._changed_ids:
            return False
        own = self.rows.get(cluster_id, -1)
        start, end = self._hit_start[column], self._hit_start[column + 1]
        return all(row == own or self._stale[row] for row in self._hit_rows[start:end].tolist())

    def touch(self, cluster_id: str, centroid: Vector | None) -> None:
        """Note a change of ``cluster_id``: its ``centroid`` now, or None when it left the index."""
        row = self.rows.pop(cluster_id, None)
        if row is not None:
            self._stale[row] = True
        at = self._changed_row.get(cluster_id)
        if centroid is not None:
            if at is None:
                at = len(self._changed_ids)
                if at == len(self._changed):
                    self._changed = np.vstack([self._changed, np.empty_like(self._changed)])
                self._changed_ids.append(cluster_id)
                self._changed_row[cluster_id] = at
            self._changed[at] = centroid
        elif at is not None:
            # Keep the others' order (it breaks ties as before): close the gap.
            count = len(self._changed_ids)
            self._changed[at : count - 1] = self._changed[at + 1 : count]
            del self._changed_ids[at]
            del self._changed_row[cluster_id]
            for i in range(at, count - 1):
                self._changed_row[self._changed_ids[i]] = i

    def nearest(self, column: int, unit: Vector, k: int) -> list[tuple[str, float]]:
        """Up to ``k`` (cluster id, similarity) pairs for the vector of ``column`` (= ``unit``), best first.

        Every cluster at or above ``floor`` is a candidate (some just below may be too); ties keep the
        order of the unchanged clusters' rows, then of the changed ones.
        """
        start, end = self._hit_start[column], self._hit_start[column + 1]
        rows, values = self._hit_rows[start:end], self._hit_sims[start:end]
        if end > start:
            fresh = ~self._stale[rows]
            rows, values = rows[fresh], values[fresh]
        count = len(self._changed_ids)
        if count:
            values = np.concatenate([values, self._changed[:count] @ unit])
        if not len(values):
            return []
        order = np.argsort(-values, kind="stable")[:k]
        unchanged = len(rows)
        return [
            (self.ids[int(rows[i])] if i < unchanged else self._changed_ids[i - unchanged], float(values[i]))
            for i in (int(j) for j in order)
        ]
