"""The state the evolution engine's parts share: store, settings, live pools, patches, event outbox.

`EvolutionEngine` (the facade) owns one `EngineState` and hands it to its parts (`ingest.PoolKeeper`,
`patching.PatchMaker`, `stewardship.KeySteward`); each part reads and writes it under the engine's
lock, inside the engine's store transaction. Events are queued here and delivered by the facade once
the transaction has committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from an_agent.clock import Clock
from an_agent.errors import SchemaError
from an_agent.evolution.boilerplate import content_text
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.patches import Patch
from an_agent.evolution.policy import UpdatePolicy
from an_agent.evolution.pool import Cluster, SchemaPool, Vector
from an_agent.evolution.trigger import GateResult
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import KeyDef
from an_agent.store.evolution import ClusterRow, EvolutionStore

DAY = 86400.0


class AlignmentJudge:
    """Judges ``semantic_alignment_accuracy`` for one payload's use of a patch key.

    The draft suggests an internal LLM or a manual audit sampler; this offline default counts a use as
    aligned when the value conforms to the key and the same payload did not also spell the intent out
    in ``other`` (a fragment that joined the key's source cluster), which is the observable sign that the
    client did not trust or understand the key. Subclass to plug in an LLM or an audit.
    """

    def aligned(self, key: KeyDef, value_conforms: bool, restated_in_other: bool) -> bool:
        return value_conforms and not restated_in_other


class CachedEmbedder:
    """Remembers the vectors of up to ``limit`` texts (oldest forgotten first), and of recent fragments.

    Synthesis embeds the same texts again and again (key anchors, allowed values, a cluster's
    fragments and their candidate phrases): each is computed once. Each `embed` call pays a forward
    pass's fixed cost, so a caller that knows what it will need embeds it ahead in one call
    (`prefetch`). The pool's fragments were embedded at ingest: `remember` keeps the vectors of the
    last ``recent_limit`` of them (apart, so that a stream of fragments does not push the anchors out),
    and synthesis finds its cluster's newest fragments there instead of embedding them again. A vector
    is the model's for the text, whichever call computed it (equal to float rounding).
    """

    def __init__(self, inner: Embedder, limit: int = 20_000, recent_limit: int = 2_048) -> None:
        self._inner = inner
        self._limit = limit
        self._recent_limit = recent_limit
        self._cache: dict[str, Vector] = {}
        self._recent: dict[str, Vector] = {}

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def remember(self, texts: Sequence[str], vectors: Vectors) -> None:
        """Keep these (text, vector) pairs of freshly embedded fragments among the recent ones."""
        for text, vector in zip(texts, vectors, strict=True):
            self._recent.pop(text, None)  # re-inserted: newest last
            self._recent[text] = vector
        _trim(self._recent, self._recent_limit)

    def fragments(self, texts: Sequence[str]) -> Vectors:
        """The vectors of pool fragments: those remembered at ingest, else their `content_text`'s (as at ingest)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        content = {t: content_text(t) for t in texts if t not in self._recent}
        self._fill(list(content.values()))
        out = np.stack([self._recent[t] if t in self._recent else self._cache[content[t]] for t in texts])
        _trim(self._cache, self._limit)
        return out

    def prefetch(self, texts: Sequence[str]) -> None:
        """Embed, in one call, those of ``texts`` not known yet."""
        self._fill(texts)
        _trim(self._cache, self._limit)

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        self._fill(texts)
        out = np.stack([self._cache[t] if t in self._cache else self._recent[t] for t in texts])
        _trim(self._cache, self._limit)
        return out

    def _fill(self, texts: Sequence[str]) -> None:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache and t not in self._recent]
        if todo:
            for text, vector in zip(todo, self._inner.embed(todo), strict=True):
                self._cache[text] = vector


def _trim(cache: dict[str, Vector], limit: int) -> None:
    while len(cache) > limit:
        del cache[next(iter(cache))]


