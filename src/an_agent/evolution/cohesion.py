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
2. **a second idea**, in two forms. *A small group riding on the intent*: the cluster is split in two
   (spherical 2-means, tried from every fragment as a seed, the split with the largest gap between the
   small group's inner similarity and its similarity to the rest is kept); a small group of >=
   ``SUBGROUP_MIN`` fragments whose mean similarity to the rest is below ``SUBGROUP_BETWEEN`` and below
   ``SUBGROUP_RATIO`` times the rest's own inner similarity is a different recurring idea (a weak
   intent that rode in on shared words), not a paraphrase of this one. *Two ideas of comparable size*
   (a merge of two intents worded as loose, varied instances: obstructions and temporary cells):
   2-means from the centroid finds nothing there, so the cluster is also bisected spectrally
   (`_two_ideas`); when its halves (>= ``TWO_IDEAS_MIN`` fragments each) score below
   ``TWO_IDEAS_BETWEEN`` across, below ``TWO_IDEAS_RATIO`` times *each* half's inner similarity, and
   have clients of their own (at most ``TWO_IDEAS_SHARED_CLIENTS`` of the fragments from a client that
   wrote in both halves), the smaller half is the second idea, however large (5 of the 12 fragments
   left after outliers on the recall corpus). Either way it is set aside. Two fragments are never a
   second idea: pairs of paraphrases that share a word (``water meters`` / ``utility meters``) look
   exactly like that. Nor are the groups of a closed set: fragments naming ``battery`` and those naming
   ``mains`` split apart too (and a fragment naming a rare value looks like an outlier), but the values
   fill one slot: synthesis takes back the set-aside fragments that differ from the core only by the
   value they name (`value_fragments`, then `rejoin`), not those that merely contain a candidate word.

`Core.purity_proxy` (core size / cluster size: the replay's ``core_share``) and `Core.cohesion` (mean
similarity of the core to its centroid) are what the replay and the calibration report; a patch needs a
core whose cohesion reaches ``min_cohesion`` (the trigger's own condition, now on the fragments that
will make the key). Step 1's two cuts, computed on the core, are its `Admission` test: after its patch a
cluster takes only fragments that pass it (`release`). Calibration: docs/evolution.md, "Noise rejection".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from an_agent.evolution.alternatives import word_stem
from an_agent.schemas.embedding import Embedder, Vectors

NEIGHBOURS = 3  # other fragments a fragment is compared with (mean of its best similarities)
OUTLIER_STD = 1.0  # standard deviations below the cluster's mean, on both views
OUTLIER_FLOOR = 0.50  # leave-one-out centroid similarity above which a fragment is never an outlier
SUBGROUP_MIN = 3  # fragments a second idea needs (pairs of paraphrases look like two ideas too)
SUBGROUP_BETWEEN = 0.30  # mean similarity of a second idea to the rest is below this ...
SUBGROUP_RATIO = 0.75  # ... and below this share of the rest's inner similarity
TWO_IDEAS_BETWEEN = 0.25  # a bisection's two groups are two ideas when across they score below this ...
TWO_IDEAS_RATIO = 0.70  # ... and below this share of *each* group's inner similarity
TWO_IDEAS_SHARED_CLIENTS = 0.25  # ... and at most this share of fragments from clients that wrote in both
TWO_IDEAS_MIN = 5  # ... each half could recur on its own: as many fragments as the gate's default 5 clients
VALUE_HOLD = 0.80  # a set-aside group that keeps less of its inner similarity without its value words was values
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


def core_of(vectors: Vectors, clients: Sequence[str] | None = None) -> Core:
    """The core of a cluster given its fragments' unit ``vectors`` (module docstring).

    ``clients``: who sent each fragment; without them two ideas of comparable size are not looked for.
    """
    n = len(vectors)
    if n < 4:
        return Core(tuple(range(n)), (), (), cohesion_of(vectors), n)
    outliers = outliers_of(vectors)
    kept = [i for i in range(n) if i not in outliers]
    senders = [clients[i] for i in kept] if clients is not None else None
    second = [kept[i] for i in _second_idea(vectors[kept], senders)]
    members = tuple(i for i in kept if i not in second)
    return Core(members, tuple(sorted(outliers)), tuple(sorted(second)), cohesion_of(vectors[list(members)]), n)


