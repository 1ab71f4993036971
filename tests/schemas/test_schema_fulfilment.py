"""FULFILLMENT is the requester's judgement: criteria it sent, checked against the result it got."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.agents.default import DefaultBehaviour
from an_agent.agents.sdk import Outcome
from an_agent.cli import main
from an_agent.lab.agent import make_behaviour
from an_agent.lab.journal import Journal, Note
from an_agent.lab.kernel import SimKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.topology import load_topology
from an_agent.model import (
    AgentProfile,
    CommuType,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    TaskResult,
    TaskStatus,
    build_prompt,
)
from an_agent.nc.agent_client import AgentClient
from an_agent.schemas.fulfilment import Expectation, request_expectation
from an_agent.server import AgentServer, ServerConfig
from support import TEST_PROFILE

ENERGY_LAB = Path(__file__).resolve().parents[2] / "topologies" / "fault-energy-optimization.yaml"


def finished(data: dict[str, object] | str, status: TaskStatus = TaskStatus.FINISHED) -> Task:
    text = data if isinstance(data, str) else json.dumps(data)
    return Task("t1", status=status, result=TaskResult(summary="done", data=text, reason="it broke"))


def test_keys_ranges_values_and_covers_are_each_checked() -> None:
    expect = Expectation(
        keys=("root_cause",),
        ranges={"tx_power_delta_db": (0.0, 3.0)},
        values={"fault_type": ("link_cut", "site_power_failure")},
        covers={"explained_site_ids": ("SITE-01", "SITE-02")},
    )
    good = {"root_cause": "fibre cut", "tx_power_delta_db": 2, "fault_type": "link_cut",
            "explained_site_ids": ["SITE-01", "SITE-02", "SITE-03"]}  # fmt: skip
    judgement = expect.judge(finished(good))
    assert judgement.fulfilled and judgement.problems == ()
    assert "root_cause" in judgement.reason
    bad = {"root_cause": "", "tx_power_delta_db": 4.5, "fault_type": "none", "explained_site_ids": ["SITE-01"]}
    judgement = expect.judge(finished(bad))
    assert not judgement.fulfilled
    assert judgement.problems == (
        "the result has no root_cause",
        "tx_power_delta_db = 4.5 is outside [0, 3]",
        'fault_type is "none", not one of "link_cut", "site_power_failure"',
        "explained_site_ids does not cover SITE-02",
    )
    assert expect.judge(finished({**good, "tx_power_delta_db": "2"})).problems == (
        'tx_power_delta_db is "2", not a number in [0, 3]',
    )


def test_a_task_not_finished_or_without_json_is_not_fulfilled() -> None:
    expect = Expectation(keys=("root_cause",))
    failed = expect.judge(finished({"root_cause": "x"}, TaskStatus.FAILED))
    assert not failed.fulfilled and failed.problems == ("task t1 is failed, not finished", "it broke")
    assert expect.judge(finished("plain text")).problems == ("task t1 has no JSON object as its result",)
    assert expect.judge(None).problems == ("there is no such task",)
    assert Expectation().judge(finished("plain text")).fulfilled  # nothing checkable: finished suffices
    # A structured result is judged by its payload.
    envelope = {"schema_id": "x_v1", "payload": {"root_cause": "y"}}
    assert expect.judge(finished(envelope)).fulfilled


def test_the_expected_response_forms() -> None:
    expect = Expectation(keys=("a",), ranges={"n": (1.0, None)}, values={"v": (1, "x")}, covers={"l": ("p",)})
    assert Expectation.parse(expect.to_text()) == expect
    assert Expectation.parse("root_cause, recommendations") == Expectation(keys=("root_cause", "recommendations"))
    assert Expectation.parse("the repair report").empty
    assert Expectation.parse("{not json").empty
    content = [build_prompt("t1", "evaluate", expect.to_text())]
    assert request_expectation(content) == expect
    assert request_expectation([build_prompt("t1", "evaluate")]) is None


class Boastful(DefaultBehaviour):
    """An executor that says "fulfilled" to every FULFILLMENT, whatever its result."""

    def negotiate(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        if request.type == NegotiationType.FULFILLMENT:
            return NegotiationResult(NegotiationType.FULFILLMENT, fulfilled=True, reason="trust me, it is done")
        return super().negotiate(request, task)


@pytest.fixture
def boastful(tmp_path: Path) -> Iterator[tuple[AgentServer, AgentClient]]:
    config = ServerConfig(
        tmp_path / "state", port=0, profile=AgentProfile.from_dict(TEST_PROFILE), behaviour=Boastful(), schemas="off"
    )
    with (
        AgentServer(config) as server,
        AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client,
    ):
        events = client.watch("x1", timeout=30)
        client.assign_task(
            Task(
                "x1",
                send_from="requester",
                commu_type=CommuType.TASK_ASSIGN,
                content=build_prompt("SITE-07", "diagnose the outage"),
                expected_response=Expectation(keys=("root_cause",)).to_text(),
            )
        )
        assert [e.status for e in events][-1] == TaskStatus.FINISHED
        yield server, client


def test_the_executor_says_fulfilled_the_requester_judges_not(boastful: tuple[AgentServer, AgentClient]) -> None:
    _, client = boastful
    verdict = client.fulfilment("x1")  # by the task's own expected-response
    assert verdict.executor_fulfilled is True and verdict.disagrees
    assert not verdict.fulfilled
    assert verdict.judgement.problems == ("the result has no root_cause",)
    assert "the executor said fulfilled: trust me" in verdict.reason
    # The requester's own outcome criterion comes on top of what it sent.
    met = client.fulfilment("x1", Expectation(keys=("target_object",)))
    assert met.fulfilled and not met.disagrees
    own = client.fulfilment("x1", Expectation(keys=("target_object",)), check=lambda r: ["not SITE-01"])
    assert not own.fulfilled and own.judgement.problems == ("not SITE-01",)


def test_cli_fulfilment_is_the_requesters_verdict(
    boastful: tuple[AgentServer, AgentClient], capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = boastful
    base = ["task", "negotiate", "--port", str(server.port), "--type", "fulfillment", "--id", "x1"]
    assert main(base) == 1
    out = capsys.readouterr().out
    assert "NOT fulfilled (judged by the requester): the result has no root_cause" in out
    assert "the agent says: fulfilled: trust me, it is done" in out
    assert main([*base, "--expect-key", "target_object", "--expect-value", "target_object=SITE-07", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["fulfilled"] is True and answer["executor"]["fulfilled"] is True
    assert main([*base, "--expect-range", "target_object=1..2"]) == 1
    assert 'target_object is "SITE-07", not a number in [1, 2]' in capsys.readouterr().out
    assert main([*base, "--expect-range", "target_object=x"]) == 2
    assert "KEY=MIN..MAX" in capsys.readouterr().err


def test_a_lab_agent_judges_its_peers_result_itself(boastful: tuple[AgentServer, AgentClient]) -> None:
    server, client = boastful
    topology = load_topology(ENERGY_LAB)
    spec = topology.agent("ran-fault")
    peer = topology.talks_to["ran-fault"][0]
    kernel = SimKernel(topology.start_time, peers_elsewhere=True)
    network = SimNetwork(topology.network, topology.seed, kernel.now, kernel.call_at)
    notes: list[Note] = []
    journal = Journal(kernel.now, on_note=notes.append)
    requester, peers = make_behaviour(topology, spec, kernel, network, journal, lambda name: ("127.0.0.1", server.port))
    try:
        outcome = Outcome(client.get_task("x1"), None)
        assert requester.evaluate(peer, outcome, ["root_cause"], {}) is False
        (disputed,) = [n for n in notes if n.kind == "fulfillment_disputed"]
        assert f"{peer} says task x1 is fulfilled" in disputed.text
        assert "judges it not fulfilled: the result has no root_cause" in disputed.text
        assert requester.evaluate(peer, outcome, ["target_object"], {}) is True
        # Both FULFILLMENT negotiations are in the timeline, criteria included.
        asked = [e for e in journal.exchanges() if e.operation == "task-negotiate"]
        assert [e.commu_type for e in asked] == ["FulfillmentNegotiate"] * 2
    finally:
        peers.close()
        assert kernel.close() == []
