"""The cohesion gate of patch synthesis: which of a triggered cluster's fragments make its intent.

Online clustering admits a fragment on its similarity to the centroid and to a few members; on MiniLM
the similarities of "paraphrase of the intent" and "one-off that shares a word with it" overlap, so a
cluster can hold a few fragments that do not say what the rest says. Before a patch is typed, named and
exemplified, synthesis takes the cluster's **core** (`core_of`) in two steps, both insensitive to how
many words a fragment shares with the intent (they compare the fragment with the *other* fragments):

1. **outliers**: a fragment is set aside when it is more than one standard deviation below the cluster
   on both views of its belonging — the similarity to the centroid of the *other* fragments (leave one
   out: its own vector no longer pulls the centroid towards it) and the mean of its ``NEIGHBOURS`` best
   similarities to other fragments — and below ``OUTLIER_FLOOR`` on the first. An intent's loosest
   paraphrase is low on one view but rarely on both; a one-off that joined through a shared word is.
2. **a second idea**: the cluster is split in two (spherical 2-means, tried from every fragment as a
   seed, the split with the largest gap between the small group's inner similarity and its similarity
   to the rest is kept). A small group of >= ``SUBGROUP_MIN`` fragments whose mean similarity to the
   rest is below ``SUBGROUP_BETWEEN`` and below ``SUBGROUP_RATIO`` times the rest's own inner
   similarity is a different recurring idea (a weak intent that rode in on shared words), not a
   paraphrase of this one: it is set aside. Two fragments are never a second idea: pairs of
   paraphrases that share a word (``water meters`` / ``utility meters``) look exactly like that. Nor
   are the groups of a closed set: fragments naming ``battery`` and those naming ``mains`` split
   apart too (and a fragment naming a rare value looks like an outlier), but the values fill one slot:
   synthesis checks that and takes back every set-aside fragment that names a value (`rejoin`).

`Core.purity_proxy` (core size / cluster size: the replay's ``core_share``) and `Core.cohesion` (mean
similarity of the core to its centroid) are what the replay and the calibration report; a patch needs a
core whose cohesion reaches ``min_cohesion`` (the trigger's own condition, now on the fragments that
will make the key). Step 1's two cuts, computed on the core, are its `Admission` test: after its patch a
cluster takes only fragments that pass it (`release`). Calibration: docs/evolution.md, "Noise rejection".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from an_agent.schemas.embedding import Vectors

NEIGHBOURS = 3  # other fragments a fragment is compared with (mean of its best similarities)
OUTLIER_STD = 1.0  # standard deviations below the cluster's mean, on both views
OUTLIER_FLOOR = 0.50  # leave-one-out centroid similarity above which a fragment is never an outlier
SUBGROUP_MIN = 3  # fragments a second idea needs (pairs of paraphrases look like two ideas too)
SUBGROUP_BETWEEN = 0.30  # mean similarity of a second idea to the rest is below this ...
SUBGROUP_RATIO = 0.75  # ... and below this share of the rest's inner similarity
_ITERATIONS = 10


@dataclass(frozen=True)
class Core:
    """The fragments that make a cluster's intent (indexes into the cluster's fragments) and why."""

    members: tuple[int, ...]
    outliers: tuple[int, ...]
    second_idea: tuple[int, ...]
    cohesion: float  # mean similarity of the core's fragments to the core's centroid
    size: int  # fragments examined

    @property
    def purity_proxy(self) -> float:
        """Share of the examined fragments that make the core (1.0: nothing was set aside)."""
        return len(self.members) / self.size if self.size else 0.0


def unit_centroid(vectors: Vectors) -> npt.NDArray[np.float32]:
    """The normalised sum of ``vectors`` (zero vector for an empty or cancelling set)."""
    total: npt.NDArray[np.float32] = vectors.sum(axis=0).astype(np.float32)
    norm = float(np.linalg.norm(total))
    return total / np.float32(norm) if norm else total


def cohesion_of(vectors: Vectors) -> float:
    """Mean similarity of unit ``vectors`` to their centroid (``|sum| / n``); 0 for none."""
    return float(np.linalg.norm(vectors.sum(axis=0))) / len(vectors) if len(vectors) else 0.0


def core_of(vectors: Vectors) -> Core:
    """The core of a cluster given its fragments' unit ``vectors`` (module docstring)."""
    n = len(vectors)
    if n < 4:
        return Core(tuple(range(n)), (), (), cohesion_of(vectors), n)
    outliers = _outliers(vectors)
    kept = [i for i in range(n) if i not in outliers]
    second = [kept[i] for i in _second_idea(vectors[kept])]
    members = tuple(i for i in kept if i not in second)
    return Core(members, tuple(sorted(outliers)), tuple(sorted(second)), cohesion_of(vectors[list(members)]), n)


