"""Issue 16 in a lab (topologies/discovery-input.yaml): peers found through the directory agent, talks_to
as policy, an input-required round trip between an executor and its assigner (NETCONF and A2A).

The logic is checked in one process (`--in-process`: same servers, same NETCONF sessions); one test runs
every agent as a process of its own, as `lab run` does by default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from labsupport import TOPOLOGIES, run, variant
from netnssupport import needs_root

from an_agent.errors import RpcError
from an_agent.lab.journal import Note
from an_agent.lab.runner import Lab
from an_agent.lab.topology import load_topology
from an_agent.model import CommuType, Task, build_prompt
from an_agent.nc.agent_client import AgentClient

TOPOLOGY = TOPOLOGIES / "discovery-input.yaml"
MEMBERS = {
    "complaint-north", "complaint-south", "tickets-north", "tickets-south", "ran-north", "ip-north", "ran-south",
    "ip-south",
}  # fmt: skip
TICKET_TASK = "complaint-south.ticket.TT-88213"


def _notes(result: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [n for n in result["notes"] if n["kind"] == kind]


def _messages(result: dict[str, Any], commu_type: str, sender: str | None = None) -> list[dict[str, Any]]:
    return [m for m in result["messages"] if m["commuType"] == commu_type and sender in (None, m["from"])]


def _check_discovery_and_input(result: dict[str, Any]) -> None:
    """What the shipped scenario must show, whatever the agents run in."""
    # every agent but the directory registered its profile when it started, before anything happened
    registered = _notes(result, "directory_registered")
    assert {n["details"]["name"] for n in registered} == MEMBERS
    assert all(n["agent"] == "directory" and n["t"] == 0 for n in registered)
    # complaint-south asked the directory for a trouble-ticket agent: both answered, talks_to kept one
    query = next(m for m in _messages(result, "AgentDiscovery", "complaint-south") if "sub-ticketing" in m["summary"])
    assert query["to"] == "directory" and query["operation"] == "find-agents"
    assert "directory answered tickets-north, tickets-south; talks_to keeps tickets-south" in query["summary"]
    assigned = {(m["from"], m["to"]) for m in _messages(result, "taskAssign")}
    assert ("complaint-south", "tickets-south") in assigned
    assert not any(to == "tickets-north" for _, to in assigned)  # found, but not allowed: never tasked
    # the directory's own record of the query
    asked = [n for n in _notes(result, "directory_find") if n["details"]["asked_by"] == "complaint-south"]
    assert any(n["details"]["found"] == ["tickets-north", "tickets-south"] for n in asked)

    # input-required: the notification lists what is missing; the assigner answers; the task resumes
    on_task = [m for m in result["messages"] if m["task_id"] == TICKET_TASK]
    summaries = [m["summary"] for m in on_task if m["operation"] in ("notification", "TaskStatusUpdateEvent")]
    asked_at = next(i for i, s in enumerate(summaries) if "input-required" in s and "asks for: occurred_at" in s)
    answer = next(m for m in on_task if m["commuType"] == "taskInputProvide")
    assert answer["from"] == "complaint-south" and answer["to"] == "tickets-south" and answer["ok"]
    assert "occurred_at 2025-06-03T17:41:00" in answer["summary"]
    assert summaries[-1].startswith("processing->finished") or summaries[-1].startswith("finished")
    assert asked_at < len(summaries) - 1
    if on_task[0]["operation"] == "edit-config":  # NETCONF: the resume is its own notification
        assert "input-required->processing" in summaries[asked_at + 1]
    provided = _notes(result, "input_provided")
    assert [n["agent"] for n in provided] == ["tickets-south"]
    assert "complaint-south provided occurred_at" in provided[0]["text"]
    task = next(t for t in result["tasks"] if t["task_id"] == TICKET_TASK)
    assert task["status"] == "finished"

    # the ticket about the north sent to the south: the directory knows complaint-north, talks_to forbids it
    closed = {n["details"]["task_id"]: n for n in _notes(result, "ticket_closed")}
    assert closed["bss.ticket.1"]["details"]["status"] == "finished"
    failed = closed["bss.ticket.2"]
    assert failed["details"]["status"] == "failed"
    assert "among the agents complaint-south may talk to (tickets-south)" in failed["text"]
    assert "the directory answered complaint-north" in failed["text"]
    refused = [m for m in _messages(result, "AgentDiscovery", "complaint-south") if m["status"] == "no fit"]
    assert refused and "complaint-handling" in refused[0]["summary"]
    assert result["outcome"]["closed_loop"]


def test_discovery_and_input_round_trip_in_process(state_dir: Path) -> None:
    notes: list[Note] = []
    result = run(TOPOLOGY, state_dir, in_process=True, on_note=notes.append)
    _check_discovery_and_input(result)
    # and every agent deregistered when it stopped (after the result was read back)
    deregistered = {n.details["name"] for n in notes if n.kind == "directory_deregistered"}
    assert deregistered == MEMBERS


@pytest.mark.slow
def test_discovery_and_input_round_trip_with_agent_processes(state_dir: Path) -> None:
    notes: list[Note] = []
    result = run(TOPOLOGY, state_dir, on_note=notes.append)
    for name in (*MEMBERS, "directory"):  # every agent a process of its own, with its own log
        assert "serving" in (state_dir / "agents" / name / "agent.log").read_text(encoding="utf-8"), name
    _check_discovery_and_input(result)
    deregistered = {n.details["name"] for n in notes if n.kind == "directory_deregistered"}
    assert deregistered == MEMBERS


@needs_root
@pytest.mark.slow
def test_discovery_in_network_namespaces(state_dir: Path) -> None:
    """Each agent in its namespace registers its lab address; peers are reached there, through the bridge."""
    notes: list[Note] = []
    result = run(TOPOLOGY, state_dir, netns=True, on_note=notes.append)
    _check_discovery_and_input(result)
    registered = [n for n in notes if n.kind == "directory_registered"]
    assert all(" 198.18." in n.text for n in registered), [n.text for n in registered]
    assert {n.details["name"] for n in notes if n.kind == "directory_deregistered"} == MEMBERS


def test_input_answered_over_a2a(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        "discovery-input.yaml",
        ("port: 18874\n", "port: 18874\n    a2a_port: 18879\n"),
        ("complaint-south: [tickets-south]", "complaint-south: [{agent: tickets-south, transport: a2a}]"),
    )
    result = run(path, tmp_path / "state", in_process=True)
    on_task = [m for m in result["messages"] if m["task_id"] == TICKET_TASK]
    assert any(m["operation"] == "SendStreamingMessage" and m["commuType"] == "taskAssign" for m in on_task)
    updates = [m["summary"] for m in on_task if m["operation"] == "TaskStatusUpdateEvent"]
    assert any("input-required" in s and "asks for: occurred_at" in s for s in updates), updates
    answer = next(m for m in on_task if m["commuType"] == "taskInputProvide")
    assert answer["operation"] == "SendMessage" and answer["ok"]
    assert updates[-1].startswith("finished"), updates
    assert next(t for t in result["tasks"] if t["task_id"] == TICKET_TASK)["status"] == "finished"
    assert result["outcome"]["closed_loop"]


def test_a_receiver_refuses_a_sender_talks_to_does_not_allow(state_dir: Path) -> None:
    with Lab(load_topology(TOPOLOGY), state_dir, in_process=True) as lab:
        lab.start()
        user, password = lab.login_of("complaint-north")  # it may talk to tickets-north, not tickets-south
        host, port = lab.address_of("tickets-south") or ("", 0)
        task = Task(
            "complaint-north.ticket.X",
            send_from="complaint-north",
            send_to="tickets-south",
            commu_type=CommuType.TASK_ASSIGN,
            content=build_prompt("A4 exit 12", "Resolve complaint ticket TT-1"),
            task_async=True,
        )
        with AgentClient.connect(host, port, username=user, password=password) as client:
            with pytest.raises(RpcError) as refused:
                client.assign_task(task)
            assert refused.value.error_tag == "access-denied"
            assert "talks_to does not let it assign tasks here (allowed: complaint-south)" in str(refused.value)
            assert client.list_tasks() == []  # nothing was stored


def test_without_a_directory_talks_to_is_the_wiring() -> None:
    topology = load_topology(TOPOLOGIES / "iov-complaint.yaml")
    assert topology.directory_agent is None
    assert load_topology(TOPOLOGY).directory_agent == "directory"
