"""Replay: run logged payloads through the evolution engine on a virtual clock (the what-if tool).

Input: JSON lines ``{"timestamp", "client_id", "schema_id", "payload"}`` (other fields are ignored).
Lines are processed in timestamp order (ties keep file order) with a `ManualClock` set to each line's
timestamp, through the same `EvolutionEngine` a server runs, on a private in-memory store that keeps
its whole history. No line vanishes in silence: every non-blank line is either accepted or listed in
``rejected`` with its 1-based line number in the input and the reason (not a JSON object, a missing or
mistyped field, a bad timestamp, an unknown schema_id, or the template's validation problems); blank
lines are counted, so ``accepted + len(rejected) + blank_lines == lines``.

The report (`ReplayReport.to_dict`) is::

    {"lines": N_read, "accepted": N_lines, "rejected": [{"line": 1-based, "reason": "..."}],
     "blank_lines": N_blank,
     "fragments": N,
     "clusters": [{"cluster_id", "schema_id", "size", "distinct_clients", "heat", "state",
                   "cohesion", "core_share", "members": [0-based line numbers],
                   "member_lines": [the same, 1-based]}],
     "patches": [{"patch_id", "parent_schema_id", "cluster_id", "client_id", "timestamp", "expiration",
                  "state", "new_keys": [...], "modified_keys": [...]}],
     "events": [{"kind", "time", "schema_id", ...}]}

``cohesion`` is the mean similarity of a cluster's fragments to its centroid; ``core_share`` is the share
of its fragments that the cohesion gate's core keeps (`cohesion.core_of`: 1.0 when none is an outlier or
a second idea), the purity-like measure: a cluster behind a patch is its core at the time of the patch
(`release`), so below 1.0 there means fragments that joined since or a cluster still collecting.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from an_agent.clock import ManualClock, from_rfc3339
from an_agent.errors import SchemaError
from an_agent.evolution.boilerplate import content_text
from an_agent.evolution.cohesion import core_of
from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.engine import EvolutionEngine
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.patching import SYNTHESIS_FRAGMENTS
from an_agent.evolution.policy import DefaultUpdatePolicy, UpdatePolicy
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.sanitize import sanitize_other
from an_agent.store.evolution import EvolutionStore

Progress = Callable[[int, int], None]
_PREFETCH_BATCH = 256


@dataclass(frozen=True)
class ReplayLine:
    """One usable input line; ``line_no`` is 0-based in the file."""

    line_no: int
    timestamp: float
    client_id: str
    schema_id: str
    payload: Any


@dataclass(frozen=True)
class Rejection:
    """An input line the replay refused: ``line`` is 1-based in the input file."""

    line: int
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason}


@dataclass
class ReplayReport:
    fragments: int
    clusters: list[dict[str, Any]]
    patches: list[dict[str, Any]]
    events: list[dict[str, Any]] = field(default_factory=list)
    accepted: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    lines: int = 0
    """Lines read from the input, blank ones included."""
    blank_lines: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "accepted": self.accepted,
            "rejected": [r.to_dict() for r in sorted(self.rejected, key=lambda r: r.line)],
            "blank_lines": self.blank_lines,
            "fragments": self.fragments,
            "clusters": self.clusters,
            "patches": self.patches,
            "events": self.events,
        }


def parse_lines(lines: Iterable[str]) -> tuple[list[ReplayLine], list[Rejection]]:
    """Usable lines (time-ordered), and a `Rejection` for each other non-blank line."""
    good: list[ReplayLine] = []
    bad: list[Rejection] = []
    for line_no, text in enumerate(lines):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
            missing = [k for k in ("timestamp", "client_id", "schema_id", "payload") if k not in obj]
            if missing:
                raise ValueError(f"missing {', '.join(missing)}")
            if not isinstance(obj["client_id"], str) or not isinstance(obj["schema_id"], str):
                raise ValueError("client_id and schema_id must be strings")
            when = from_rfc3339(str(obj["timestamp"]))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            reason = f"not JSON: {exc}" if isinstance(exc, json.JSONDecodeError) else str(exc)
            bad.append(Rejection(line_no + 1, reason))
            continue
        good.append(ReplayLine(line_no, when, obj["client_id"], obj["schema_id"], obj["payload"]))
    good.sort(key=lambda r: (r.timestamp, r.line_no))
    return good, bad


class _PrefetchedEmbedder:
    """Serves vectors computed in large batches ahead of time; falls back to the real embedder."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._cache: dict[str, Vectors] = {}

    @property
    def dimension(self) -> int:
        return self._inner.dimension

    def prefetch(self, texts: Sequence[str]) -> None:
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            for text, vector in zip(todo, self._inner.embed(todo), strict=True):
                self._cache[text] = vector

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.prefetch(texts)
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])


