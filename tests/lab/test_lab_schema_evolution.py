"""A shipped scenario with evolution on: repeated 'other' content becomes an experimental key later tasks use."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from labsupport import TOPOLOGIES, run

from an_agent.agents.schema_use import adopt_evolved_keys, supported_versions
from an_agent.lab.topology import load_topology
from an_agent.schemas.embedding import Embedder
from an_agent.schemas.registry import TemplateRegistry

SCENARIO = TOPOLOGIES / "schema-evolution.yaml"


def cancellations(result: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """(position in the timeline, payload) of each compensation cancellation the RAN agent assigned."""
    return [
        (i, m["payload"]["payload"])
        for i, m in enumerate(result["messages"])
        if m["commuType"] == "taskAssign" and m["from"] == "ran-fault" and m["summary"].startswith("Cancel")
    ]


def test_the_topology_runs_evolution_with_its_approval_policy() -> None:
    topology = load_topology(SCENARIO)
    agents = {a.name: a for a in topology.agents}
    assert agents["optimization"].schemas == "evolve"
    assert {a.schema_approval for a in topology.agents} == {"auto"}


@pytest.mark.slow
def test_repeated_other_becomes_an_experimental_key_that_later_tasks_use(tmp_path: Path) -> None:
    result = run(SCENARIO, tmp_path / "state")
    assert result["outcome"]["closed_loop"], [c for c in result["outcome"]["checks"] if not c["ok"]]
    negotiations = [
        (i, m)
        for i, m in enumerate(result["messages"])
        if m["operation"] == "get-schema-template" and m["from"] == "ran-fault"
    ]
    # The first negotiation finds the shipped template only.
    first = negotiations[0][1]
    assert first["summary"] == "coverage_compensation (supports v1) -> coverage_compensation_v1"
    evolved = [(i, m) for i, m in negotiations if "experimental key(s)" in m["summary"]]
    assert evolved, [m["summary"] for _, m in negotiations]
    learned_at, learned = evolved[0]
    key = learned["summary"].rsplit("experimental key(s) ", 1)[1].split(", ")[0]
    sent = cancellations(result)
    before = [p for i, p in sent if i < learned_at]
    after = [p for i, p in sent if i > learned_at]
    # Before: the compensation to cancel is only in 'other', repeated from one client until it is learnt.
    assert len(before) >= 5 and all(key not in p and "cancel compensation" in p["other"] for p in before)
    # After: every cancellation carries the experimental key, filled from what 'other' says.
    assert after and all(p.get(key) for p in after), json.dumps(after, indent=1)
    used = [n for n in result["notes"] if n["kind"] == "evolved_keys_used"]
    assert len(used) == len(after) and all(key in n["text"] for n in used)
    # The optimization agent accepted them (validated against the template with the key) and did the work.
    done = {t["task_id"]: t["status"] for t in result["tasks"]}
    assigned = [m for m in result["messages"] if m["commuType"] == "taskAssign" and m["from"] == "ran-fault"]
    assert all(done[m["task_id"]] == "finished" for m in assigned if m["summary"].startswith("Cancel"))


class _Unused:
    """An embedder that must not be asked (there is nothing to map)."""

    dimension = 384

    def embed(self, texts: Any) -> Any:
        raise AssertionError("the embedder was used")


def test_nothing_to_adopt_without_experimental_keys_or_other() -> None:
    template = TemplateRegistry.default().get("coverage_compensation_v1")
    payload = {"target_cell_ids": ["CELL-0101"], "other": "cancel compensation CMP-1"}

    def never() -> Embedder:
        return _Unused()  # type: ignore[return-value]

    assert adopt_evolved_keys(template, payload, never, 0.0).payload == payload
    assert supported_versions("coverage_compensation_v1") == ["coverage_compensation_v1"]
