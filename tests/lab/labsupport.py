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


def run(path: Path, state_dir: Path) -> dict[str, Any]:
    """Run a topology to its end; its ``--json`` document. Also checks that no thread the run started is alive."""
    before = set(threading.enumerate())
    result = run_topology(load_topology(path), state_dir, stall_timeout=30.0)
    alive = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not alive, f"threads left running: {alive}"
    document = result.to_json()
    assert json.loads(json.dumps(document)) == document  # plain JSON: no enum or tuple leaks out
    assert document["outcome"]["closed_loop"] == result.outcome.closed_loop
    return document