def replay(
    lines: Iterable[str],
    embedder: Embedder,
    *,
    config: EvolutionConfig | None = None,
    registry: TemplateRegistry | None = None,
    policy: UpdatePolicy | None = None,
    progress: Progress | None = None,
) -> ReplayReport:
    """Replay ``lines`` (module docstring); ``progress(done, total)`` is called as lines are processed."""
    config = config or EvolutionConfig()
    lines = list(lines)
    blank = sum(1 for text in lines if not text.strip())
    records, rejected = parse_lines(lines)
    events: list[dict[str, Any]] = []
    if not records:
        return ReplayReport(0, [], [], events, 0, rejected, len(lines), blank)
    clock = ManualClock(records[0].timestamp)
    cached = _PrefetchedEmbedder(embedder)
    engine = EvolutionEngine(
        EvolutionStore(":memory:"),
        cached,
        registry=registry,
        config=config,
        clock=clock,
        policy=policy or DefaultUpdatePolicy(),
        keep_history=True,
    )

    def record(event: EvolutionEvent) -> None:
        events.append(event.to_dict())

    engine.on_event(record)
    fragments = accepted_lines = 0
    try:
        for start in range(0, len(records), _PREFETCH_BATCH):
            batch = records[start : start + _PREFETCH_BATCH]
            cached.prefetch([content_text(t) for r in batch for t in _other_texts(r.payload, config)])
            for done, rec in enumerate(batch, start=start + 1):
                clock.set(max(rec.timestamp, clock.now()))
                envelope = {"schema_id": rec.schema_id, "payload": rec.payload}
                try:
                    accepted = engine.accept_payload(rec.client_id, envelope, ref=rec.line_no, suggest=False)
                except SchemaError as exc:
                    rejected.append(Rejection(rec.line_no + 1, _reason(exc, rec.schema_id, engine.registry)))
                else:
                    accepted_lines += 1
                    fragments += len(accepted.cluster_ids)
                if progress is not None:
                    progress(done, len(records))
        engine.tick(force=True)  # the input ended: triggers still waiting for a typing sample make theirs now
        return ReplayReport(
            fragments, _clusters(engine, cached), engine.patches(), events, accepted_lines, rejected, len(lines), blank
        )
    finally:
        engine.close()


def _reason(exc: SchemaError, schema_id: str, registry: TemplateRegistry) -> str:
    try:
        registry.resolve(schema_id)
    except SchemaError:
        return f"unknown schema_id {schema_id!r} (known: {', '.join(registry.schema_ids)})"
    problems = "; ".join(exc.problems)
    return f"{exc}: {problems}" if problems else str(exc)


def _other_texts(payload: Any, config: EvolutionConfig) -> tuple[str, ...]:
    other = payload.get("other") if isinstance(payload, dict) else None
    return sanitize_other(other, config.max_other_chars, config.max_other_fragments).fragments


def core_share(engine: EvolutionEngine, embedder: Embedder, cluster_id: str) -> float:
    """Share of the cluster's fragments that its core keeps (`cohesion.core_of`; 1.0: none set aside).

    Of the fragments a synthesis reads (the newest `SYNTHESIS_FRAGMENTS`): the core's two-ideas step is
    cubic in the fragments, and a replay of a long log can hold clusters of thousands.
    """
    fragments = engine.store.fragments(cluster_id, limit=SYNTHESIS_FRAGMENTS)
    texts = [f.text for f in fragments]
    core = (
        core_of(embedder.embed([content_text(t) for t in texts]), [f.client_id for f in fragments]) if texts else None
    )
    return round(core.purity_proxy, 4) if core is not None else 0.0


def _clusters(engine: EvolutionEngine, embedder: Embedder) -> list[dict[str, Any]]:
    members = engine.store.fragment_refs()
    return [
        {
            "cluster_id": c.cluster_id,
            "schema_id": c.schema_id,
            "size": c.size,
            "distinct_clients": c.distinct_clients,
            "heat": round(c.heat, 2),
            "cohesion": c.cohesion,
            "core_share": core_share(engine, embedder, c.cluster_id),
            "state": c.state,
            "members": members.get(c.cluster_id, []),
            # The same fragments' lines numbered as `rejected` numbers them (and as editors do).
            "member_lines": [line_no + 1 for line_no in members.get(c.cluster_id, [])],
        }
        for c in engine.clusters()
    ]
