"""Structured payloads of one agent (draft-zhou-structured-data-schema-interaction-00).

`SchemaService` connects the evolution engine to one agent:

- on assignment (`validate_task`, called once per task by the admission
  pipeline, outside the datastore lock), every data-param of a new task whose
  format is ``application/json;schema=<schema_id>`` is validated against the
  template the sending client sees; an invalid one refuses the whole request
  with an `RpcError` that lists each offending key (nothing is stored);
- once the task is committed (`accept`), its payloads are learnt from (``other`` fragments embedded and
  clustered) on a background thread, so assignment never waits for the
  embedding model (~7 s to load, ~3 ms per fragment); the payloads that queued up meanwhile are learnt
  from in one batch, and patch synthesis waits until no payload is queued (or a trigger has waited
  `_SYNTHESIS_MAX_DELAY` s), so a burst is ingested at the pool's rate, not at synthesis's; a trigger's
  patch waits for a typing sample (``typing_sample``, ``typing_wait_hours``) except at a drain or the stop;
- a finished task's JSON result gains ``schema_update_suggestion`` when
  patches apply to its client;
- templates are served by the ``get-schema-template`` RPC and as state under
  ``/irtf-agent:agent/an-agent-schema:schema-templates``;
- ``patch-published`` and ``key-state-changed`` events become
  ``schema-update`` notifications.

The client a payload is attributed to is the task's ``task-sendFrom`` (the
sending agent's name) when present, else the requesting principal's name.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.clock import Clock, to_rfc3339
from an_agent.errors import AnAgentError, RpcError, SchemaAccessDenied, SchemaError
from an_agent.evolution.engine import EvolutionEngine
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.policy import DefaultUpdatePolicy
from an_agent.model import AN_AGENT_SCHEMA_NS, DataParam, Task, TaskResult
from an_agent.runtime.requests import GetSchemaTemplate, PatchDecided, PatchDecision, SchemaTemplate
from an_agent.schemas import schema_id_from_media_type
from an_agent.schemas.embedding import Embedder
from an_agent.schemas.languages import localize, pick_language
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.validate import ValidatedPayload, parse_envelope

log = logging.getLogger(__name__)

SCHEMA_NS = AN_AGENT_SCHEMA_NS
_S = f"{{{SCHEMA_NS}}}"
_NOTIFIED = {"patch-published", "key-state-changed"}
_TICK_SECONDS = 60.0
_LEARN_BATCH = 256  # payloads learnt from in one embedding call
_SYNTHESIS_MAX_DELAY = 2.0
"""Real seconds a noted trigger may wait for its patch while payloads keep coming (synthesis runs when the
learner has nothing queued, or once a trigger has waited this long)."""

_shared_embedder: Embedder | None = None
_shared_lock = threading.Lock()


def shared_embedder() -> Embedder:
    """One MiniLM embedder per process (a lab runs many agents in one process); loads lazily."""
    global _shared_embedder
    with _shared_lock:
        if _shared_embedder is None:
            from an_agent.evolution.embedder import MiniLMEmbedder

            _shared_embedder = MiniLMEmbedder()
        return _shared_embedder


class SchemaService:
    """One agent's structured-payload handling; thread-safe."""

    def __init__(
        self, engine: EvolutionEngine, clock: Clock, publish: Callable[[etree._Element], None], learn: bool = True
    ) -> None:
        self.engine = engine
        self.learn = learn
        self._state_cache: etree._Element | None = None
        self.version = 0
        """Increases whenever templates, patches or key states may have changed (for reply caches)."""
        self._clock = clock
        self._publish = publish
        self._unsubscribe = engine.on_event(self._on_event)
        self._work: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self._task_clients: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._lock = threading.Lock()
        self._due_since: float | None = None  # when the learner first saw a trigger waiting for synthesis
        self._worker = threading.Thread(target=self._run, name="schema-evolution", daemon=True)
        self._worker.start()

    @classmethod
    def open(
        cls,
        state_dir: Path,
        clock: Clock,
        publish: Callable[[etree._Element], None],
        embedder: Embedder | None = None,
        learn: bool = True,
        admins: Iterable[str] = (),
        automatic: bool = True,
        registry: TemplateRegistry | None = None,
    ) -> SchemaService:
        """The service over ``<state_dir>/evolution.db``.

        ``learn=False`` validates but never embeds. ``admins`` are the NETCONF
        users who may approve, reject and withdraw; with ``automatic`` the
        engine publishes non-security patches itself (experimental), else
        every patch waits for an administrator. ``registry``: the templates
        served (default: the shipped ones; operators add theirs with
        `TemplateRegistry.default`).
        """
        policy = DefaultUpdatePolicy(admins=admins, automatic=automatic)
        engine = EvolutionEngine.open(
            state_dir / "evolution.db", embedder or shared_embedder(), clock=clock, policy=policy, registry=registry
        )
        return cls(engine, clock, publish, learn)

    def census(self) -> tuple[int, dict[tuple[str, ...], float], dict[tuple[str, ...], float]]:
        """For the metrics: fragments in the semantic pool, clusters by state, patches by state."""
        clusters = self.engine.clusters()
        by_state: Counter[tuple[str, ...]] = Counter((c.state,) for c in clusters)
        patches: Counter[tuple[str, ...]] = Counter((str(p.get("state")),) for p in self.engine.patches())
        return sum(c.size for c in clusters), dict(by_state), dict(patches)

    def close(self) -> None:
        self._work.put(None)
        self._worker.join(timeout=30)
        self._unsubscribe()
        self.engine.close()

    def drain(self, timeout: float = 60.0) -> None:
        """Wait until every accepted payload has been learnt from (tests, orderly shutdown).

        Every noted trigger is synthesised then, even below its typing sample (``typing_sample``).
        """
        done = threading.Event()
        self._work.put(("barrier", done))
        done.wait(timeout)

    # -- assignment -----------------------------------------------------------
    def validate_task(self, task: Task, params: list[DataParam], client_id: str) -> PayloadCheck:
        """Validate every structured payload of ``task`` once; `RpcError` (nothing stored) when one is invalid.

        No side effects: call `accept` with the result once the task is committed.
        """
        check = PayloadCheck(task.task_id, client_id)
        for param in params:
            schema_id = schema_id_from_media_type(param.format or "")
            if schema_id is None:
                continue
            where = f"/irtf-agent:data-params[id='{param.id}']/data"
            try:
                envelope = parse_envelope(param.data or "")
                if isinstance(envelope, dict) and envelope.get("schema_id") not in (None, schema_id):
                    raise SchemaError(
                        "the payload names another schema than its media type",
                        [f"schema_id: {envelope.get('schema_id')!r} but the format says {schema_id!r}"],
                    )
                validated = self.engine.validate(client_id, envelope)
                defaults = self._defaults(validated, envelope, client_id)
            except SchemaError as exc:
                problems = "; ".join(exc.problems) or str(exc)
                raise RpcError.invalid_value(
                    f"task {task.task_id}: data-param {param.id} is not a valid {schema_id} payload: {problems}",
                    path=where,
                    app_tag="invalid-structured-payload",
                ) from None
            except AnAgentError as exc:  # e.g. an unknown schema_id
                raise RpcError.invalid_value(f"task {task.task_id}: data-param {param.id}: {exc}", path=where) from None
            if defaults:
                # draft-zhou 3.1 default_value: applied here, so the behaviour and the stored data see it.
                validated = replace(validated, values={**validated.values, **defaults})
                envelope = {**envelope, "payload": {**envelope["payload"], **defaults}}
                check.completed[param.id] = json.dumps(envelope, ensure_ascii=False)
            check.envelopes.append(envelope)
            check.payloads[param.id] = validated
        return check

    def _defaults(self, validated: ValidatedPayload, envelope: Any, client_id: str) -> dict[str, Any]:
        """The template keys absent from the payload that have a ``default_value``, with it."""
        payload = envelope.get("payload") if isinstance(envelope, dict) else None
        if not isinstance(payload, dict):
            return {}
        template = self.engine.template(validated.schema_id, client_id, record_delivery=False)
        return {
            key.key_name: copy.deepcopy(key.default_value)
            for key in template.keys
            if key.default_value is not None and key.key_name != "other" and key.key_name not in payload
        }

    def accept(self, check: PayloadCheck) -> None:
        """After commit: learn from the accepted payloads and remember the task's client for its result."""
        if not check.envelopes or not self.learn:
            return
        schema_ids = tuple(dict.fromkeys(p.schema_id for p in check.payloads.values()))
        with self._lock:
            self._task_clients[check.task_id] = (check.client_id, schema_ids)
        for envelope in check.envelopes:
            self._work.put(("accept", (check.client_id, envelope)))

    def decorate_result(self, task_id: str, result: TaskResult) -> TaskResult:
        """Add ``schema_update_suggestion`` to a JSON result when patches apply to the task's client."""
        with self._lock:
            known = self._task_clients.pop(task_id, None)
        if known is None:
            return result
        client_id, schema_ids = known
        suggestions = [s for s in (self.engine.schema_update_suggestion(client_id, sid) for sid in schema_ids) if s]
        if not suggestions:
            return result
        try:
            data = json.loads(result.data) if result.data else {}
        except json.JSONDecodeError:
            data = None
        if not isinstance(data, dict):
            # A non-JSON result keeps its text under "result"; the suggestion rides along.
            data = {"result": result.data}
        data["schema_update_suggestion"] = suggestions[0] if len(suggestions) == 1 else suggestions
        result.data = json.dumps(data, sort_keys=True)
        result.format = "application/json"
        return result

    # -- serving --------------------------------------------------------------
    def get_schema_template(self, request: GetSchemaTemplate, caller: str) -> SchemaTemplate:
        """The template of ``request.scenario`` as its client (default ``caller``) sees it."""
        client_id = request.client_id or caller
        if not request.scenario:
            raise RpcError.missing_element(
                "scenario", "get-schema-template needs a <scenario>", error_type="application"
            )
        try:
            # The version first (the highest common one when the client states its versions), then the
            # patches that apply to this client on top of it.
            chosen = self.engine.registry.negotiate(request.scenario, request.supported_versions)
            template = self.engine.template(chosen.schema_id, client_id)
        except AnAgentError as exc:
            problems = "; ".join(exc.problems) if isinstance(exc, SchemaError) else ""
            available = ", ".join(t.schema_id for t in self.engine.registry.templates())
            detail = f"{exc}: {problems}" if problems else str(exc)
            raise RpcError.invalid_value(f"{detail} (available: {available})") from None
        applied = [
            p["patch_id"]
            for p in (self.engine.schema_update_suggestion(client_id, template.schema_id) or {}).get("patches", [])
        ]
        # The language served is said, never pretended (draft 5): a language we do not ship gets English.
        served = pick_language(request.preferred_language)
        text = json.dumps(localize(template, served).to_dict(), indent=2, ensure_ascii=False)
        return SchemaTemplate(template.schema_id, served, text, tuple(applied))

    def templates_state(self, sees_client: Callable[[str], bool] = lambda client: False) -> etree._Element:
        """``schema-templates`` (augmenting /agent): every template with its global patches, and the
        personal patches of the clients ``sees_client`` accepts (the reader's own; all for an admin).

        The global part is built once and kept until the engine reports a
        change, because every ``<get>`` of the profile includes it.
        """
        with self._lock:
            cached = self._state_cache
        if cached is None:
            cached = self._build_templates_state()
            with self._lock:
                self._state_cache = cached
        state = copy.deepcopy(cached)
        personal = [
            p
            for p in self.engine.patches(include_unpublished=True)
            if p.get("client_id") is not None
            and p.get("state") in ("active", "pending")
            and sees_client(p["client_id"])
        ]
        if personal:
            entries = {e.findtext(_S + "schema-id"): e for e in state.iterchildren(_S + "template")}
            for patch in personal:
                entry = entries.get(patch["parent_schema_id"])
                if entry is not None:
                    _patch_element(entry, patch)
        return state

    def _build_templates_state(self) -> etree._Element:
        root = etree.Element(_S + "schema-templates", nsmap=default_ns(SCHEMA_NS))
        patches_by_schema: dict[str, list[dict[str, Any]]] = {}
        for patch in self.engine.patches(include_unpublished=True):
            # Pending ones too (state proposed), so that schema administrators can find what to decide.
            if patch.get("client_id") is None and patch.get("state") in ("active", "pending"):
                patches_by_schema.setdefault(patch["parent_schema_id"], []).append(patch)
        states = self._key_states()
        for base in self.engine.registry.templates():
            template = self.engine.template(base.schema_id, None, record_delivery=False)
            entry = etree.SubElement(root, _S + "template")
            etree.SubElement(entry, _S + "schema-id").text = template.schema_id
            etree.SubElement(entry, _S + "scenario").text = template.scenario
            base_names = set(base.key_names)
            for key in template.keys:
                item = etree.SubElement(entry, _S + "key")
                etree.SubElement(item, _S + "key-name").text = key.key_name
                etree.SubElement(item, _S + "key-type").text = key.key_type
                etree.SubElement(item, _S + "required").text = "true" if key.required else "false"
                if key.default_value is not None:
                    etree.SubElement(item, _S + "default-value").text = json.dumps(key.default_value)
                etree.SubElement(item, _S + "semantic-description").text = key.semantic_description
                state = (
                    "base" if key.key_name in base_names else states.get((base.schema_id, key.key_name), "experimental")
                )
                etree.SubElement(item, _S + "state").text = state
            for patch in patches_by_schema.get(base.schema_id, []):
                _patch_element(entry, patch)
        return root

    def _key_states(self) -> dict[tuple[str, str], str]:
        states: dict[tuple[str, str], str] = {}
        for patch in self.engine.patches(include_unpublished=False):
            if patch.get("client_id") is not None:
                continue
            for key in patch.get("new_keys", []):
                try:
                    states[(patch["parent_schema_id"], key["key_name"])] = self.engine.key_state(
                        patch["patch_id"], key["key_name"]
                    )
                except AnAgentError:
                    continue
        return states

    # -- administration (authorised users only) -------------------------------
    def decide(self, decision: PatchDecision, user: str) -> PatchDecided | None:
        """Approve or reject a patch, or withdraw a key (None: a withdrawal answers nothing)."""
        try:
            if decision.kind == "withdraw-schema-key":
                self.engine.withdraw_key(decision.patch_id, decision.key_name or "", user)
                return None
            approve = decision.kind == "approve-schema-patch"
            decide = self.engine.approve_patch if approve else self.engine.reject_patch
            patch = decide(decision.patch_id, user)
        except SchemaAccessDenied as exc:
            raise RpcError.access_denied(
                f"{exc}: schema updates that add or change keys need a schema administrator "
                "(an-agent serve --schema-admin NAME)"
            ) from None
        except SchemaError as exc:
            raise RpcError.invalid_value(f"{exc}: {'; '.join(exc.problems)}") from None
        return PatchDecided(decision.patch_id, str(patch.get("state", "")))

    # -- background -----------------------------------------------------------
    def _run(self) -> None:
        while True:
            try:
                item = self._work.get(timeout=_TICK_SECONDS)
            except queue.Empty:
                self._safely(self.engine.tick)
                continue
            # Learn from every payload that queued up meanwhile in one batch (one embedding call: a
            # fraction of the cost of one call per payload), stopping at a barrier or the stop mark.
            batch: list[tuple[str, Any]] = []
            while item is not None and item[0] == "accept":
                batch.append(item[1])
                if len(batch) >= _LEARN_BATCH:
                    item = ("idle", None)  # the rest waits in the queue for the next batch
                    break
                try:
                    item = self._work.get_nowait()
                except queue.Empty:
                    item = ("idle", None)
            if batch:
                self._safely(functools.partial(self._learn, batch))
            # Patch synthesis (seconds of model time per patch) stays off the ingest path: it runs when no
            # payload waits, at a barrier or the stop, or when a trigger has waited too long. A barrier or
            # the stop forces the triggers still waiting for a typing sample: what was learnt is complete.
            ending = item is None or item[0] == "barrier"
            if ending or self._work.empty() or self._synthesis_overdue():
                self._safely(functools.partial(self._synthesise, ending))
            if item is None:
                return
            if item[0] == "barrier":
                item[1].set()

    def _learn(self, batch: list[tuple[str, Any]]) -> None:
        for result in self.engine.accept_payloads(batch, synthesise=False):
            if isinstance(result, SchemaError):  # admitted against an older template: nothing learnt
                log.info("schema evolution skipped a payload: %s", result)
        if self._due_since is None and self.engine.synthesis_due:
            self._due_since = time.monotonic()

    def _synthesis_overdue(self) -> bool:
        return self._due_since is not None and time.monotonic() - self._due_since >= _SYNTHESIS_MAX_DELAY

    def _synthesise(self, force: bool) -> None:
        self._due_since = None
        self.engine.synthesise_due(force)

    @staticmethod
    def _safely(work: Callable[[], object]) -> None:
        try:
            work()
        except Exception:  # learning must never take the agent down; the payload was already accepted
            log.exception("schema evolution failed on an accepted payload")

    def _on_event(self, event: EvolutionEvent) -> None:
        with self._lock:
            self._state_cache = None  # templates, patches or key states may have changed
            self.version += 1
        if event.kind not in _NOTIFIED:
            return
        note = etree.Element(_S + "schema-update", nsmap=default_ns(SCHEMA_NS))
        etree.SubElement(note, _S + "event").text = event.kind
        etree.SubElement(note, _S + "schema-id").text = event.schema_id
        if event.patch_id:
            etree.SubElement(note, _S + "patch-id").text = event.patch_id
        if event.key_name:
            etree.SubElement(note, _S + "key-name").text = event.key_name
        if event.state:
            etree.SubElement(note, _S + "state").text = event.state
        if event.client_id:
            etree.SubElement(note, _S + "client-id").text = event.client_id
        detail = event.to_dict()
        if event.patch is not None:
            detail["patch"] = event.patch
        detail["time"] = to_rfc3339(event.time)
        etree.SubElement(note, _S + "detail").text = json.dumps(detail, sort_keys=True)
        self._publish(note)


