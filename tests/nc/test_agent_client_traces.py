"""A task's trace context goes only to agents that implement an-agent-trace: ours get the leaf, an agent of
the draft alone (yuma123's netconfd serving irtf-agent) gets the task without it, instead of refusing it."""

from __future__ import annotations

import sys
from pathlib import Path

from lxml import etree

from an_agent.model import AN_AGENT_TRACE_NS, CommuType, Task
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level package of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench.reference import NetconfdReference  # noqa: E402

from bench import data  # noqa: E402

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def _task(task_id: str) -> Task:
    return Task(
        task_id,
        send_from="tester",
        commu_type=CommuType.TASK_ASSIGN,
        content="## target object\nSITE-07\n## task description\ndiagnose the outage",
        traceparent=TRACEPARENT,
    )


def test_our_agent_gets_the_trace_context(agent_server: AgentServer) -> None:
    with AgentClient.connect("127.0.0.1", agent_server.port, username="admin", password="admin") as client:
        assert client.carries_traces()
        client.assign_task(_task("traced"))
        assert client.get_task("traced").traceparent == TRACEPARENT


def test_an_agent_of_the_draft_alone_gets_the_task_without_it() -> None:
    modules = ROOT / "src" / "an_agent" / "yang" / "modules"
    with NetconfdReference(modules, ["irtf-agent"], data.profile_xml()) as reference:
        credentials = reference.credentials
        with AgentClient.connect(
            reference.host, reference.port, username=credentials.username, key_filename=str(credentials.key_file)
        ) as client:
            assert not client.carries_traces()
            client.assign_task(_task("untraced"))  # with the leaf, netconfd would refuse an unknown element
            config = client.netconf.get_config()
            assert config.find(f".//{{{AN_AGENT_TRACE_NS}}}traceparent") is None
            assert "untraced" in etree.tostring(config).decode()
