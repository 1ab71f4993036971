"""The resource-layer FME copilot served on its own (``serve --topology``): structured queries over NETCONF."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from agentsupport import assign_and_wait, served

from an_agent.agents import payloads
from an_agent.model import NegotiationRequest, NegotiationType, Task, TaskStatus
from an_agent.nc.agent_client import AgentClient

TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "cross-domain-fault.yaml"


Copilot = tuple[AgentClient, int]
"""A session to the copilot, and its port (a query watches on a session of its own)."""


@pytest.fixture
def copilot(tmp_path: Path) -> Iterator[Copilot]:
    with served(TOPOLOGY, "network-copilot", tmp_path / "copilot") as (client, _, port):
        yield client, port


def ticket(device: str, fault: str = "fibre_cut") -> dict[str, object]:
    return payloads.envelope("trouble_ticket_v1", {"ticket_id": "TT-000042", "device": device, "fault": fault})


def query(copilot: Copilot, task_id: str, verb: str, device: str, fault: str = "fibre_cut") -> Task:
    """A query on its own session (a session holds one subscription), answered by notification."""
    client, port = copilot
    with AgentClient.connect("127.0.0.1", port, username="admin", password="admin") as watcher:
        return assign_and_wait(
            client, task_id, "fme-copilot", device, f"{verb} of {device}", ticket(device, fault), "query", watcher
        )


def test_structured_queries_are_answered_from_the_network(copilot: Copilot) -> None:
    facts = query(copilot, "q1", "facts", "LINK-C2")
    assert facts.status == TaskStatus.FINISHED and facts.result is not None
    data = json.loads(facts.result.data or "{}")
    assert (data["facts"]["a"], data["facts"]["b"], data["facts"]["up"]) == ("CR-1", "AGG-2", True)
    assert "otdr" not in data["facts"]  # no cut on the idle network
    guide = json.loads(query(copilot, "q2", "guide", "LINK-C2").result.data or "{}")  # type: ignore[union-attr]
    assert "no OTDR reading" in guide["steps"][1]["action"]
    power = json.loads(query(copilot, "q3", "guide", "SITE-14", "mains_power_lost").result.data or "{}")  # type: ignore[union-attr]
    assert [s["kind"] for s in power["steps"]] == ["inspect", "repair", "verify"]
    unknown = json.loads(query(copilot, "q4", "guide", "SITE-14", "unknown").result.data or "{}")  # type: ignore[union-attr]
    assert unknown["fault"] == "none" and unknown["steps"] == []  # the network shows nothing to repair
    status = json.loads(query(copilot, "q5", "status", "SITE-14").result.data or "{}")  # type: ignore[union-attr]
    assert status["in_service"] is True
    bad = query(copilot, "q6", "sing", "SITE-14")
    assert bad.status == TaskStatus.FAILED and "unknown query 'sing'" in (bad.result.reason or "")  # type: ignore[union-attr]


def test_an_unknown_device_is_not_feasible(copilot: Copilot) -> None:
    answer = copilot[0].negotiate(
        NegotiationRequest(
            "x",
            NegotiationType.FEASIBILITY,
            [payloads.proposal("LINK-Z9", "facts of LINK-Z9", ticket("LINK-Z9"))],
            "fme-copilot",
        )
    )
    assert answer.feasible is False and "no link, site or cell 'LINK-Z9'" in (answer.reason or "")
