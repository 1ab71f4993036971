"""Helpers for the lab tests: shipped topologies, variants written to tmp_path, a run that checks cleanup."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from an_agent.lab.run import run_topology
from an_agent.lab.topology import load_topology

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
SHIPPED = sorted(p.name for p in TOPOLOGIES.glob("*.yaml"))


def variant(tmp_path: Path, name: str, *replacements: tuple[str, str]) -> Path:
    """A copy of a shipped topology with text replaced (each replacement must apply)."""
    text = (TOPOLOGIES / name).read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, f"{old!r} not in {name}"
        text = text.replace(old, new)
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def run(path: Path, state_dir: Path, **options: Any) -> dict[str, Any]:
    """Run a topology to its end (``options`` for `run_topology`); its ``--json`` document. Also checks that
    no thread the run started is alive."""
    before = set(threading.enumerate())
    result = run_topology(load_topology(path), state_dir, stall_timeout=30.0, **options)
    alive = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not alive, f"threads left running: {alive}"
    document = result.to_json()
    assert json.loads(json.dumps(document)) == document  # plain JSON: no enum or tuple leaks out
    assert document["outcome"]["closed_loop"] == result.outcome.closed_loop
    return document


def _without_order(value: Any) -> Any:
    if isinstance(value, dict):
        # trace ids are random (W3C trace context), like ports: they differ from run to run
        return {k: _without_order(v) for k, v in value.items() if k not in ("order", "trace_id")}
    if isinstance(value, list):
        return [_without_order(v) for v in value]
    return value


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    """A result without what legitimately differs between runs (ports, wall time, order within an instant)."""
    outcome = _without_order(result["outcome"])
    outcome["actions"] = sorted(json.dumps(a, sort_keys=True) for a in outcome["actions"])
    return {
        "outcome": json.dumps(outcome, sort_keys=True),
        "kpis": json.dumps(result["kpis"], sort_keys=True),
        "baseline": json.dumps(result["baseline"], sort_keys=True),
        "tasks": sorted(json.dumps(t, sort_keys=True) for t in result["tasks"]),
        "messages": sorted(
            (m["t"], m["from"], m["to"], m["operation"], m["task_id"] or "", m["summary"]) for m in result["messages"]
        ),
        "notes": sorted((n["t"], n["agent"], n["text"]) for n in result["notes"]),
    }