def rejoin(core: Core, vectors: Vectors, indexes: set[int]) -> Core:
    """``core`` with the set-aside fragments ``indexes`` taken back (they name values of the key's slot)."""
    members = tuple(sorted({*core.members, *indexes}))
    outliers = tuple(i for i in core.outliers if i not in indexes)
    second = tuple(i for i in core.second_idea if i not in indexes)
    return Core(members, outliers, second, cohesion_of(vectors[list(members)]), core.size)


@dataclass(frozen=True)
class Admission:
    """The outlier test of a core, kept for the fragments that arrive after its patch (no drift).

    A fragment would be in the core unless it is below both cuts: its similarity to the centroid under
    ``centroid_floor`` and its mean similarity to its ``NEIGHBOURS`` nearest members under ``member_floor``.
    """

    centroid_floor: float
    member_floor: float

    def admits(self, centroid_similarity: float, member_affinity: float) -> bool:
        return centroid_similarity >= self.centroid_floor or member_affinity >= self.member_floor


def admission_of(vectors: Vectors) -> Admission | None:
    """The `Admission` of a core of unit ``vectors`` (None below 4 fragments, where no outlier is set aside)."""
    if len(vectors) < 4:
        return None
    loo, knn = _views(vectors)
    return _cuts(loo, knn)


def _views(vectors: Vectors) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    """Per fragment: leave-one-out centroid similarity and mean similarity to its nearest other fragments."""
    n = len(vectors)
    sims = vectors @ vectors.T
    np.fill_diagonal(sims, -np.inf)
    total = vectors.sum(axis=0)
    rest = total[None, :] - vectors
    norms = np.linalg.norm(rest, axis=1)
    loo = np.einsum("ij,ij->i", rest, vectors) / np.where(norms > 0, norms, 1.0)
    k = min(NEIGHBOURS, n - 1)
    knn = np.sort(sims, axis=1)[:, -k:].mean(axis=1)
    return loo, knn


def _cuts(loo: npt.NDArray[np.float32], knn: npt.NDArray[np.float32]) -> Admission:
    loo_cut = min(float(loo.mean() - OUTLIER_STD * loo.std()), OUTLIER_FLOOR)
    return Admission(loo_cut, float(knn.mean() - OUTLIER_STD * knn.std()))


def _outliers(vectors: Vectors) -> set[int]:
    loo, knn = _views(vectors)
    cuts = _cuts(loo, knn)
    return {i for i in range(len(vectors)) if not cuts.admits(float(loo[i]), float(knn[i]))}


def _second_idea(vectors: Vectors) -> list[int]:
    """Indexes of a distinct small group (module docstring, step 2), or none."""
    n = len(vectors)
    if n < 2 * SUBGROUP_MIN:
        return []
    sims = vectors @ vectors.T
    centroid = unit_centroid(vectors)
    best: tuple[float, list[int]] | None = None
    seen: set[tuple[int, ...]] = set()
    for seed in range(n):
        small = _two_means(vectors, centroid, seed)
        key = tuple(small)
        if key in seen or not SUBGROUP_MIN <= len(small) <= n - SUBGROUP_MIN:
            continue
        seen.add(key)
        rest = [i for i in range(n) if i not in small]
        between = float(sims[np.ix_(small, rest)].mean())
        inner_small = _inner(sims, small)
        inner_rest = _inner(sims, rest)
        if between < SUBGROUP_BETWEEN and between < SUBGROUP_RATIO * inner_rest:
            gap = inner_small - between
            if best is None or gap > best[0]:
                best = (gap, small)
    return best[1] if best is not None else []


def _two_means(vectors: Vectors, centroid: npt.NDArray[np.float32], seed: int) -> list[int]:
    """Spherical 2-means from (cluster centroid, one fragment); returns the smaller group's indexes."""
    a, b = centroid, vectors[seed]
    labels = np.zeros(len(vectors), dtype=bool)
    for _ in range(_ITERATIONS):
        new = (vectors @ b) > (vectors @ a)
        if not new.any() or new.all():
            return []
        if np.array_equal(new, labels):
            break
        labels = new
        a, b = unit_centroid(vectors[~labels]), unit_centroid(vectors[labels])
    group = np.flatnonzero(labels) if labels.sum() <= len(labels) / 2 else np.flatnonzero(~labels)
    return [int(i) for i in group]


def _inner(sims: npt.NDArray[np.float32], group: list[int]) -> float:
    """Mean similarity between distinct members of ``group``."""
    m = len(group)
    block = sims[np.ix_(group, group)]
    return float((block.sum() - np.trace(block)) / (m * (m - 1))) if m > 1 else 1.0
