"""Outsiders' agents in a lab: (a) the pip-installed example plugin plays the IP/transport fault role."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from labsupport import TOPOLOGIES, run, variant

from an_agent.errors import ConfigError
from an_agent.lab.topology import load_topology


def _closed(result: dict[str, Any]) -> None:
    failed = [c for c in result["outcome"]["checks"] if not c["ok"]]
    assert not failed, failed
    assert result["outcome"]["closed_loop"]
    fault = result["outcome"]["faults"][0]
    assert fault["root_cause_found"] and fault["root_cause"]["diagnosed_by"] == "ip-fault"


def test_example_plugin_plays_the_ip_fault_role(state_dir: Path) -> None:
    """(a): examples/acme-transport, installed with pip (make setup), named by its entry point."""
    pytest.importorskip("acme_transport", reason="make setup installs examples/acme-transport")
    result = run(TOPOLOGIES / "cross-domain-fault-acme.yaml", state_dir)
    _closed(result)
    notes = [n for n in result["notes"] if n["agent"] == "ip-fault" and n["kind"] == "diagnosis"]
    assert notes and all(n["text"].startswith("ACME: LINK-C2") for n in notes)


def test_bad_plugin_path_refuses_the_lab_naming_the_agent(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        "cross-domain-fault-acme.yaml",
        ("behaviour: acme-transport", 'behaviour: "acme_missing.agent:Agent"'),
    )
    with pytest.raises(ConfigError) as caught:
        load_topology(path)
    message = str(caught.value)
    assert "agents[2].behaviour: agent ip-fault: behaviour 'acme_missing.agent:Agent': no module" in message
