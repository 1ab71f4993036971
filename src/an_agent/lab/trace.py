"""One trace across a lab's agents: the causal chain of a fault or request, from the logs of a run.

Every agent of ``lab up`` logs JSON lines (``--log-format json``) into ``RUN_DIR/agents/NAME/agent.log``,
and the lab process its scenario's trace events into ``RUN_DIR/lab.log`` (`an_agent.tracing`). `chain`
reads the events of one trace id from every ``*.log`` under the run directory and orders them by
cause: each event belongs to a span (``span_id``) caused by another (``parent_span_id``): the fault
injected, the alarm an agent received for it, the task it sent, the task its peer received, ... A span
comes after the one that caused it, siblings in the order they began (wall time, one machine).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Step:
    """One event of the chain and its depth (how many causes lie between it and the trace's origin)."""

    depth: int
    event: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"depth": self.depth, **self.event}


def events(run_dir: Path, trace_id: str) -> list[dict[str, Any]]:
    """The JSON log events of ``trace_id`` (or of the one trace whose id starts with it) under ``run_dir``."""
    found = [e for e in _all_events(run_dir) if str(e.get("trace_id") or "").startswith(trace_id)]
    return sorted(found, key=lambda e: str(e.get("time")))


def _all_events(run_dir: Path) -> Iterator[dict[str, Any]]:
    for path in sorted(run_dir.rglob("*.log")):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            if not line.startswith("{"):
                continue  # what the process printed for people
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict) and value.get("trace_id"):
                yield value


def chain(found: list[dict[str, Any]]) -> list[Step]:
    """``found`` (one trace's events, time-ordered) in causal order (module docstring)."""
    by_span: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in found:
        by_span[str(event.get("span_id"))].append(event)
    children: dict[str | None, list[str]] = defaultdict(list)
    for span, items in by_span.items():
        parent = items[0].get("parent_span_id")
        children[parent if parent in by_span else None].append(span)
    out: list[Step] = []

    def visit(span: str, depth: int) -> None:
        # A task sent is followed by what it caused at the peer, then the span goes on.
        pending = sorted(children.get(span, []), key=lambda s: str(by_span[s][0].get("time")))
        for event in by_span[span]:
            out.append(Step(depth, event))
            if event.get("event") == "task.sent":
                caused = [c for c in pending if by_span[c][0].get("task_id") == event.get("task_id")]
                for child in caused:
                    pending.remove(child)
                    visit(child, depth + 1)
        for child in pending:
            visit(child, depth + 1)

    for root in sorted(children.get(None, []), key=lambda s: str(by_span[s][0].get("time"))):
        visit(root, 0)
    return out


def agents_in_order(steps: list[Step]) -> list[str]:
    """The agents of the chain, each where it first appears."""
    return list(dict.fromkeys(str(s.event.get("agent")) for s in steps))


def render(steps: list[Step]) -> str:
    """The chain for people: one line per event, indented by depth."""
    lines = []
    for step in steps:
        e = step.event
        where = " ".join(
            part
            for part in (
                f"task {e['task_id']}" if e.get("task_id") else "",
                f"peer {e['peer']}" if e.get("peer") else "",
                f"over {e['face']}" if e.get("face") else "",
            )
            if part
        )
        time = str(e.get("time", ""))[11:23]
        text = where or str(e.get("message"))  # the message says no more than task, peer and face
        status = f" ({e['status']})" if e.get("status") else ""
        lines.append(f"{time} {'  ' * step.depth}{e.get('agent')}: {e.get('event')} {text}{status}")
    return "\n".join(lines)
