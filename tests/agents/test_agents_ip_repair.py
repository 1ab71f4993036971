"""The IP transport fault agent served on its own (``serve --topology``): a remote repair asked over NETCONF."""

from __future__ import annotations

from pathlib import Path

from agentsupport import assign_and_wait, served

from an_agent.agents import payloads
from an_agent.lab.network import SimNetwork
from an_agent.lab.spec import FaultSpec, FaultType
from an_agent.model import TaskStatus

TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "cross-domain-fault.yaml"


def test_a_port_reset_touches_only_the_links_a_reset_can_bring_up(tmp_path: Path) -> None:
    """The sites behind a faulty port are also behind a cut core fibre: the repair resets the faulty port's
    link only, not the cut one (found by lab soak: every down link of the backhaul got a port reset)."""
    value = payloads.envelope(
        "fault_diagnosis_v1",
        {
            "fault_type": "transmission_failure",
            "affected_site_ids": ["SITE-17", "SITE-18"],
            "other": "repair: reset the router ports (LINK-A4)",
        },
    )
    with served(TOPOLOGY, "ip-fault", tmp_path / "ip") as (client, behaviour, _):
        network = behaviour.env.network
        assert isinstance(network, SimNetwork)
        network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
        network.inject(FaultSpec(FaultType.ROUTER_PORT_FAULT, "LINK-A4"))
        task = assign_and_wait(
            client, "repair.LINK-A4", "service-fault", "LINK-A4", "Repair LINK-A4 remotely", value, "repair"
        )
        resets = [(c.element, c.action) for c in network.changes() if c.by == "ip-fault"]
    assert task.status == TaskStatus.FINISHED, task
    assert resets == [("LINK-A4", "port_reset")], resets
