"""The schema self-evolution engine: one object a server agent (or the replay tool) drives.

What it does, per call:

`accept_payload`
    validate a structured data-param against the template the client sees (base + its patches);
    refuse it with `SchemaError` (nothing stored) or accept it: update the metrics of every published
    patch key, embed each sanitised ``other`` fragment into the Differential Semantic Pool, evaluate
    the dual-gate trigger of the clusters it joined, and synthesise, authorise and publish a patch when
    one fires (or queue the trigger when the convergence guard is full).
`template` / `schema_update_suggestion`
    what to serve to a client: the effective template, or its active patches for inline delivery.
`tick`
    time-driven work: lifecycle decisions that fell due, eviction of cold clusters, pruning.
`on_event`
    subscribe to `EvolutionEvent`s (patch published, key state changed, ...) for NETCONF notifications.

All state is written through an `EvolutionStore` within one transaction per call and restored by the
constructor, so a restart resumes where it stopped. All time comes from the injected clock. The engine
is thread-safe (one lock); events are delivered after the transaction commits, outside the lock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from an_agent.clock import Clock, SystemClock, to_rfc3339
from an_agent.errors import SchemaAccessDenied, SchemaError
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.lifecycle import KeyMetrics, KeyState, decide
from an_agent.evolution.patches import Patch, PatchKey, effective_template
from an_agent.evolution.policy import EVOLUTION_ACTOR, DefaultUpdatePolicy, SchemaChange, UpdatePolicy
from an_agent.evolution.pool import Cluster, SchemaPool, Vector
from an_agent.evolution.synthesis import (
    ExistingKey,
    find_conflict,
    induce_key,
    is_security_relevant,
    refine_description,
)
from an_agent.evolution.trigger import GateResult, evaluate_gate
from an_agent.schemas.embedding import Embedder
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.sanitize import sanitize_other
from an_agent.schemas.template import KeyDef, Template
from an_agent.schemas.validate import ValidatedPayload, validate_payload
from an_agent.store.evolution import ClusterRow, EvolutionStore

log = logging.getLogger("an_agent.evolution")

EventListener = Callable[[EvolutionEvent], None]
_SWEEP_EVERY = 256  # fragments between two eviction sweeps
_SYNTHESIS_FRAGMENTS = 200  # newest fragments of a cluster used to synthesise its key
_DAY = 86400.0


@dataclass(frozen=True)
class Acceptance:
    """An accepted payload: the validated content, where its fragments went, and the suggestion to return."""

    payload: ValidatedPayload
    cluster_ids: tuple[str, ...]
    suggestion: dict[str, Any] | None


@dataclass(frozen=True)
class ClusterInfo:
    """A cluster as reported by `EvolutionEngine.clusters` (heat decayed to now)."""

    cluster_id: str
    schema_id: str
    size: int
    distinct_clients: int
    heat: float
    state: str
    created: float
    last_seen: float


class AlignmentJudge:
    """Judges ``semantic_alignment_accuracy`` for one payload's use of a patch key.

    The draft suggests an internal LLM or a manual audit sampler; this offline default counts a use as
    aligned when the value conforms to the key and the same payload did not also spell the intent out
    in ``other`` (a fragment that joined the key's source cluster), which is the observable sign that the
    client did not trust or understand the key. Subclass to plug in an LLM or an audit.
    """

    def aligned(self, key: KeyDef, value_conforms: bool, restated_in_other: bool) -> bool:
        return value_conforms and not restated_in_other


class _CachedEmbedder:
    """Remembers the vectors of up to ``limit`` texts (oldest forgotten first)."""

    def __init__(self, inner: Embedder, limit: int = 20_000) -> None:
        self._inner = inner
        self._limit = limit
        self._cache: dict[str, Vector] = {}

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def embed(self, texts: Sequence[str]) -> Vector:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for text, vector in zip(todo, self._inner.embed(todo), strict=True):
                self._cache[text] = vector
        out = np.stack([self._cache[t] for t in texts])
        while len(self._cache) > self._limit:
            del self._cache[next(iter(self._cache))]
        return out


class EvolutionEngine:
    """Differential Semantic Pool, triggers, patch synthesis and lifecycle over one SQLite store.

    ``keep_history=True`` keeps evicted clusters and all fragments (the replay tool reports them);
    a long-running agent leaves it False so the database stays bounded.
    """

    def __init__(
        self,
        store: EvolutionStore,
        embedder: Embedder,
        *,
        registry: TemplateRegistry | None = None,
        config: EvolutionConfig | None = None,
        clock: Clock | None = None,
        policy: UpdatePolicy | None = None,
        judge: AlignmentJudge | None = None,
        keep_history: bool = False,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self._phrases = _CachedEmbedder(embedder)  # synthesis re-embeds the same anchors and phrases
        self.registry = registry or TemplateRegistry.default()
        self.config = config or EvolutionConfig()
        self.clock = clock or SystemClock()
        self.policy = policy or DefaultUpdatePolicy()
        self.judge = judge or AlignmentJudge()
        self.keep_history = keep_history
        self._lock = threading.RLock()
        self._listeners: list[EventListener] = []
        self._outbox: list[EvolutionEvent] = []
        self._pools: dict[str, SchemaPool] = {}
        self._patches: dict[str, Patch] = {}
        self._since_sweep = 0
        self._load()

    @classmethod
    def open(cls, path: Path | str, embedder: Embedder, **kwargs: Any) -> EvolutionEngine:
        """An engine over the SQLite file at ``path`` (created if missing); kwargs as for the constructor."""
        return cls(EvolutionStore(path), embedder, **kwargs)

    def close(self) -> None:
        self.store.close()

    # -- events --------------------------------------------------------------------------------
    def on_event(self, listener: EventListener) -> Callable[[], None]:
        """Call ``listener`` with every event from now on; returns a function that unsubscribes it.

        Listeners run in the thread that caused the event, after the state change is committed; an
        exception in a listener is logged and does not affect the engine.
        """
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _emit(self, event: EvolutionEvent) -> None:
        self._outbox.append(event)

    def _flush(self) -> None:
        with self._lock:
            events, self._outbox = self._outbox, []
            listeners = list(self._listeners)
        for event in events:
            for listener in listeners:
                try:
                    listener(event)
                except Exception:
                    log.exception("evolution event listener failed on %s", event.kind)

    # -- serving -------------------------------------------------------------------------------
    def template(self, scenario_or_id: str, client_id: str | None = None, *, record_delivery: bool = True) -> Template:
        """The template a client sees: the base template plus the published patches that apply to it.

        ``client_id=None`` gives the global view (no per-client patches). Delivering patch keys to a
        client is recorded for ``client_adoption_rate`` unless ``record_delivery`` is False.
        """
        base = self.registry.resolve(scenario_or_id)
        with self._lock:
            patches = self._applicable(base.schema_id, client_id)
            if client_id is not None and record_delivery and patches:
                with self.store.transaction():
                    self._note_delivery(client_id, patches)
            return effective_template(base, patches)

    def schema_update_suggestion(self, client_id: str, schema_id: str) -> dict[str, Any] | None:
        """The active patches that apply to ``client_id`` (global and its own), for a task result.

        ``{"schema_id": ..., "patches": [patch, ...]}`` with each patch as in the replay report, or
        None when no patch applies. Delivery is recorded for ``client_adoption_rate``.
        """
        with self._lock:
            patches = self._applicable(schema_id, client_id)
            if not patches:
                return None
            with self.store.transaction():
                self._note_delivery(client_id, patches)
            return {"schema_id": schema_id, "patches": [p.to_dict() for p in patches]}

    def compat_keys(self, schema_id: str, client_id: str | None) -> dict[str, KeyDef]:
        """Withdrawn keys still accepted (compatibility window) for this client."""
        with self._lock:
            out: dict[str, KeyDef] = {}
            for patch in self._patches.values():
                if patch.schema_id != schema_id or patch.client_id not in (None, client_id):
                    continue
                for pk in patch.keys:
                    if pk.kind == "new" and pk.state == "withdrawn":
                        out[pk.key.key_name] = pk.key
            return out

    def validate(self, client_id: str, envelope: Any) -> ValidatedPayload:
        """Validate without side effects (`SchemaError` listing each offending key)."""
        schema_id = envelope.get("schema_id") if isinstance(envelope, dict) else None
        if not isinstance(schema_id, str):
            raise SchemaError("a structured payload needs a schema_id", ["schema_id: missing or not a string"])
        template = self.template(schema_id, client_id, record_delivery=False)
        compat = {k: v for k, v in self.compat_keys(schema_id, client_id).items() if template.key(k) is None}
        return validate_payload(
            template,
            envelope,
            compat_keys=compat,
            max_other_chars=self.config.max_other_chars,
            max_other_fragments=self.config.max_other_fragments,
        )

    def accept_payload(
        self, client_id: str, envelope: Any, *, ref: int | None = None, suggest: bool = True
    ) -> Acceptance:
        """Validate, measure and learn from one structured payload (module docstring).

        Raises `SchemaError` (nothing stored) when the payload is invalid. ``ref`` is stored with its
        fragments (the replay tool passes the line number). ``suggest=False`` skips building the
        suggestion.
        """
        validated = self.validate(client_id, envelope)
        vectors = self.embedder.embed(list(validated.other.fragments))
        with self._lock:
            now = self.clock.now()
            with self.store.transaction():
                self._due(now)
                # Keys published before this payload arrived; one it makes appear was unknown to its sender.
                measured = self._measured_keys(validated.schema_id, client_id)
                cluster_ids = [
                    self._ingest_one(validated.schema_id, client_id, text, vector, now, ref)
                    for text, vector in zip(validated.other.fragments, vectors, strict=True)
                ]
                self._record_metrics(validated, client_id, measured, set(cluster_ids), now)
                self._warn_compat(validated, client_id, now)
                self._maybe_sweep(now)
            suggestion = self.schema_update_suggestion(client_id, validated.schema_id) if suggest else None
        self._flush()
        return Acceptance(validated, tuple(cluster_ids), suggestion)

    def ingest(self, items: Sequence[tuple[str, str, str]]) -> list[str]:
        """Put raw ``(client_id, schema_id, text)`` fragments into the pool at the clock's time.

        The texts are sanitised as ``other`` content and embedded in one batch; returns the cluster id
        each fragment ended in (empty for a fragment that sanitised to nothing). For feeding fragments
        that did not come with a payload (benchmarks, imports); servers use `accept_payload`.
        """
        cleaned = []
        for client_id, schema_id, text in items:
            self.registry.get(schema_id)
            fragments = sanitize_other(text, self.config.max_other_chars, 1).fragments
            cleaned.append((client_id, schema_id, fragments[0] if fragments else ""))
        vectors = self.embedder.embed([t for _, _, t in cleaned if t])
        out: list[str] = []
        with self._lock:
            now = self.clock.now()
            with self.store.transaction():
                self._due(now)
                rows = iter(vectors)
                for client_id, schema_id, text in cleaned:
                    out.append(self._ingest_one(schema_id, client_id, text, next(rows), now, None) if text else "")
                self._maybe_sweep(now)
        self._flush()
        return out

    def tick(self) -> None:
        """Do the time-driven work that fell due (lifecycle decisions, queue, eviction); call periodically."""
        with self._lock:
            now = self.clock.now()
            with self.store.transaction():
                self._due(now)
                self._sweep(now)
        self._flush()

    # -- administration (authorised) -----------------------------------------------------------
    def approve_patch(self, patch_id: str, actor: str) -> dict[str, Any]:
        """Publish a pending patch; `SchemaError` when it is not pending or ``actor`` is not authorised."""
        return self._decide_pending(patch_id, actor, approve=True)

    def reject_patch(self, patch_id: str, actor: str) -> dict[str, Any]:
        """Reject a pending patch; its cluster stops triggering (state ``rejected``)."""
        return self._decide_pending(patch_id, actor, approve=False)

    def withdraw_key(self, patch_id: str, key_name: str, actor: str) -> None:
        """Withdraw a published new key now (it stays accepted for the compatibility window)."""
        with self._lock:
            patch = self._require_patch(patch_id)
            pk = next((k for k in patch.keys if k.key.key_name == key_name and k.kind == "new"), None)
            if pk is None or pk.state not in ("experimental", "stable", "deprecated"):
                raise SchemaError(f"{patch_id} has no published key {key_name!r}", [f"{key_name}: not published"])
            self._authorize(actor, patch, "withdraw-key", (key_name,))
            now = self.clock.now()
            with self.store.transaction():
                self._set_state(
                    patch, pk, "withdrawn", now, now + self.config.compat_days * _DAY, f"withdrawn by {actor}"
                )
                self._after_experimental_change(patch.schema_id, patch.client_id, now)
        self._flush()

    # -- introspection ---------------------------------------------------------------------------
    def clusters(self, schema_id: str | None = None) -> list[ClusterInfo]:
        """Every cluster in the store (evicted ones too when history is kept), oldest first."""
        with self._lock:
            now = self.clock.now()
            out = []
            for row in self.store.clusters():
                if schema_id is not None and row.schema_id != schema_id:
                    continue
                live = self._pools.get(row.schema_id)
                cluster = live.clusters.get(row.cluster_id) if live else None
                clients = len(cluster.clients) if cluster else len(self.store.client_counts(row.cluster_id))
                heat = cluster.heat_now(now, self.config.half_life_s) if cluster else 0.0
                out.append(
                    ClusterInfo(
                        row.cluster_id, row.schema_id, row.size, clients, heat, row.state, row.created, row.last_seen
                    )
                )
            return out

    def patches(self, schema_id: str | None = None, include_unpublished: bool = True) -> list[dict[str, Any]]:
        """Every patch (any state), oldest first, in the replay form."""
        with self._lock:
            return [
                p.to_dict(include_unpublished)
                for p in sorted(self._patches.values(), key=lambda p: p.created)
                if schema_id is None or p.schema_id == schema_id
            ]

    def key_metrics(self, patch_id: str, key_name: str) -> KeyMetrics:
        """The observation-window metrics of a patch key."""
        with self._lock:
            patch = self._require_patch(patch_id)
            pk = next((k for k in patch.keys if k.key.key_name == key_name), None)
            if pk is None:
                raise SchemaError(f"{patch_id} has no key {key_name!r}", [f"{key_name}: not in the patch"])
            return self._metrics(pk, self.clock.now())

    def key_state(self, patch_id: str, key_name: str) -> str:
        with self._lock:
            patch = self._require_patch(patch_id)
            for pk in patch.keys:
                if pk.key.key_name == key_name:
                    return pk.state
            raise SchemaError(f"{patch_id} has no key {key_name!r}", [f"{key_name}: not in the patch"])

    def queued(self) -> list[str]:
        """Cluster ids of queued triggers, in order."""
        with self._lock:
            return [q.cluster_id for q in self.store.queue()]

    # -- ingest ----------------------------------------------------------------------------------
    def _pool(self, schema_id: str) -> SchemaPool:
        pool = self._pools.get(schema_id)
        if pool is None:
            pool = self._pools[schema_id] = SchemaPool(schema_id, self.embedder.dimension, self.config)
        return pool

    def _ingest_one(
        self, schema_id: str, client_id: str, text: str, vector: Vector, now: float, ref: int | None
    ) -> str:
        pool = self._pool(schema_id)
        unit = np.asarray(vector, dtype=np.float32)
        cluster, similarity = pool.nearest(unit)
        if cluster is not None and similarity >= self.config.assign_threshold:
            pool.join(cluster, unit, now, client_id)
        else:
            cluster_id = f"c{self.store.next_number('cluster'):05d}"
            cluster = pool.start(cluster_id, unit, now, client_id)
        self.store.add_fragment(cluster.cluster_id, schema_id, now, client_id, text, ref)
        cluster = self._merge_around(pool, cluster, now)
        self._save_cluster(cluster)
        self._check_gate(cluster, now)
        self._since_sweep += 1
        return cluster.cluster_id

    def _merge_around(self, pool: SchemaPool, cluster: Cluster, now: float) -> Cluster:
        if cluster.size == 1 and self.config.merge_threshold >= self.config.assign_threshold:
            return cluster  # a new one-fragment cluster was below the join threshold to every centroid
        while True:
            partner, similarity = pool.merge_partner(cluster)
            if partner is None:
                return cluster
            keep, gone = pool.merge(cluster, partner, now)
            self.store.move_fragments(gone.cluster_id, keep.cluster_id)
            self.store.delete_cluster(gone.cluster_id, with_fragments=False)
            queued_ids = {q.cluster_id for q in self.store.queue()}
            if gone.cluster_id in queued_ids:
                self.store.dequeue(gone.cluster_id)
                if keep.state == "queued" and keep.cluster_id not in queued_ids:
                    top, share = keep.top_client()
                    personal = top if share >= self.config.personal_share else None
                    self.store.enqueue(keep.cluster_id, keep.schema_id, personal, now)
            self._emit(
                EvolutionEvent(
                    "clusters-merged",
                    now,
                    keep.schema_id,
                    cluster_id=keep.cluster_id,
                    detail=f"{gone.cluster_id} merged into {keep.cluster_id} (centroid similarity {similarity:.2f})",
                )
            )
            cluster = keep

    def _save_cluster(self, c: Cluster) -> None:
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

    # -- triggers and synthesis ------------------------------------------------------------------
    def _check_gate(self, cluster: Cluster, now: float) -> None:
        if cluster.state in ("queued", "pending", "rejected"):
            return
        gate = evaluate_gate(cluster, now, self.config)
        if not gate.passed:
            return
        if cluster.state == "patched":
            own = [p for p in self._patches.values() if p.cluster_id == cluster.cluster_id and p.state == "active"]
            # A per-client patch becomes global when other clients start to share the intent.
            if gate.client_id is not None or not own or any(p.client_id is None for p in own):
                return
        self._emit(
            EvolutionEvent(
                "cluster-triggered",
                now,
                cluster.schema_id,
                cluster_id=cluster.cluster_id,
                client_id=gate.client_id,
                detail=gate.describe(),
            )
        )
        if self._guard_full(cluster.schema_id, gate.client_id):
            cluster.state = "queued"
            self.store.enqueue(cluster.cluster_id, cluster.schema_id, gate.client_id, now)
            self._save_cluster(cluster)
            self._emit(
                EvolutionEvent(
                    "trigger-queued",
                    now,
                    cluster.schema_id,
                    cluster_id=cluster.cluster_id,
                    client_id=gate.client_id,
                    detail="convergence guard: experimental key limit",
                )
            )
            return
        self._synthesise(cluster, gate, now)

    def _guard_full(self, schema_id: str, client_id: str | None) -> bool:
        limit = self.config.max_experimental_keys if client_id is None else self.config.max_experimental_keys_per_client
        count = sum(
            1
            for p in self._patches.values()
            if p.schema_id == schema_id and p.client_id == client_id
            for k in p.keys
            if k.kind == "new" and k.state == "experimental"
        )
        return count >= limit

    def _visible_keys(self, schema_id: str, client_id: str | None) -> list[ExistingKey]:
        base = self.registry.get(schema_id)
        patches = self._applicable(schema_id, client_id)
        template = effective_template(base, patches)
        origin = {pk.key.key_name: p.patch_id for p in patches for pk in p.keys if pk.kind == "new"}
        return [ExistingKey(k, origin.get(k.key_name, "base")) for k in template.keys]

    def _synthesise(self, cluster: Cluster, gate: GateResult, now: float) -> None:
        fragments = self.store.fragments(cluster.cluster_id, limit=_SYNTHESIS_FRAGMENTS)
        texts = [f.text for f in fragments]
        vectors = self._phrases.embed(texts)
        existing = self._visible_keys(cluster.schema_id, gate.client_id)
        taken = frozenset(k.key.key_name for k in existing) | frozenset(self.compat_keys(cluster.schema_id, None))
        induced = induce_key(
            texts,
            vectors,
            self._phrases,
            max_examples=self.config.max_examples,
            distinct_clients=len({f.client_id for f in fragments}),
            taken_names=taken,
        )
        conflict = find_conflict(induced, vectors, existing, self._phrases, self.config.conflict_threshold)
        patch_id = f"{cluster.schema_id}-patch-{self.store.next_number('patch'):04d}"
        uid = f"{patch_id}/"
        if conflict is None:
            pk = PatchKey(
                uid + induced.key.key_name,
                patch_id,
                cluster.schema_id,
                gate.client_id,
                "new",
                "proposed",
                now,
                None,
                0,
                induced.key,
            )
            conflict_info = None
        else:
            target = conflict.existing.key
            refined = target.with_description(refine_description(target, induced))
            pk = PatchKey(
                uid + target.key_name,
                patch_id,
                cluster.schema_id,
                gate.client_id,
                "modified",
                "proposed",
                now,
                None,
                0,
                refined,
            )
            conflict_info = {
                "key_name": target.key_name,
                "origin": conflict.existing.origin,
                "reason": conflict.reason,
                "similarity": round(conflict.similarity, 4),
                "candidate_key_name": induced.key.key_name,
            }
        patch = Patch(
            patch_id,
            cluster.schema_id,
            cluster.cluster_id,
            gate.client_id,
            now,
            None,
            "pending",
            conflict=conflict_info,
            keys=[pk],
        )
        self._patches[patch_id] = patch
        change = self._change(patch, "publish-patch")
        if self.policy.authorize(EVOLUTION_ACTOR, change):
            self._publish(patch, EVOLUTION_ACTOR, now)
        else:
            cluster.state = "pending"
            self._save_patch(patch)
            self._emit(
                EvolutionEvent(
                    "patch-pending-approval",
                    now,
                    patch.schema_id,
                    cluster_id=cluster.cluster_id,
                    patch_id=patch_id,
                    client_id=patch.client_id,
                    key_name=pk.key.key_name,
                    detail="security-relevant" if change.security_relevant else "needs approval",
                    patch=patch.to_dict(include_unpublished=True),
                )
            )
        self._save_cluster(cluster)

    def _change(self, patch: Patch, kind: Any) -> SchemaChange:
        names = tuple(k.key.key_name for k in patch.keys)
        texts = [t for k in patch.keys for t in (k.key.key_name, k.key.semantic_description)]
        return SchemaChange(
            kind,
            patch.schema_id,
            patch.patch_id,
            patch.client_id,
            names,
            any(k.kind == "new" for k in patch.keys),
            is_security_relevant(*texts),
        )

    def _publish(self, patch: Patch, actor: str, now: float) -> None:
        patch.state = "active"
        patch.authorised_by = actor
        for pk in patch.keys:
            if pk.kind == "new":
                pk.state, pk.decision_at = "experimental", now + self.config.trial_days * _DAY
            else:
                pk.state, pk.decision_at = "active", None
            pk.state_since = now
        patch.refresh_expiration()
        if patch.expiration is None:
            patch.expiration = now + self.config.metrics_window_days * _DAY
        self._save_patch(patch)
        pool = self._pools.get(patch.schema_id)
        cluster = pool.clusters.get(patch.cluster_id) if pool else None
        if cluster is not None:
            cluster.state = "patched"
            self._save_cluster(cluster)
        if patch.client_id is None:
            # Per-client patches of this cluster are superseded once the intent is shared by many clients.
            for old in list(self._patches.values()):
                if old.cluster_id != patch.cluster_id or old.client_id is None or old.state != "active":
                    continue
                for old_key in old.keys:
                    if old_key.kind == "new" and old_key.published:
                        self._set_state(
                            old,
                            old_key,
                            "withdrawn",
                            now,
                            now + self.config.compat_days * _DAY,
                            f"superseded by global patch {patch.patch_id}",
                        )
        self._emit(
            EvolutionEvent(
                "patch-published",
                now,
                patch.schema_id,
                cluster_id=patch.cluster_id,
                patch_id=patch.patch_id,
                client_id=patch.client_id,
                key_name=patch.keys[0].key.key_name,
                state="active",
                detail=f"authorised by {actor}",
                patch=patch.to_dict(),
            )
        )

    def _save_patch(self, patch: Patch) -> None:
        self.store.save_patch(patch.to_row())
        for pk in patch.keys:
            self.store.save_key(pk.to_row())

    def _authorize(self, actor: str, patch: Patch, kind: Any, names: tuple[str, ...] | None = None) -> None:
        change = self._change(patch, kind)
        if names is not None:
            change = SchemaChange(
                change.kind,
                change.schema_id,
                change.patch_id,
                change.client_id,
                names,
                change.adds_keys,
                change.security_relevant,
            )
        if not self.policy.authorize(actor, change):
            raise SchemaAccessDenied(
                f"{actor!r} is not authorised to {kind} {patch.patch_id}",
                [f"{', '.join(change.key_names)}: schema updates need an authorised user"],
            )

    def _decide_pending(self, patch_id: str, actor: str, approve: bool) -> dict[str, Any]:
        with self._lock:
            patch = self._require_patch(patch_id)
            if patch.state != "pending":
                raise SchemaError(f"{patch_id} is not pending (state {patch.state})", [f"{patch_id}: {patch.state}"])
            self._authorize(actor, patch, "approve-patch" if approve else "reject-patch")
            now = self.clock.now()
            with self.store.transaction():
                pool = self._pools.get(patch.schema_id)
                cluster = pool.clusters.get(patch.cluster_id) if pool else None
                if approve:
                    self._publish(patch, actor, now)
                    kind = "patch-approved"
                else:
                    patch.state = "rejected"
                    for pk in patch.keys:
                        pk.state, pk.state_since = "rejected", now
                    self._save_patch(patch)
                    if cluster is not None:
                        # It keeps absorbing its paraphrases, so that they do not trigger again elsewhere.
                        cluster.state = "rejected"
                        self._save_cluster(cluster)
                    kind = "patch-rejected"
                self._emit(
                    EvolutionEvent(
                        kind,
                        now,
                        patch.schema_id,
                        cluster_id=patch.cluster_id,
                        patch_id=patch_id,
                        client_id=patch.client_id,
                        detail=f"by {actor}",
                    )
                )
            result = patch.to_dict(include_unpublished=True)
        self._flush()
        return result

    def _require_patch(self, patch_id: str) -> Patch:
        patch = self._patches.get(patch_id)
        if patch is None:
            raise SchemaError(f"no patch {patch_id!r}", [f"{patch_id}: unknown patch"])
        return patch

    # -- delivery and metrics ---------------------------------------------------------------------
    def _applicable(self, schema_id: str, client_id: str | None) -> list[Patch]:
        return sorted(
            (
                p
                for p in self._patches.values()
                if p.schema_id == schema_id
                and p.state == "active"
                and p.client_id in (None, client_id)
                and any(k.published for k in p.keys)
            ),
            key=lambda p: (p.created, p.patch_id),
        )

    def _note_delivery(self, client_id: str, patches: list[Patch]) -> None:
        now = self.clock.now()
        for patch in patches:
            for pk in patch.keys:
                if pk.kind == "new" and pk.published:
                    self.store.note_client(pk.uid, client_id, now, delivered=True)

    def _measured_keys(self, schema_id: str, client_id: str) -> list[tuple[Patch, PatchKey]]:
        return [
            (patch, pk)
            for patch in self._applicable(schema_id, client_id)
            for pk in patch.keys
            if pk.kind == "new" and pk.state in ("experimental", "stable", "deprecated")
        ]

    def _record_metrics(
        self,
        payload: ValidatedPayload,
        client_id: str,
        keys: list[tuple[Patch, PatchKey]],
        other_clusters: set[str],
        now: float,
    ) -> None:
        day = int(now // _DAY)
        for patch, pk in keys:
            name = pk.key.key_name
            present = name in payload.values or name in payload.nonconforming
            conforms = name in payload.values
            aligned = present and self.judge.aligned(pk.key, conforms, patch.cluster_id in other_clusters)
            self.store.add_metrics(pk.uid, day, 1, int(present), int(conforms), int(aligned))
            if present:
                self.store.note_client(pk.uid, client_id, now, adopted=True)

    def _metrics(self, pk: PatchKey, now: float) -> KeyMetrics:
        since = max(pk.state_since if pk.state == "experimental" else 0.0, now - self.config.metrics_window_days * _DAY)
        sums = self.store.metric_sums(pk.uid, int(since // _DAY))
        delivered, adopted = self.store.adoption(pk.uid)
        return KeyMetrics(sums.seen, sums.present, sums.type_ok, sums.aligned, delivered, adopted)

    def _warn_compat(self, payload: ValidatedPayload, client_id: str, now: float) -> None:
        for name in payload.compat_keys_used:
            for patch in self._patches.values():
                for pk in patch.keys:
                    if pk.key.key_name == name and pk.state == "withdrawn" and patch.schema_id == payload.schema_id:
                        until = to_rfc3339(pk.decision_at) if pk.decision_at else "?"
                        log.warning(
                            "client %s sent withdrawn key %s of %s (%s); accepted until %s",
                            client_id,
                            name,
                            payload.schema_id,
                            patch.patch_id,
                            until,
                        )
                        self._emit(
                            EvolutionEvent(
                                "withdrawn-key-used",
                                now,
                                payload.schema_id,
                                patch_id=patch.patch_id,
                                client_id=client_id,
                                key_name=name,
                                state="withdrawn",
                                detail=f"accepted until {until}",
                            )
                        )

    # -- lifecycle ---------------------------------------------------------------------------------
    def _due(self, now: float) -> None:
        """Apply every lifecycle decision due by ``now``, each at its own due time, in time order."""
        while True:
            due = [
                (pk.decision_at, pk.uid, patch, pk)
                for patch in self._patches.values()
                for pk in patch.keys
                if pk.decision_at is not None and pk.decision_at <= now and patch.state != "rejected"
            ]
            if not due:
                return
            when, _, patch, pk = min(due, key=lambda t: (t[0], t[1]))
            self._decide_key(patch, pk, float(when), now)

    def _decide_key(self, patch: Patch, pk: PatchKey, when: float, now: float) -> None:
        c = self.config
        if pk.state in ("experimental", "stable"):
            metrics = self._metrics(pk, now)
            decision = decide(pk.state, metrics, pk.extensions, c)
            summary = ", ".join(f"{k} {v}" for k, v in metrics.to_dict().items())
            was_experimental = pk.state == "experimental"
            if decision == "promote":
                self._set_state(patch, pk, "stable", when, when + c.metrics_window_days * _DAY, summary)
            elif decision == "deprecate":
                self._set_state(patch, pk, "deprecated", when, when + c.grace_days * _DAY, summary)
            elif decision == "extend":
                pk.extensions += 1
                pk.decision_at = when + c.trial_days * _DAY
                patch.refresh_expiration()
                self._save_patch(patch)
                self._emit(
                    EvolutionEvent(
                        "key-state-changed",
                        when,
                        patch.schema_id,
                        patch_id=patch.patch_id,
                        client_id=patch.client_id,
                        key_name=pk.key.key_name,
                        state=pk.state,
                        previous_state=pk.state,
                        detail=f"trial extended ({summary})",
                    )
                )
            else:
                pk.decision_at = when + c.metrics_window_days * _DAY
                patch.refresh_expiration()
                self._save_patch(patch)
            if was_experimental and pk.state != "experimental":
                self._after_experimental_change(patch.schema_id, patch.client_id, when)
        elif pk.state == "deprecated":
            self._set_state(patch, pk, "withdrawn", when, when + c.compat_days * _DAY, "grace period over")
        elif pk.state == "withdrawn":
            self._set_state(patch, pk, "retired", when, None, "compatibility window over")
        else:
            pk.decision_at = None
            self._save_patch(patch)

    def _set_state(
        self, patch: Patch, pk: PatchKey, state: KeyState, when: float, decision_at: float | None, detail: str
    ) -> None:
        previous = pk.state
        pk.state, pk.state_since, pk.decision_at = state, when, decision_at
        if not any(k.kind == "new" and k.published for k in patch.keys) and any(k.kind == "new" for k in patch.keys):
            patch.state = "closed"
            patch.expiration = when
        else:
            patch.refresh_expiration()
        self._save_patch(patch)
        self._emit(
            EvolutionEvent(
                "key-state-changed",
                when,
                patch.schema_id,
                cluster_id=patch.cluster_id,
                patch_id=patch.patch_id,
                client_id=patch.client_id,
                key_name=pk.key.key_name,
                state=state,
                previous_state=previous,
                detail=detail,
            )
        )

    def _after_experimental_change(self, schema_id: str, client_id: str | None, now: float) -> None:
        """A guard slot may have freed up: run queued triggers of that scope, oldest first."""
        for entry in self.store.queue():
            if entry.schema_id != schema_id or entry.client_id != client_id:
                continue
            if self._guard_full(schema_id, client_id):
                return
            self.store.dequeue(entry.cluster_id)
            pool = self._pools.get(schema_id)
            cluster = pool.clusters.get(entry.cluster_id) if pool else None
            if cluster is None:
                continue
            cluster.state = "collecting"
            self._emit(
                EvolutionEvent(
                    "trigger-dequeued",
                    now,
                    schema_id,
                    cluster_id=cluster.cluster_id,
                    client_id=client_id,
                    detail="a convergence-guard slot freed up",
                )
            )
            cluster.prune_window(now, self.config.window_s)
            gate = GateResult(
                True,
                cluster.heat_now(now, self.config.half_life_s),
                len(cluster.window_clients),
                len(cluster.window),
                client_id,
                cluster.cohesion(),
            )
            self._synthesise(cluster, gate, now)

    # -- eviction and pruning ----------------------------------------------------------------------
    def _maybe_sweep(self, now: float) -> None:
        if self._since_sweep >= _SWEEP_EVERY:
            self._sweep(now)

    def _sweep(self, now: float) -> None:
        self._since_sweep = 0
        for pool in self._pools.values():
            for cluster in pool.evictable(now):
                pool.remove(cluster)
                if self.keep_history:
                    cluster.state = "evicted"
                    self._save_cluster(cluster)
                else:
                    self.store.delete_cluster(cluster.cluster_id, with_fragments=True)
        if not self.keep_history:
            waiting = [
                c.cluster_id
                for p in self._pools.values()
                for c in p.clusters.values()
                if c.state in ("queued", "pending")
            ]
            self.store.prune_fragments(now - self.config.window_s, keep_clusters=waiting)

    # -- restore -------------------------------------------------------------------------------------
    def _load(self) -> None:
        now = self.clock.now()
        for row in self.store.clusters(exclude_states=("evicted",)):
            vector = np.frombuffer(row.centroid, dtype=np.float32).copy()
            cluster = Cluster(
                row.cluster_id,
                row.schema_id,
                vector,
                row.size,
                row.heat,
                row.heat_at,
                row.created,
                row.last_seen,
                row.state,  # type: ignore[arg-type]  # stored as text; written from the same Literal
            )
            for fragment in self.store.fragments(row.cluster_id, since=now - self.config.window_s):
                cluster.window.append((fragment.ts, fragment.client_id))
                cluster.window_clients[fragment.client_id] += 1
            cluster.clients.update(self.store.client_counts(row.cluster_id))
            self._pool(row.schema_id).add_loaded(cluster)
        keys: dict[str, list[PatchKey]] = {}
        for key_row in self.store.patch_keys():
            keys.setdefault(key_row.patch_id, []).append(PatchKey.from_row(key_row))
        for patch_row in self.store.patches():
            self._patches[patch_row.patch_id] = Patch.from_row(patch_row, keys.get(patch_row.patch_id, []))
