"""ACME transport agent: unit checks on its own, and the whole scenario through the an-agent CLI.

Run from this directory after ``pip install .`` (an-agent installed in the same environment):
``python -m pytest tests``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from acme_transport import TransportFaultAgent

from an_agent.agents.sdk import API_VERSION, LabBehaviour

TOPOLOGY = Path(__file__).resolve().parents[3] / "topologies" / "cross-domain-fault-acme.yaml"


def test_written_against_version_1_of_the_api() -> None:
    assert API_VERSION.startswith("1.")
    assert issubclass(TransportFaultAgent, LabBehaviour)
    assert TransportFaultAgent.description.startswith("ACME")


@pytest.mark.skipif(not TOPOLOGY.exists(), reason="needs the an-agent checkout (its topologies)")
def test_closes_the_cross_domain_fault_loop(tmp_path: Path) -> None:
    """The shipped scenario with this agent as its IP/transport fault role: same outcome checks as with ours."""
    done = subprocess.run(
        [sys.executable, "-m", "an_agent.cli", "lab", "run", str(TOPOLOGY), "--state-dir", str(tmp_path), "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["outcome"]["closed_loop"], [c for c in result["outcome"]["checks"] if not c["ok"]]
    assert result["outcome"]["faults"][0]["root_cause"]["diagnosed_by"] == "ip-fault"
    assert any(n["text"].startswith("ACME: ") for n in result["notes"] if n["agent"] == "ip-fault")