def _patch_element(entry: etree._Element, patch: dict[str, Any]) -> None:
    """Append a ``patch`` entry (YANG ``schema-templates/template/patch``) for an engine patch to ``entry``."""
    item = etree.SubElement(entry, _S + "patch")
    etree.SubElement(item, _S + "patch-id").text = patch["patch_id"]
    etree.SubElement(item, _S + "timestamp").text = patch["timestamp"]
    if patch.get("expiration"):
        etree.SubElement(item, _S + "expiration").text = patch["expiration"]
    experimental = any(k.get("experimental") for k in patch.get("new_keys", []))
    etree.SubElement(item, _S + "experimental").text = "true" if experimental else "false"
    if patch.get("client_id") is not None:
        etree.SubElement(item, _S + "client-id").text = patch["client_id"]
    for key in patch.get("new_keys", []):
        etree.SubElement(item, _S + "new-key").text = key["key_name"]
    for key in patch.get("modified_keys", []):
        etree.SubElement(item, _S + "modified-key").text = key["key_name"]
    etree.SubElement(item, _S + "state").text = "proposed" if patch["state"] == "pending" else "active"


@dataclass
class PayloadCheck:
    """The structured payloads of one task, validated once (`SchemaService.validate_task`).

    ``payloads`` maps data-param id -> the validated payload; ``envelopes`` are
    the raw accepted envelopes, to learn from after commit.
    """

    task_id: str
    client_id: str
    payloads: dict[str, ValidatedPayload] = field(default_factory=dict)
    envelopes: list[Any] = field(default_factory=list)
    completed: dict[str, str] = field(default_factory=dict)
    """data-param id -> its envelope with the template's default values filled in (only when some were)."""
