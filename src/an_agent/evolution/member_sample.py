"""A cluster's member sample (its newest member vectors) kept as one contiguous matrix (`pool`).

The member check compares a fragment with the newest ``limit`` members of a cluster. Kept as a deque of
vectors, the sample had to be stacked into a matrix again after every change (every join) before a
product could use it: for a cluster that grows, that copy was most of the check's cost, and it grew
with the clusters. Here the rows live in one buffer, oldest first, and the sample is a slice of it:
adding a member writes one row; when the buffer is full, the newest ``limit - 1`` rows move to a new
buffer (once per ``limit / 2`` additions at most: the buffer holds 1.5 times the limit).

The products see exactly the matrix the stacked deque gave (same rows, same order), so every
similarity, and every decision made from it, is the one of the deque. A row, once written, is never
written again (a full buffer is replaced, not reused; `MemberSample.clear` moves the start, not the
end), so the row views that iteration hands out stay valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import numpy.typing as npt

Vector = npt.NDArray[np.float32]
Matrix = npt.NDArray[np.float32]


class MemberSample:
    """The newest ``limit`` of the vectors added, oldest first, as rows of one float32 matrix.

    Used as the deque it replaces: `extend`, `clear`, ``len``, truth, iteration (rows, oldest first).
    Vectors are stored as float32 (members are unit embeddings).
    """

    __slots__ = ("_buf", "_end", "_start", "limit")

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a member sample holds at least one vector")
        self.limit = limit
        self._buf: Matrix | None = None
        self._start = 0
        self._end = 0

    def __len__(self) -> int:
        return self._end - self._start

    def __bool__(self) -> bool:
        return self._end > self._start

    def __iter__(self) -> Iterator[Vector]:
        return iter(self.matrix)

    @property
    def matrix(self) -> Matrix:
        """The sample, one row per member, oldest first (a view: do not write to it)."""
        if self._buf is None:
            return np.zeros((0, 0), dtype=np.float32)
        return self._buf[self._start : self._end]

    def extend(self, units: Iterable[Vector] | Matrix) -> None:
        """Add vectors (rows of a matrix, or any iterable of vectors); the oldest leave beyond ``limit``."""
        if isinstance(units, np.ndarray) and units.ndim == 2:
            block = units
        else:
            rows = list(units)
            if not rows:
                return
            block = np.stack(rows)
        if len(block) == 0:
            return
        block = block[-self.limit :]
        m = len(block)
        buf = self._buf
        if buf is None or buf.shape[1] != block.shape[1] or self._end + m > len(buf):
            # A new buffer (never an overwrite: views handed out stay valid). Twice what it must hold,
            # at most 1.5 times the limit: a small cluster costs a few rows, a full one moves its rows
            # once per ``limit / 2`` additions.
            keep = min(len(self), self.limit - m) if buf is not None and buf.shape[1] == block.shape[1] else 0
            fresh = np.empty((min(self.limit + self.limit // 2, 2 * (keep + m)), block.shape[1]), dtype=np.float32)
            if keep:
                assert buf is not None
                fresh[:keep] = buf[self._end - keep : self._end]
            self._buf, self._start, self._end = fresh, 0, keep
            buf = fresh
        buf[self._end : self._end + m] = block
        self._end += m
        self._start = max(self._start, self._end - self.limit)

    def clear(self) -> None:
        """Empty the sample (its rows stay where they are, unread)."""
        self._start = self._end

    def affinity(self, unit: Vector, neighbours: int) -> float:
        """Mean similarity of ``unit`` to its ``neighbours`` most similar members (1 for an empty sample)."""
        if self._end == self._start:
            return 1.0
        sims = self.matrix @ unit
        k = min(neighbours, len(sims))
        return float(np.mean(np.partition(sims, len(sims) - k)[-k:]))

    def affinities(self, units: Matrix, neighbours: int) -> npt.NDArray[np.float32]:
        """`affinity` of each row of ``units``, from one matrix product (ones for an empty sample).

        The product rounds differently from one product per row (last bit of float32): decisions made
        from these agree with `affinity`'s except within ~1e-7 of a threshold.
        """
        if self._end == self._start:
            return np.ones(len(units), dtype=np.float32)
        sims = units @ self.matrix.T
        n = sims.shape[1]
        k = min(neighbours, n)
        means: npt.NDArray[np.float32] = np.partition(sims, n - k, axis=1)[:, -k:].mean(axis=1)
        return means
