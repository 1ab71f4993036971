"""Key lifecycle for the engine (draft 6.2.3): metrics, due decisions, state changes, the trigger queue.

`KeySteward` records each payload's use of published patch keys, applies the lifecycle decisions that
fell due (`lifecycle.decide` on the observation-window metrics), moves keys through
experimental -> stable / deprecated -> withdrawn -> retired, and when an experimental slot frees up
runs the triggers that the convergence guard queued (through a callback into patch synthesis).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from an_agent.clock import to_rfc3339
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.lifecycle import KeyMetrics, KeyState, decide
from an_agent.evolution.patches import Patch, PatchKey
from an_agent.evolution.pool import Cluster
from an_agent.evolution.state import DAY, EngineState
from an_agent.evolution.trigger import GateResult
from an_agent.schemas.validate import ValidatedPayload

log = logging.getLogger("an_agent.evolution")

Synthesise = Callable[[Cluster, GateResult, float], None]


class KeySteward:
    """The lifecycle side of the engine (module docstring)."""

    def __init__(self, state: EngineState, synthesise: Synthesise) -> None:
        self._s = state
        self._synthesise = synthesise

    # -- delivery and metrics ---------------------------------------------------------------------
    def note_delivery(self, client_id: str, patches: list[Patch]) -> None:
        """Record that ``client_id`` was served the published new keys of ``patches``."""
        now = self._s.clock.now()
        for patch in patches:
            for pk in patch.keys:
                if pk.kind == "new" and pk.published:
                    self._s.store.note_client(pk.uid, client_id, now, delivered=True)

    def measured_keys(self, schema_id: str, client_id: str) -> list[tuple[Patch, PatchKey]]:
        """The published new keys whose metrics a payload of ``client_id`` counts towards."""
        return [
            (patch, pk)
            for patch in self._s.applicable(schema_id, client_id)
            for pk in patch.keys
            if pk.kind == "new" and pk.state in ("experimental", "stable", "deprecated")
        ]

    def record_metrics(
        self,
        payload: ValidatedPayload,
        client_id: str,
        keys: list[tuple[Patch, PatchKey]],
        other_clusters: set[str],
        now: float,
    ) -> None:
        """Count one payload's use (presence, type, alignment) of each measured key."""
        day = int(now // DAY)
        for patch, pk in keys:
            name = pk.key.key_name
            present = name in payload.values or name in payload.nonconforming
            conforms = name in payload.values
            aligned = present and self._s.judge.aligned(pk.key, conforms, patch.cluster_id in other_clusters)
            self._s.store.add_metrics(pk.uid, day, 1, int(present), int(conforms), int(aligned))
            if present:
                self._s.store.note_client(pk.uid, client_id, now, adopted=True)

    def metrics(self, pk: PatchKey, now: float) -> KeyMetrics:
        """The observation-window metrics of a patch key at ``now``."""
        c = self._s.config
        since = max(pk.state_since if pk.state == "experimental" else 0.0, now - c.metrics_window_days * DAY)
        sums = self._s.store.metric_sums(pk.uid, int(since // DAY))
        delivered, adopted = self._s.store.adoption(pk.uid)
        return KeyMetrics(sums.seen, sums.present, sums.type_ok, sums.aligned, delivered, adopted)

    def warn_compat(self, payload: ValidatedPayload, client_id: str, now: float) -> None:
        """Log and emit ``withdrawn-key-used`` for each withdrawn key the payload still used."""
        for name in payload.compat_keys_used:
            for patch in self._s.patches.values():
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
                        self._s.emit(
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
    def due(self, now: float) -> None:
        """Apply every lifecycle decision due by ``now``, each at its own due time, in time order."""
        while True:
            due = [
                (pk.decision_at, pk.uid, patch, pk)
                for patch in self._s.patches.values()
                for pk in patch.keys
                if pk.decision_at is not None and pk.decision_at <= now and patch.state != "rejected"
            ]
            if not due:
                return
            when, _, patch, pk = min(due, key=lambda t: (t[0], t[1]))
            self._decide_key(patch, pk, float(when), now)

    def _decide_key(self, patch: Patch, pk: PatchKey, when: float, now: float) -> None:
        c = self._s.config
        if pk.state in ("experimental", "stable"):
            metrics = self.metrics(pk, now)
            decision = decide(pk.state, metrics, pk.extensions, c)
            summary = ", ".join(f"{k} {v}" for k, v in metrics.to_dict().items())
            was_experimental = pk.state == "experimental"
            if decision == "promote":
                self.set_state(patch, pk, "stable", when, when + c.metrics_window_days * DAY, summary)
            elif decision == "deprecate":
                self.set_state(patch, pk, "deprecated", when, when + c.grace_days * DAY, summary)
            elif decision == "extend":
                pk.extensions += 1
                pk.decision_at = when + c.trial_days * DAY
                patch.refresh_expiration()
                self._s.save_patch(patch)
                self._s.emit(
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
                pk.decision_at = when + c.metrics_window_days * DAY
                patch.refresh_expiration()
                self._s.save_patch(patch)
            if was_experimental and pk.state != "experimental":
                self.after_experimental_change(patch.schema_id, patch.client_id, when)
        elif pk.state == "deprecated":
            self.set_state(patch, pk, "withdrawn", when, when + c.compat_days * DAY, "grace period over")
        elif pk.state == "withdrawn":
            self.set_state(patch, pk, "retired", when, None, "compatibility window over")
        else:
            pk.decision_at = None
            self._s.save_patch(patch)

    def set_state(
        self, patch: Patch, pk: PatchKey, state: KeyState, when: float, decision_at: float | None, detail: str
    ) -> None:
        """Move a patch key to ``state`` (closing the patch when no new key stays published) and emit it."""
        previous = pk.state
        pk.state, pk.state_since, pk.decision_at = state, when, decision_at
        if not any(k.kind == "new" and k.published for k in patch.keys) and any(k.kind == "new" for k in patch.keys):
            patch.state = "closed"
            patch.expiration = when
        else:
            patch.refresh_expiration()
        self._s.save_patch(patch)
        self._s.emit(
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

    def guard_full(self, schema_id: str, client_id: str | None) -> bool:
        """True when the scope already has its maximum of experimental keys (convergence guard)."""
        c = self._s.config
        limit = c.max_experimental_keys if client_id is None else c.max_experimental_keys_per_client
        count = sum(
            1
            for p in self._s.patches.values()
            if p.schema_id == schema_id and p.client_id == client_id
            for k in p.keys
            if k.kind == "new" and k.state == "experimental"
        )
        return count >= limit

    def after_experimental_change(self, schema_id: str, client_id: str | None, now: float) -> None:
        """A guard slot may have freed up: run queued triggers of that scope, oldest first."""
        s = self._s
        for entry in s.store.queue():
            if entry.schema_id != schema_id or entry.client_id != client_id:
                continue
            if self.guard_full(schema_id, client_id):
                return
            s.store.dequeue(entry.cluster_id)
            cluster = s.live_cluster(schema_id, entry.cluster_id)
            if cluster is None:
                continue
            cluster.state = "collecting"
            s.emit(
                EvolutionEvent(
                    "trigger-dequeued",
                    now,
                    schema_id,
                    cluster_id=cluster.cluster_id,
                    client_id=client_id,
                    detail="a convergence-guard slot freed up",
                )
            )
            cluster.prune_window(now, s.config.window_s)
            gate = GateResult(
                True,
                cluster.heat_now(now, s.config.half_life_s),
                len(cluster.window_clients),
                len(cluster.window),
                client_id,
                cluster.cohesion(),
            )
            self._synthesise(cluster, gate, now)