def rejoin(core: Core, vectors: Vectors, indexes: set[int]) -> Core:
    """``core`` with the set-aside fragments ``indexes`` taken back (they name values of the key's slot)."""
    members = tuple(sorted({*core.members, *indexes}))
    outliers = tuple(i for i in core.outliers if i not in indexes)
    second = tuple(i for i in core.second_idea if i not in indexes)
    return Core(members, outliers, second, cohesion_of(vectors[list(members)]), core.size)


def set_aside(core: Core, vectors: Vectors, indexes: set[int]) -> Core:
    """``core`` without the members ``indexes`` (they count as outliers: they leave the cluster at its patch)."""
    members = tuple(i for i in core.members if i not in indexes)
    outliers = tuple(sorted({*core.outliers, *indexes}))
    return Core(members, outliers, core.second_idea, cohesion_of(vectors[list(members)]), core.size)


def value_fragments(
    core: Core,
    texts: Sequence[str],
    vectors: Vectors,
    embedder: Embedder,
    closed_set: Callable[[Sequence[int]], Sequence[Any]],
) -> set[int]:
    """The set-aside fragments that name a value of the core's slot rather than say something else.

    ``closed_set(indexes)``: what each of those fragments names of the closed set their texts make
    (None: no value; all None: no closed set). Taking back every set-aside fragment that names a value
    of the whole cluster's set is wrong when the set spans two ideas (obstructions and temporary cells
    share "cell", "tower", "main": an enumeration of both). So:

    - a **second idea** that names values is taken back when what held it together was its value word:
      with the value words taken out of its texts (embedded again), its inner similarity falls below
      ``VALUE_HOLD`` x what it was ("switched to generator", "a portable generator is feeding the site"
      are little alike without "generator"). A second idea that keeps its inner similarity without the
      word ("trees in front of the antenna", "a billboard right in front of the panel") stays out;
    - an **outlier** is taken back when it names a value (a rare value looks like an outlier) of the
      closed set of the fragments that stay: the whole cluster's when the second idea was values or
      there is none, else the set of the core and the outliers alone, asked again.
    """
    values = list(closed_set(range(len(texts))))
    second = [i for i in core.second_idea if isinstance(values[i], str)]
    kept: set[int] = set()
    if len(second) >= 2:
        before = _inner(vectors[second] @ vectors[second].T, list(range(len(second))))
        masked = embedder.embed([_without(texts[i], values[i]) for i in second])
        if _inner(masked @ masked.T, list(range(len(second)))) < VALUE_HOLD * before:
            kept.update(second)
    if not set(core.second_idea) <= kept:
        staying = sorted({*core.members, *core.outliers, *kept})
        values = [None] * len(texts)
        for i, value in zip(staying, closed_set(staying), strict=True):
            values[i] = value
    kept.update(i for i in core.outliers if isinstance(values[i], str))
    return kept


_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9\-]*|[^A-Za-z\s]+")


def _without(text: str, value: Any) -> str:
    """``text`` without the words that spell ``value`` (any inflection: batteries / battery)."""
    if not isinstance(value, str):
        return text
    forms = {word_stem(w) for w in re.split(r"[\s_]+", value.lower()) if w}
    kept = [t for t in _TOKEN.findall(text) if word_stem(t.lower()) not in forms]
    return " ".join(kept)


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


def outliers_of(vectors: Vectors) -> set[int]:
    """Indexes of the outliers among unit ``vectors`` (step 1 of the module docstring; none below 4)."""
    if len(vectors) < 4:
        return set()
    loo, knn = _views(vectors)
    cuts = _cuts(loo, knn)
    return {i for i in range(len(vectors)) if not cuts.admits(float(loo[i]), float(knn[i]))}


