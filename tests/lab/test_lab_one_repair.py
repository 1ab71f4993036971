"""One repair per element: several incidents that lead to the same root cause at the same time make one
decision and one action (found by lab soak: without the IP agent's report, each out-of-service site of a
link with a port fault was its own incident, and each reset the link's ports)."""

from __future__ import annotations

from pathlib import Path

import pytest
from labsupport import variant

from an_agent.lab.chaos import parse_chaos
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


@pytest.mark.slow
def test_a_restart_under_way_is_not_asked_twice_by_a_restarted_cross_domain_agent(tmp_path: Path) -> None:
    """The cross-domain agent decides the remote restart of a hung base station and is killed while the RAN
    agent restarts it; started again, it finds the station still down, diagnoses it again and asks for a
    restart again: the RAN agent does not restart it a second time, the second repair takes the outcome of
    the first (found by lab soak: the station was restarted twice, the second time while it was working)."""
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        (
            "fault: {type: link_cut, target: LINK-C2, repair_minutes: 120}",
            "fault: {type: site_software_fault, target: SITE-21}",
        ),
        ("    - at_minutes: 12\n      ticket:", "    - at_minutes: 1200\n      ticket:"),  # no complaint meanwhile
    )
    chaos = [parse_chaos("kill:service-fault@800", load_topology(path))]
    result = run_topology(load_topology(path), tmp_path / "state", chaos=chaos, stall_timeout=60.0).to_json()
    notes = [(n["time"], n["agent"], n["text"]) for n in result["notes"]]
    decisions = [n for n in notes if "automatic repair of SITE-21" in n[2]]
    assert len(decisions) == 2, notes  # once before the kill, once after
    assert result["outcome"]["network_changes"].get("ran-fault") == 1, notes  # one restart
    assert result["outcome"]["faults"][0]["restored"] is not None
