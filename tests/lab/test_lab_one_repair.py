"""One repair per element: several incidents that lead to the same root cause at the same time make one
decision and one action (found by lab soak: without the IP agent's report, each out-of-service site of a
link with a port fault was its own incident, and each reset the link's ports)."""

from __future__ import annotations

from pathlib import Path

import pytest
from labsupport import variant

from an_agent.lab.run import run_topology
from an_agent.lab.topology import load_topology


@pytest.mark.slow
def test_sites_of_one_link_lead_to_one_port_reset(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        ("  ip-fault: [service-fault]\n", "  ip-fault: []\n"),  # no IP incident: the sites come alone
        (
            "fault: {type: link_cut, target: LINK-C2, repair_minutes: 120}",
            "fault: {type: router_port_fault, target: LINK-A5}",
        ),
    )
    result = run_topology(load_topology(path), tmp_path / "state", in_process=True, stall_timeout=30.0).to_json()
    actions = [a for a in result["outcome"]["actions"] if a["kind"] == "decision"]
    resets = [a for a in actions if "reset the router ports" in a["text"]]
    assert len(resets) == 1, [a["text"] for a in actions]
    joined = [a for a in actions if "under way" in a["text"]]
    assert joined, "the other incidents of LINK-A5 waited for the one repair"
    assert result["outcome"]["closed_loop"]
