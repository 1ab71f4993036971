"""The IP transport fault agent served on its own (``serve --topology``): a remote repair asked over NETCONF."""

from __future__ import annotations

from pathlib import Path

from agentsupport import served

from an_agent.agents import payloads
from an_agent.lab.network import SimNetwork
from an_agent.lab.spec import FaultSpec, FaultType
from an_agent.model import CommuType, Task, TaskStatus, build_prompt

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
    param = payloads.data_param("repair.LINK-A4.payload", value, "repair")
    with served(TOPOLOGY, "ip-fault", tmp_path / "ip") as (client, behaviour, _):
        network = behaviour.env.network
        assert isinstance(network, SimNetwork)
        network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
        network.inject(FaultSpec(FaultType.ROUTER_PORT_FAULT, "LINK-A4"))
        events = client.watch("repair.LINK-A4")
        client.assign_task(
            Task(
                task_id="repair.LINK-A4",
                send_from="service-fault",
                commu_type=CommuType.TASK_ASSIGN,
                content=build_prompt("LINK-A4", "Repair LINK-A4 remotely"),
                task_async=True,
                msg_data=[param.id],
            ),
            [param],
        )
        for event in events:
            if event.status.terminal:
                break
        task = client.get_task("repair.LINK-A4")
        resets = [(c.element, c.action) for c in network.changes() if c.by == "ip-fault"]
    assert task.status == TaskStatus.FINISHED, task
    assert resets == [("LINK-A4", "port_reset")], resets
