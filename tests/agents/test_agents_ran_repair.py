"""The RAN fault agent served on its own (``serve --topology``): a repair asked over NETCONF."""

from __future__ import annotations

from pathlib import Path

from agentsupport import assign_and_wait, served

from an_agent.agents import payloads
from an_agent.model import TaskStatus

TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "cross-domain-fault.yaml"


def test_a_repair_of_a_site_back_to_normal_already_is_done_not_failed(tmp_path: Path) -> None:
    """A repair task resumed after a restart finds the site its previous incarnation restarted working: the task
    finishes saying so (found by lab soak: it failed, and its assigner sent a field engineer to a working site).
    """
    value = payloads.envelope(
        "fault_diagnosis_v1",
        {"fault_type": "base_station_outage", "affected_site_ids": ["SITE-18"], "other": "repair: restart SITE-18"},
    )
    with served(TOPOLOGY, "ran-fault", tmp_path / "ran") as (client, _, _):
        task = assign_and_wait(
            client, "repair.SITE-18", "service-fault", "SITE-18",
            "Repair SITE-18 remotely: restart the base station", value, "repair",
        )  # fmt: skip
    assert task.status == TaskStatus.FINISHED and task.result is not None, task
    assert "nothing left to repair" in (task.result.reason or "")