@dataclass
class EngineState:
    """Everything the engine's parts share (see the module docstring)."""

    store: EvolutionStore
    embedder: Embedder
    phrases: CachedEmbedder  # synthesis re-embeds the same anchors and phrases
    registry: TemplateRegistry
    config: EvolutionConfig
    clock: Clock
    policy: UpdatePolicy
    judge: AlignmentJudge
    keep_history: bool
    pools: dict[str, SchemaPool] = field(default_factory=dict)
    patches: dict[str, Patch] = field(default_factory=dict)
    outbox: list[EvolutionEvent] = field(default_factory=list)
    # Triggers whose synthesis is due: cluster_id -> (schema_id, gate, trigger time). Synthesis runs off
    # the ingest path (`EvolutionEngine.synthesise_due`); lost on restart, the gate fires again then.
    due: dict[str, tuple[str, GateResult, float]] = field(default_factory=dict)

    def emit(self, event: EvolutionEvent) -> None:
        """Queue an event; the facade delivers it after the transaction commits."""
        self.outbox.append(event)

    def pool(self, schema_id: str) -> SchemaPool:
        """The pool of ``schema_id`` (created empty on first use)."""
        pool = self.pools.get(schema_id)
        if pool is None:
            pool = self.pools[schema_id] = SchemaPool(schema_id, self.embedder.dimension, self.config)
        return pool

    def merge_clusters(self, a: Cluster, b: Cluster, now: float, why: str) -> tuple[Cluster, Cluster]:
        """Merge two live clusters of one schema in the pool and the store; (survivor, absorbed).

        The survivor is `SchemaPool.merge`'s (the one with a patch, else the larger); the absorbed one's
        fragments move to it, its queue entry passes to it, and a ``clusters-merged`` event says which
        merged into which and ``why``.
        """
        keep, gone = self.pool(a.schema_id).merge(a, b, now)
        self.store.move_fragments(gone.cluster_id, keep.cluster_id)
        self.store.delete_cluster(gone.cluster_id, with_fragments=False)
        queued_ids = {q.cluster_id for q in self.store.queue()}
        if gone.cluster_id in queued_ids:
            self.store.dequeue(gone.cluster_id)
            if keep.state == "queued" and keep.cluster_id not in queued_ids:
                top, share = keep.top_client()
                personal = top if share >= self.config.personal_share else None
                self.store.enqueue(keep.cluster_id, keep.schema_id, personal, now)
        self.emit(
            EvolutionEvent(
                "clusters-merged",
                now,
                keep.schema_id,
                cluster_id=keep.cluster_id,
                detail=f"{gone.cluster_id} merged into {keep.cluster_id} ({why})",
            )
        )
        return keep, gone

    def live_cluster(self, schema_id: str, cluster_id: str) -> Cluster | None:
        pool = self.pools.get(schema_id)
        return pool.clusters.get(cluster_id) if pool else None

    def save_cluster(self, c: Cluster) -> None:
        self.store.save_cluster(
            ClusterRow(
                c.cluster_id,
                c.schema_id,
                c.state,
                c.size,
                c.heat,
                c.heat_at,
                c.created,
                c.last_seen,
                c.vector_sum.astype(np.float32).tobytes(),
            )
        )

    def save_patch(self, patch: Patch) -> None:
        self.store.save_patch(patch.to_row())
        for pk in patch.keys:
            self.store.save_key(pk.to_row())

    def applicable(self, schema_id: str, client_id: str | None) -> list[Patch]:
        """Active patches with a published key that apply to ``client_id`` (global and its own), oldest first."""
        return sorted(
            (
                p
                for p in self.patches.values()
                if p.schema_id == schema_id
                and p.state == "active"
                and p.client_id in (None, client_id)
                and any(k.published for k in p.keys)
            ),
            key=lambda p: (p.created, p.patch_id),
        )

    def compat_keys(self, schema_id: str, client_id: str | None) -> dict[str, KeyDef]:
        """Withdrawn keys still accepted (compatibility window) for this client."""
        out: dict[str, KeyDef] = {}
        for patch in self.patches.values():
            if patch.schema_id != schema_id or patch.client_id not in (None, client_id):
                continue
            for pk in patch.keys:
                if pk.kind == "new" and pk.state == "withdrawn":
                    out[pk.key.key_name] = pk.key
        return out

    def require_patch(self, patch_id: str) -> Patch:
        patch = self.patches.get(patch_id)
        if patch is None:
            raise SchemaError(f"no patch {patch_id!r}", [f"{patch_id}: unknown patch"])
        return patch