def _second_idea(vectors: Vectors, clients: Sequence[str] | None) -> list[int]:
    """Indexes of a distinct small group, or of the smaller of two ideas (module docstring, step 2), or none."""
    n = len(vectors)
    if n < 2 * SUBGROUP_MIN:
        return []
    sims = vectors @ vectors.T
    return _small_group(vectors, sims) or (_two_ideas(sims, clients) if clients is not None else [])


def _two_ideas(sims: npt.NDArray[np.float32], clients: Sequence[str]) -> list[int]:
    """The smaller half of the cluster's best bisection when the halves are two ideas, else none.

    2-means from the centroid finds a small group riding on a tight intent; two ideas of comparable size
    that share a loose, varied wording (a cluster made by a merge) pull the centroid between them and
    2-means settles on single fragments. The bisection here is spectral: fragments ordered by the
    Fiedler vector of the similarity graph (negative similarities as none), cut where the mean
    similarity across, relative to the looser half's inner similarity, is lowest.

    On MiniLM the similarities alone do not tell two ideas from two wordings of one loose intent (the
    recall corpus's obstructions / temporary cells and the typed2 corpus's "remote site, VSAT satellite
    backhaul" / "backhaul via dark fibre" halves both score 0.22 across, 0.35 inside). What does: a
    second idea recurs among senders of its own, while a client that writes one intent twice words it
    both ways. So the halves must also have their own clients: at most ``TWO_IDEAS_SHARED_CLIENTS`` of
    the fragments come from a client that wrote in both halves.
    """
    n = len(sims)
    weights = np.clip(sims, 0.0, None).astype(np.float64)
    np.fill_diagonal(weights, 0.0)
    degree = weights.sum(axis=1)
    if (degree <= 0).any():
        return []
    scale = 1.0 / np.sqrt(degree)
    laplacian = np.eye(n) - weights * scale[:, None] * scale[None, :]
    _, eigenvectors = np.linalg.eigh(laplacian)
    order = [int(i) for i in np.argsort(eigenvectors[:, 1] * scale, kind="stable")]
    # Every cut of the order at once, from prefix sums (O(n^2), not a block mean per cut): with S the
    # similarities in that order, the block sums of the first k rows/columns and of the rest.
    ordered = sims[np.ix_(order, order)].astype(np.float64)
    rows = np.cumsum(ordered.sum(axis=1))  # similarities from the first k fragments to all
    head = np.cumsum(2.0 * np.tril(ordered, -1).sum(axis=1) + np.diag(ordered))  # within the first k
    total = float(ordered.sum())
    k = np.arange(1, n + 1, dtype=np.float64)
    diagonal = np.cumsum(np.diag(ordered))
    cross = rows - head
    tail = total - head - 2.0 * cross
    with np.errstate(divide="ignore", invalid="ignore"):
        between = cross / (k * (n - k))
        first = (head - diagonal) / (k * (k - 1))
        rest = (tail - (diagonal[-1] - diagonal)) / ((n - k) * (n - k - 1))
        ratio = between / np.maximum(np.minimum(first, rest), 1e-6)
    cuts = np.arange(TWO_IDEAS_MIN, n - TWO_IDEAS_MIN + 1)  # sizes of the first half
    if not len(cuts):
        return []
    cut = int(cuts[np.argmin(ratio[cuts - 1])])
    a, b = order[:cut], order[cut:]
    if between[cut - 1] >= TWO_IDEAS_BETWEEN or ratio[cut - 1] >= TWO_IDEAS_RATIO:
        return []
    both = {clients[i] for i in a} & {clients[i] for i in b}
    if sum(1 for c in clients if c in both) > TWO_IDEAS_SHARED_CLIENTS * n:
        return []
    return sorted(a if len(a) <= len(b) else b)


def _small_group(vectors: Vectors, sims: npt.NDArray[np.float32]) -> list[int]:
    """A small group riding on the cluster's intent (2-means from the centroid; module docstring)."""
    n = len(vectors)
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
