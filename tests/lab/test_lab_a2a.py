"""A topology link marked ``transport: a2a``: tasks over the receiver's A2A face, the rest over NETCONF."""

from __future__ import annotations

from pathlib import Path

import pytest
from labsupport import TOPOLOGIES, run, variant

from an_agent.errors import ConfigError
from an_agent.lab.topology import load_topology

SHIPPED = TOPOLOGIES / "cross-domain-fault.yaml"


def test_the_link_and_the_a2a_port_load() -> None:
    topology = load_topology(SHIPPED)
    assert topology.a2a_links == frozenset({("service-fault", "ip-fault")})
    assert topology.over_a2a("service-fault") == frozenset({"ip-fault"})
    assert topology.agent("ip-fault").a2a_port == 18843 and topology.agent("ran-fault").a2a_port is None
    assert topology.talks_to["service-fault"] == ("ip-fault", "ran-fault", "fme-copilot")


def test_an_a2a_link_needs_the_receivers_a2a_port(tmp_path: Path) -> None:
    path = variant(tmp_path, "cross-domain-fault.yaml", ("a2a_port: 18843, ", ""))
    with pytest.raises(ConfigError, match=r"talks_to\.service-fault\[0\]\.transport: a2a needs ip-fault to serve A2A"):
        load_topology(path)
    path = variant(tmp_path, "cross-domain-fault.yaml", ("transport: a2a", "transport: smoke-signals"))
    with pytest.raises(ConfigError, match="talks_to"):
        load_topology(path)


def test_the_diagnosis_goes_over_a2a_and_the_rest_over_netconf(state_dir: Path) -> None:
    result = run(SHIPPED, state_dir)
    assert result["outcome"]["closed_loop"], result["outcome"]["checks"]
    link = [m for m in result["messages"] if m["from"] == "service-fault" and m["to"] == "ip-fault"]
    by_operation = [(m["operation"], m["commuType"]) for m in link]
    assert ("GET agent-card", "CapabilityRequest") in by_operation
    assert ("SendStreamingMessage", "taskAssign") in by_operation
    assert ("GetTask", "taskResultQuery") in by_operation
    assert ("task-negotiate", "FeasibilityNegotiate") in by_operation  # A2A has no negotiation
    assert ("edit-config", "taskAssign") not in by_operation
    updates = [m for m in result["messages"] if m["operation"] == "TaskStatusUpdateEvent"]
    # The stream opens with the task as created (the SendStreamingMessage reply), then each change after it.
    assert [m["status"] for m in updates] == ["processing", "finished"]
    assert {m["from"] for m in updates} == {"ip-fault"}
    # No notification of that task came twice (NETCONF's is not the hand-off for an A2A task).
    assert not [m for m in result["messages"] if m["operation"] == "notification" and m["from"] == "ip-fault"]
    # Every other link is NETCONF.
    others = [m for m in result["messages"] if (m["from"], m["to"]) != ("service-fault", "ip-fault")]
    assert not [m for m in others if m["operation"] in ("SendStreamingMessage", "GetTask", "GET agent-card")]
    diagnosis = next(t for t in result["tasks"] if t["task_id"] == "service-fault.diagnose.LINK-C2")
    assert diagnosis["status"] == "finished" and diagnosis["payload"]["schema_id"] == "fault_diagnosis_v1"
