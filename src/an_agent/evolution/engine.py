"""The schema self-evolution engine: one object a server agent (or the replay tool) drives.

What it does, per call:

`accept_payload`
    validate a structured data-param against the template the client sees (base + its patches);
    refuse it with `SchemaError` (nothing stored) or accept it: update the metrics of every published
    patch key, embed each sanitised ``other`` fragment into the Differential Semantic Pool, evaluate
    the dual-gate trigger of the clusters it joined, and synthesise, authorise and publish a patch once
    a fired trigger's cluster holds a typing sample (or queue it when the convergence guard is full).
`template` / `schema_update_suggestion`
    what to serve to a client: the effective template, or its active patches for inline delivery.
`tick`
    time-driven work: lifecycle decisions that fell due, eviction of cold clusters, pruning, and the
    patches of triggers that waited ``typing_wait_hours``.
`on_event`
    subscribe to `EvolutionEvent`s (patch published, key state changed, ...) for NETCONF notifications.

All state is written through an `EvolutionStore` within one transaction per call and restored by the
constructor, so a restart resumes where it stopped. All time comes from the injected clock. The engine
is thread-safe (one lock); events are delivered after the transaction commits, outside the lock.

This module is the facade; the work is done by its parts over one shared `state.EngineState`:
`ingest.PoolKeeper` (the pool), `patching.PatchMaker` (trigger, synthesis, publication) and
`stewardship.KeySteward` (metrics and lifecycle).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from an_agent.clock import Clock, SystemClock
from an_agent.errors import SchemaError
from an_agent.evolution.boilerplate import content_text
from an_agent.evolution.chosen import GIVEN
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.ingest import Entry, PoolKeeper
from an_agent.evolution.lifecycle import KeyMetrics
from an_agent.evolution.patches import Patch, PatchKey, effective_template
from an_agent.evolution.patching import PatchMaker
from an_agent.evolution.policy import DefaultUpdatePolicy, UpdatePolicy
from an_agent.evolution.state import DAY, AlignmentJudge, CachedEmbedder, EngineState
from an_agent.evolution.stewardship import KeySteward
from an_agent.schemas.embedding import Embedder
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.sanitize import sanitize_other
from an_agent.schemas.template import OTHER_KEY, KeyDef, Template
from an_agent.schemas.validate import ValidatedPayload, validate_payload
from an_agent.store.evolution import EvolutionStore

log = logging.getLogger("an_agent.evolution")

EventListener = Callable[[EvolutionEvent], None]

__all__ = ["Acceptance", "AlignmentJudge", "ClusterInfo", "EvolutionEngine"]


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
    cohesion: float  # mean similarity of the members to the centroid (|sum of unit vectors| / size)


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
        self.registry = registry or TemplateRegistry.default()
        self.config = config or EvolutionConfig()
        self.clock = clock or SystemClock()
        self.policy = policy or DefaultUpdatePolicy()
        self.judge = judge or AlignmentJudge()
        self.keep_history = keep_history
        self._lock = threading.RLock()
        self._listeners: list[EventListener] = []
        self._state = EngineState(
            store,
            embedder,
            CachedEmbedder(embedder),
            self.registry,
            self.config,
            self.clock,
            self.policy,
            self.judge,
            keep_history,
        )
        self._steward = KeySteward(self._state, lambda cluster, gate, now: self._maker.synthesise(cluster, gate, now))
        self._maker = PatchMaker(self._state, self._steward)
        self._pool = PoolKeeper(self._state, self._maker.check_gate)
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

    def _flush(self) -> None:
        with self._lock:
            events, self._state.outbox = self._state.outbox, []
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
            patches = self._state.applicable(base.schema_id, client_id)
            if client_id is not None and record_delivery and patches:
                with self.store.transaction():
                    self._steward.note_delivery(client_id, patches)
            return effective_template(base, patches)

    def schema_update_suggestion(self, client_id: str, schema_id: str) -> dict[str, Any] | None:
        """The active patches that apply to ``client_id`` (global and its own), for a task result.

        ``{"schema_id": ..., "patches": [patch, ...]}`` with each patch as in the replay report, or
        None when no patch applies. Delivery is recorded for ``client_adoption_rate``.
        """
        with self._lock:
            patches = self._state.applicable(schema_id, client_id)
            if not patches:
                return None
            with self.store.transaction():
                self._steward.note_delivery(client_id, patches)
            return {"schema_id": schema_id, "patches": [p.to_dict() for p in patches]}

    def compat_keys(self, schema_id: str, client_id: str | None) -> dict[str, KeyDef]:
        """Withdrawn keys still accepted (compatibility window) for this client."""
        with self._lock:
            return self._state.compat_keys(schema_id, client_id)

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
        acceptance = self._accept([(client_id, validated, ref)])[0]
        if not suggest:
            return acceptance
        suggestion = self.schema_update_suggestion(client_id, validated.schema_id)
        return Acceptance(acceptance.payload, acceptance.cluster_ids, suggestion)

    def accept_payloads(
        self,
        items: Sequence[tuple[str, Any]],
        refs: Sequence[int | None] | None = None,
        *,
        synthesise: bool = True,
    ) -> list[Acceptance | SchemaError]:
        """`accept_payload` for a batch of ``(client_id, envelope)``: one embedding call, one transaction.

        What a server's learner does with the payloads that queued up meanwhile: embedding 100 short
        fragments in one call costs a fraction of 100 calls. Returns, per item and in order, its
        `Acceptance` (no suggestion) or the `SchemaError` that refused it (nothing stored for it). The
        triggers the batch causes are synthesised after it, as `accept_payload` does, unless
        ``synthesise`` is false: then they wait (`synthesis_due`) for `synthesise_due` or the next `tick`,
        and the caller keeps ingesting meanwhile (each patch still carries the time of its trigger). Either
        way a trigger's patch waits for a typing sample (`synthesise_due`).
        """
        out: list[Acceptance | SchemaError | None] = []
        valid: list[tuple[str, ValidatedPayload, int | None]] = []
        for i, (client_id, envelope) in enumerate(items):
            try:
                valid.append((client_id, self.validate(client_id, envelope), refs[i] if refs else None))
                out.append(None)  # filled in below, in order
            except SchemaError as exc:
                out.append(exc)
        accepted = iter(self._accept(valid, synthesise))
        return [next(accepted) if o is None else o for o in out]

    @property
    def synthesis_due(self) -> int:
        """Triggers noted whose patch is not synthesised yet (`synthesise_due` makes the ready ones)."""
        with self._lock:
            return len(self._state.due)

    def _accept(
        self, valid: Sequence[tuple[str, ValidatedPayload, int | None]], synthesise: bool = True
    ) -> list[Acceptance]:
        texts = [text for _, validated, _ in valid for text in validated.other.fragments]
        embedded = self.embedder.embed([content_text(t) for t in texts])  # compared by content (boilerplate.py)
        vectors = iter(embedded)
        with self._lock:
            self._state.phrases.remember(texts, embedded)  # synthesis reads its cluster's newest fragments
            now = self.clock.now()
            with self.store.transaction():
                self._steward.due(now)
                # Keys published before a payload arrived; one it makes appear was unknown to its sender.
                measured = [self._steward.measured_keys(v.schema_id, client_id) for client_id, v, _ in valid]
                entries = [
                    Entry(v.schema_id, client_id, text, next(vectors), ref, choices)
                    for client_id, v, ref in valid
                    for choices in [self._choices(v)]
                    for text in v.other.fragments
                ]
                landed = iter(self._pool.ingest_many(entries, now))
                out = []
                for (client_id, validated, _), keys in zip(valid, measured, strict=True):
                    cluster_ids = tuple(next(landed) for _ in validated.other.fragments)
                    self._steward.record_metrics(validated, client_id, keys, set(cluster_ids), now)
                    self._steward.warn_compat(validated, client_id, now)
                    out.append(Acceptance(validated, cluster_ids, None))
                self._pool.maybe_sweep(now)
            # Synthesis is rare and slow (it embeds phrases): its own transaction, after the ingest one.
            if synthesise:
                self._synthesise_due()
        self._flush()
        return out

    def _choices(self, validated: ValidatedPayload) -> dict[str, str]:
        """The values the request gave its template's closed-set keys, and `chosen.GIVEN` for each optional
        key without allowed values it gave: whether an idea of its ``other`` is a new value of such a key,
        or restates it, depends on them (`conflicts.find_conflict`)."""
        template = self.registry.get(validated.schema_id)
        choices: dict[str, str] = {}
        for key in template.keys:
            value = validated.values.get(key.key_name)
            if key.constraints.enum:
                if isinstance(value, str):
                    choices[key.key_name] = value
            elif not key.required and key.key_name != OTHER_KEY and _said(value, key.default_value):
                choices[key.key_name] = GIVEN
        return choices

    def ingest(self, items: Sequence[tuple[str, str, str]]) -> list[str]:
        """Put raw ``(client_id, schema_id, text)`` fragments into the pool at the clock's time.

        The texts are sanitised as ``other`` content and embedded in one batch; returns the cluster id
        each fragment ended in (empty for a fragment that sanitised to nothing). For feeding fragments
        that did not come with a payload (benchmarks, imports); servers use `accept_payload`. Patch
        synthesis stays off this path: the triggers it causes are synthesised by `synthesise_due` (or
        the next `tick`).
        """
        cleaned = []
        for client_id, schema_id, text in items:
            self.registry.get(schema_id)
            fragments = sanitize_other(text, self.config.max_other_chars, 1).fragments
            cleaned.append((client_id, schema_id, fragments[0] if fragments else ""))
        kept = [(client_id, schema_id, text) for client_id, schema_id, text in cleaned if text]
        vectors = self.embedder.embed([content_text(text) for _, _, text in kept])
        with self._lock:
            self._state.phrases.remember([text for _, _, text in kept], vectors)
            now = self.clock.now()
            with self.store.transaction():
                self._steward.due(now)
                entries = [Entry(s, c, t, v) for (c, s, t), v in zip(kept, vectors, strict=True)]
                landed = iter(self._pool.ingest_many(entries, now))
                self._pool.maybe_sweep(now)
        self._flush()
        return [next(landed) if text else "" for _, _, text in cleaned]

    def tick(self, force: bool = False) -> None:
        """Do the work that fell due (lifecycle, queue, eviction, `synthesise_due`); call periodically."""
        with self._lock:
            now = self.clock.now()
            with self.store.transaction():
                self._steward.due(now)
                self._pool.sweep(now)
            self._synthesise_due(force)
        self._flush()

    def synthesise_due(self, force: bool = False) -> int:
        """Synthesise (and publish or hold) the patches of the noted triggers that are ready; returns how many.

        A trigger is ready once its cluster holds ``typing_sample`` fragments or ``typing_wait_hours``
        after it was noted; ``force`` makes every noted trigger now (end of a replay, a learner's drain).
        """
        with self._lock:
            made = self._synthesise_due(force)
        self._flush()
        return made

    def _synthesise_due(self, force: bool = False) -> int:
        if not self._state.due:
            return 0
        with self.store.transaction():
            return self._maker.synthesise_due(self.clock.now(), force)

    # -- administration (authorised) -----------------------------------------------------------
    def approve_patch(self, patch_id: str, actor: str) -> dict[str, Any]:
        """Publish a pending patch; `SchemaError` when it is not pending or ``actor`` is not authorised."""
        return self._decide_pending(patch_id, actor, approve=True)

    def reject_patch(self, patch_id: str, actor: str) -> dict[str, Any]:
        """Reject a pending patch; its cluster stops triggering (state ``rejected``)."""
        return self._decide_pending(patch_id, actor, approve=False)

    def _decide_pending(self, patch_id: str, actor: str, approve: bool) -> dict[str, Any]:
        with self._lock:
            result = self._maker.decide_pending(patch_id, actor, approve, self.clock.now())
        self._flush()
        return result

    def withdraw_key(self, patch_id: str, key_name: str, actor: str) -> None:
        """Withdraw a published new key now (it stays accepted for the compatibility window)."""
        with self._lock:
            patch = self._state.require_patch(patch_id)
            pk = next((k for k in patch.keys if k.key.key_name == key_name and k.kind == "new"), None)
            if pk is None or pk.state not in ("experimental", "stable", "deprecated"):
                raise SchemaError(f"{patch_id} has no published key {key_name!r}", [f"{key_name}: not published"])
            self._maker.authorize(actor, patch, "withdraw-key", (key_name,))
            now = self.clock.now()
            with self.store.transaction():
                self._steward.set_state(
                    patch, pk, "withdrawn", now, now + self.config.compat_days * DAY, f"withdrawn by {actor}"
                )
                self._steward.after_experimental_change(patch.schema_id, patch.client_id, now)
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
                live = self._state.pools.get(row.schema_id)
                cluster = live.clusters.get(row.cluster_id) if live else None
                clients = len(cluster.clients) if cluster else len(self.store.client_counts(row.cluster_id))
                heat = cluster.heat_now(now, self.config.half_life_s) if cluster else 0.0
                norm = float(np.linalg.norm(np.frombuffer(row.centroid, dtype=np.float32)))
                out.append(
                    ClusterInfo(
                        row.cluster_id,
                        row.schema_id,
                        row.size,
                        clients,
                        heat,
                        row.state,
                        row.created,
                        row.last_seen,
                        round(norm / row.size, 4) if row.size else 0.0,
                    )
                )
            return out

    def patches(self, schema_id: str | None = None, include_unpublished: bool = True) -> list[dict[str, Any]]:
        """Every patch (any state), oldest first, in the replay form."""
        with self._lock:
            return [
                p.to_dict(include_unpublished)
                for p in sorted(self._state.patches.values(), key=lambda p: p.created)
                if schema_id is None or p.schema_id == schema_id
            ]

    def key_metrics(self, patch_id: str, key_name: str) -> KeyMetrics:
        """The observation-window metrics of a patch key."""
        with self._lock:
            patch = self._state.require_patch(patch_id)
            pk = next((k for k in patch.keys if k.key.key_name == key_name), None)
            if pk is None:
                raise SchemaError(f"{patch_id} has no key {key_name!r}", [f"{key_name}: not in the patch"])
            return self._steward.metrics(pk, self.clock.now())

    def key_state(self, patch_id: str, key_name: str) -> str:
        with self._lock:
            patch = self._state.require_patch(patch_id)
            for pk in patch.keys:
                if pk.key.key_name == key_name:
                    return pk.state
            raise SchemaError(f"{patch_id} has no key {key_name!r}", [f"{key_name}: not in the patch"])

    def live_cluster_count(self) -> int:
        """Clusters in the in-memory pools (not evicted), over all scenarios."""
        with self._lock:
            return sum(len(p.clusters) for p in self._state.pools.values())

    def queued(self) -> list[str]:
        """Cluster ids of queued triggers, in order."""
        with self._lock:
            return [q.cluster_id for q in self.store.queue()]

    # -- restore -------------------------------------------------------------------------------------
    def _load(self) -> None:
        self._pool.load()
        keys: dict[str, list[PatchKey]] = {}
        for key_row in self.store.patch_keys():
            keys.setdefault(key_row.patch_id, []).append(PatchKey.from_row(key_row))
        for patch_row in self.store.patches():
            self._state.patches[patch_row.patch_id] = Patch.from_row(patch_row, keys.get(patch_row.patch_id, []))


def _said(value: Any, default: Any) -> bool:
    """Whether a request gave a key ``value`` of its own: not absent, not empty, not the key's default."""
    return value is not None and value not in ("", [], {}) and value != default
