"""Patches for the engine (draft 6.2.1-6.2.2): gate, synthesis, authorisation, publication, approval.

`PatchMaker.check_gate` evaluates the dual-gate trigger of a grown cluster; a trigger either queues
(convergence guard full) or is synthesised into a patch (`synthesis`), which the `UpdatePolicy`
publishes at once or leaves pending for an authorised user (`decide_pending`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from an_agent.errors import SchemaAccessDenied, SchemaError
from an_agent.evolution.boilerplate import content_text
from an_agent.evolution.carriers import value_test
from an_agent.evolution.cohesion import Core, core_of
from an_agent.evolution.conflicts import Conflict, find_conflict
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.participants import apart_from_participants
from an_agent.evolution.patches import Patch, PatchKey, effective_template
from an_agent.evolution.policy import EVOLUTION_ACTOR, SchemaChange
from an_agent.evolution.pool import Cluster
from an_agent.evolution.release import release_set_aside
from an_agent.evolution.review import security_reasons
from an_agent.evolution.state import DAY, EngineState
from an_agent.evolution.stewardship import KeySteward
from an_agent.evolution.synthesis import SECURITY_TERMS, ExistingKey, induce_key, refine_key, synthesis_phrases
from an_agent.evolution.time_concepts import apart_from_moment_keys
from an_agent.evolution.trigger import GateResult, evaluate_gate
from an_agent.schemas.embedding import Vectors
from an_agent.store.evolution import FragmentRow

SYNTHESIS_FRAGMENTS = 200  # newest fragments of a cluster used to synthesise its key


class PatchMaker:
    """The trigger and patch side of the engine (module docstring)."""

    def __init__(self, state: EngineState, steward: KeySteward) -> None:
        self._s = state
        self._steward = steward

    # -- triggers and synthesis ------------------------------------------------------------------
    def check_gate(self, cluster: Cluster, now: float) -> None:
        """Evaluate the trigger of ``cluster``; queue or synthesise when it passes."""
        s = self._s
        if cluster.state in ("queued", "pending", "rejected") or cluster.cluster_id in s.due:
            return
        gate = evaluate_gate(cluster, now, s.config)
        if not gate.passed:
            return
        if cluster.state == "patched":
            own = [p for p in s.patches.values() if p.cluster_id == cluster.cluster_id and p.state == "active"]
            # A per-client patch becomes global when other clients start to share the intent.
            if gate.client_id is not None or not own or any(p.client_id is None for p in own):
                return
        s.emit(
            EvolutionEvent(
                "cluster-triggered",
                now,
                cluster.schema_id,
                cluster_id=cluster.cluster_id,
                client_id=gate.client_id,
                detail=gate.describe(),
            )
        )
        if self._steward.guard_full(cluster.schema_id, gate.client_id):
            cluster.state = "queued"
            s.store.enqueue(cluster.cluster_id, cluster.schema_id, gate.client_id, now)
            s.save_cluster(cluster)
            s.emit(
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
        s.due[cluster.cluster_id] = (cluster.schema_id, gate, now)

    def synthesise_due(self, now: float, force: bool = False) -> int:
        """Synthesise the patches of the noted triggers that are ready; returns how many were made.

        A trigger is ready when its cluster holds ``typing_sample`` fragments (enough for each value of a
        closed set to recur, so the key comes out typed rather than a flag), once ``typing_wait_hours``
        passed since it was noted, or when ``force``; until then it stays noted while its cluster grows
        (`check_gate` keeps the first trigger time). Each patch carries the time of its trigger. A
        trigger whose cluster was merged away or changed state meanwhile is dropped (the surviving
        cluster's gate fires again on its next fragment); one that meets a full convergence guard now
        is queued as `check_gate` would have.
        """
        s = self._s
        wait_s = s.config.typing_wait_hours * 3600.0
        made = 0
        for cluster_id, (schema_id, gate, when) in list(s.due.items()):
            cluster = s.live_cluster(schema_id, cluster_id)
            if cluster is None or cluster.state not in ("collecting", "patched"):
                del s.due[cluster_id]
                continue
            if not force and cluster.size < s.config.typing_sample and now - when < wait_s:
                continue  # waits for a sample big enough to type its key
            del s.due[cluster_id]
            if self._steward.guard_full(schema_id, gate.client_id):
                cluster.state = "queued"
                s.store.enqueue(cluster_id, schema_id, gate.client_id, when)
                s.save_cluster(cluster)
                s.emit(
                    EvolutionEvent(
                        "trigger-queued",
                        when,
                        schema_id,
                        cluster_id=cluster_id,
                        client_id=gate.client_id,
                        detail="convergence guard: experimental key limit",
                    )
                )
                continue
            self.synthesise(cluster, gate, when)
            made += 1
        return made

    def _visible_keys(self, schema_id: str, client_id: str | None) -> list[ExistingKey]:
        base = self._s.registry.get(schema_id)
        patches = self._s.applicable(schema_id, client_id)
        template = effective_template(base, patches)
        origin = {pk.key.key_name: p.patch_id for p in patches for pk in p.keys if pk.kind == "new"}
        return [ExistingKey(k, origin.get(k.key_name, "base")) for k in template.keys]

    def synthesise(self, cluster: Cluster, gate: GateResult, now: float) -> None:
        """Induce the cluster's key (new, or a refinement of the key it duplicates) and publish or hold it.

        Only the cluster's core (`cohesion.core_of`) makes the key; when the core is not cohesive
        (``min_cohesion``) no patch is made (event ``trigger-dropped``) and the cluster keeps collecting.
        With a patch, the fragments set aside leave the cluster (`release.release_set_aside`).
        """
        s = self._s
        fragments = s.store.fragments(cluster.cluster_id, limit=SYNTHESIS_FRAGMENTS)
        texts = [f.text for f in fragments]
        existing = self._visible_keys(cluster.schema_id, gate.client_id)
        # One forward pass for what the steps below would embed in ten small calls (most cached already).
        s.phrases.prefetch(synthesis_phrases(texts, existing))
        vectors = s.phrases.fragments(texts)
        core = core_of(vectors, [f.client_id for f in fragments])
        # A one-off about "the customer" is close to customer requests through that word alone (`participants`).
        core = apart_from_participants(core, texts, vectors, s.phrases)
        if core.cohesion < s.config.min_cohesion:
            # The cohesion gate: what would make the key is not one idea. The cluster keeps collecting.
            s.emit(
                EvolutionEvent(
                    "trigger-dropped",
                    now,
                    cluster.schema_id,
                    cluster_id=cluster.cluster_id,
                    client_id=gate.client_id,
                    detail=f"core of {len(core.members)} of {core.size} fragments has cohesion "
                    f"{core.cohesion:.2f} < {s.config.min_cohesion:.2f}",
                )
            )
            return
        # What a person wrote, not a journal header nor the machine row an export put before it, says the
        # key's values and name.
        texts = [content_text(t) for t in texts]
        core = apart_from_moment_keys(core, texts, vectors, [k.key for k in existing], s.phrases, now)
        taken = frozenset(k.key.key_name for k in existing) | frozenset(s.compat_keys(cluster.schema_id, None))
        induced = induce_key(
            texts,
            vectors,
            s.phrases,
            max_examples=s.config.max_examples,
            distinct_clients=len({fragments[i].client_id for i in core.members}),
            taken_names=taken,
            now=now,
            core=core,
            written=[f.ts for f in fragments],
        )
        core_vectors = vectors[list(core.members)]
        core_texts = [texts[i] for i in core.members]
        core_choices = [fragments[i].chosen() for i in core.members]
        conflict = find_conflict(
            induced, core_vectors, existing, s.phrases, s.config.conflict_threshold, core_texts, core_choices
        )
        if conflict is not None and self._joins_its_patch(cluster, conflict, now, fragments, vectors):
            return
        patch_id = f"{cluster.schema_id}-patch-{s.store.next_number('patch'):04d}"
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
            # Same name, or other words for the key's existing values: its description is widened, no value added.
            restates = conflict.reason == "name" or (bool(target.constraints.enum) and conflict.value is None)
            refined = refine_key(target, induced, same_name=restates, value=conflict.value)
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
        s.patches[patch_id] = patch
        change = self.change(patch, "publish-patch")
        if s.policy.authorize(EVOLUTION_ACTOR, change):
            self.publish(patch, EVOLUTION_ACTOR, now)
        else:
            cluster.state = "pending"
            s.save_patch(patch)
            s.emit(
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
        # The cluster behind the patch is its core: what the gate set aside leaves it (`release`).
        cluster.value_test = (
            value_test(induced.spec, now) if induced.spec is not None else None
        )  # before the release: it re-places what left
        release_set_aside(s, cluster, fragments, vectors, induced.core or core, now)
        s.save_cluster(cluster)

    def _joins_its_patch(
        self,
        cluster: Cluster,
        conflict: Conflict,
        now: float,
        fragments: Sequence[FragmentRow] = (),
        vectors: Vectors | None = None,
    ) -> bool:
        """Merge ``cluster`` into the cluster of the patch that made the key it restates; True when it did.

        Two clusters of one intent (the pool split its wordings: "RTT 48 ms", "round trip latency 0.2
        seconds") make one key: when the second restates a key a patch of evolution made (by name, or by
        meaning without a new value of its set), it is more of that patch's evidence, not a second patch
        that revises a key still on trial (the modification would keep the key's type whatever the
        second cluster's sample typed). A cluster that names a new value of such a key still proposes it.

        Behind a typed key (`Cluster.value_test`), only the fragments that state a value of it join
        (``fragments``/``vectors``: what synthesis examined): the others leave the cluster first, as the
        fragments a core sets aside do (`release_set_aside`), for the fragments of a patched typed key each
        state its value, whichever way they came in. When none does, nothing merges (True: no patch).
        """
        s = self._s
        origin = s.patches.get(conflict.existing.origin)
        target = conflict.existing.key
        if origin is None or origin.state not in ("active", "pending"):
            return False
        if conflict.reason != "name" and target.constraints.enum and conflict.value is not None:
            return False  # a new value of the set: a modification to propose
        into = s.live_cluster(cluster.schema_id, origin.cluster_id)
        if into is None or into is cluster:
            return False
        if into.value_test is not None and fragments and vectors is not None:
            carriers = tuple(i for i, f in enumerate(fragments) if into.value_test(f.text))
            if not carriers:
                return True  # it restates the key's words, never its values: it keeps collecting
            if len(carriers) < len(fragments):
                release_set_aside(s, cluster, fragments, vectors, Core(carriers, (), (), 0.0, len(fragments)), now)
        keep, _ = s.merge_clusters(into, cluster, now, f"restates {target.key_name} of {origin.patch_id}")
        s.save_cluster(keep)
        return True

    # -- authorisation and publication -------------------------------------------------------------
    @staticmethod
    def change(patch: Patch, kind: Any) -> SchemaChange:
        """The `SchemaChange` an `UpdatePolicy` judges for ``kind`` applied to ``patch``."""
        names = tuple(k.key.key_name for k in patch.keys)
        return SchemaChange(
            kind,
            patch.schema_id,
            patch.patch_id,
            patch.client_id,
            names,
            any(k.kind == "new" for k in patch.keys),
            # What the keys mean (name, meaning, value shapes), not any word of their examples (`review`).
            any(security_reasons(k.key, SECURITY_TERMS) for k in patch.keys),
        )

    def authorize(self, actor: str, patch: Patch, kind: Any, names: tuple[str, ...] | None = None) -> None:
        """Raise `SchemaError` unless the policy lets ``actor`` do ``kind`` to ``patch`` (or its ``names``)."""
        change = self.change(patch, kind)
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
        if not self._s.policy.authorize(actor, change):
            raise SchemaAccessDenied(
                f"{actor!r} is not authorised to {kind} {patch.patch_id}",
                [f"{', '.join(change.key_names)}: schema updates need an authorised user"],
            )

    def publish(self, patch: Patch, actor: str, now: float) -> None:
        """Make ``patch`` active: new keys start their trial, superseded per-client keys are withdrawn."""
        s = self._s
        patch.state = "active"
        patch.authorised_by = actor
        for pk in patch.keys:
            if pk.kind == "new":
                pk.state, pk.decision_at = "experimental", now + s.config.trial_days * DAY
            else:
                pk.state, pk.decision_at = "active", None
            pk.state_since = now
        patch.refresh_expiration()
        if patch.expiration is None:
            patch.expiration = now + s.config.metrics_window_days * DAY
        s.save_patch(patch)
        cluster = s.live_cluster(patch.schema_id, patch.cluster_id)
        if cluster is not None:
            cluster.state = "patched"
            s.save_cluster(cluster)
        if patch.client_id is None:
            # Per-client patches of this cluster are superseded once the intent is shared by many clients.
            for old in list(s.patches.values()):
                if old.cluster_id != patch.cluster_id or old.client_id is None or old.state != "active":
                    continue
                for old_key in old.keys:
                    if old_key.kind == "new" and old_key.published:
                        self._steward.set_state(
                            old,
                            old_key,
                            "withdrawn",
                            now,
                            now + s.config.compat_days * DAY,
                            f"superseded by global patch {patch.patch_id}",
                        )
        s.emit(
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

    def decide_pending(self, patch_id: str, actor: str, approve: bool, now: float) -> dict[str, Any]:
        """Approve (publish) or reject a pending patch on behalf of ``actor``; returns the patch."""
        s = self._s
        patch = s.require_patch(patch_id)
        if patch.state != "pending":
            raise SchemaError(f"{patch_id} is not pending (state {patch.state})", [f"{patch_id}: {patch.state}"])
        self.authorize(actor, patch, "approve-patch" if approve else "reject-patch")
        with s.store.transaction():
            cluster = s.live_cluster(patch.schema_id, patch.cluster_id)
            if approve:
                self.publish(patch, actor, now)
                kind = "patch-approved"
            else:
                patch.state = "rejected"
                for pk in patch.keys:
                    pk.state, pk.state_since = "rejected", now
                s.save_patch(patch)
                if cluster is not None:
                    # It keeps absorbing its paraphrases, so that they do not trigger again elsewhere.
                    cluster.state = "rejected"
                    s.save_cluster(cluster)
                kind = "patch-rejected"
            s.emit(
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
        return patch.to_dict(include_unpublished=True)
