"""The A2A gateway: an agent built with a2a-sdk alone (its own process), behind our NETCONF face."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from byosupport import (
    UPSTREAM,
    capacity_task,
    connect,
    profile_file,
    run_cli,
    serve,
    start_upstream,
    wait_end,
    wait_status,
)

from an_agent.model import CommuType, DataParam, DataType, Task, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.schemas.from_jsonschema import template_from_json_schema
from an_agent.schemas.jsonschema import template_json_schema
from an_agent.schemas.registry import TemplateRegistry


@pytest.fixture
def upstream() -> Iterator[str]:
    proc, url = start_upstream()
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_upstream_imports_nothing_of_ours() -> None:
    source = UPSTREAM.read_text(encoding="utf-8")
    assert "an_agent" not in source and "from a2a.server" in source


def test_templates_round_trip_through_their_json_schema() -> None:
    """The gateway's projection is the inverse of our card's: every shipped template comes back the same."""
    for template in TemplateRegistry.default().templates():
        back = template_from_json_schema(template.schema_id, template_json_schema(template))
        assert back.scenario == template.scenario
        for mine, theirs in zip(template.keys, back.keys, strict=True):
            assert (theirs.key_name, theirs.key_type, theirs.required) == (mine.key_name, mine.key_type, mine.required)
            assert theirs.constraints.enum == mine.constraints.enum, mine.key_name
            assert (theirs.constraints.minimum, theirs.constraints.maximum) == (
                mine.constraints.minimum,
                mine.constraints.maximum,
            )


@pytest.mark.slow  # agent processes, several seconds
def test_gateway_relays_tasks_both_ways(tmp_path: Path, upstream: str) -> None:
    with serve(tmp_path, "--a2a-upstream", upstream) as port, connect(port) as client:
        profile = client.profile()
        assert (profile.name, profile.provider, profile.version) == ("acme-capacity", "ACME Networks", "2.1.0")
        skill = profile.skills[0]
        assert skill.name == "capacity-check" and "application/json;schema=transport_capacity_v1" in skill.input_modes
        template = client.schemas.template("transport_capacity", refresh=True).template
        link = template.key("link_id")
        assert link is not None and link.required and link.key_type == "string"
        gbps = template.key("min_gbps")
        assert gbps is not None and (gbps.constraints.minimum, gbps.constraints.maximum) == (0, 400)
        assert gbps.constraints.unit == "gbps"
        direction = template.key("direction")
        assert direction is not None and direction.constraints.enum == ("up", "down")

        capacity_task(client, "t1", {"link_id": "LINK-C2", "min_gbps": 10})
        done = wait_end(client, "t1")
        assert done.status is not None and done.status.value == "finished", done.result
        assert json.loads(done.result.data or "") == {"enough": True, "link_id": "LINK-C2", "spare_gbps": 42.0}  # type: ignore[union-attr]

        # a payload against the projected template is checked here, before anything reaches the upstream
        with pytest.raises(Exception, match="min_gbps"):
            capacity_task(client, "t2", {"link_id": "LINK-C2", "min_gbps": 1000})

        # input-required both ways: the upstream asks, our assigner answers, the answer goes up
        capacity_task(client, "t3", {"link_id": "LINK-ASK"})
        asked = wait_status(client, "t3", "input-required")
        assert "which maintenance window" in (asked.result.reason or "")  # type: ignore[union-attr]
        answer = DataParam(id="t3.in", data_type=DataType.TEXT, format="text/plain", data="answer: tonight 02:00")
        client.provide_input("t3", [answer])
        done = wait_end(client, "t3")
        assert done.status is not None and done.status.value == "finished", done.result
        assert json.loads(done.result.data or "")["window"] == "tonight 02:00"  # type: ignore[union-attr]

        capacity_task(client, "t4", {"link_id": "LINK-BROKEN"})
        failed = wait_end(client, "t4")
        assert failed.status is not None and failed.status.value == "failed"
        assert "no record of LINK-BROKEN" in (failed.result.reason or "")  # type: ignore[union-attr]

        capacity_task(client, "t5", {"link_id": "LINK-SLOW"})
        wait_status(client, "t5", "processing")
        client.cancel_task("t5")
        assert wait_end(client, "t5").status.value == "canceled"  # type: ignore[union-attr]

        # a task without a payload travels as text
        client.assign_task(
            Task(task_id="t6", send_from="admin", commu_type=CommuType.TASK_ASSIGN,
                 content=build_prompt("LINK-C2", "how busy is it"), task_async=True)
        )  # fmt: skip
        echoed = wait_end(client, "t6")
        assert echoed.result is not None and echoed.result.data == "echo: how busy is it"


@pytest.mark.slow  # agent processes, several seconds
def test_gateway_refuses_to_start_on_a_bad_upstream(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    down = run_cli("serve", "--a2a-upstream", f"http://127.0.0.1:{closed}", "--port", "0",
                   "--state-dir", str(tmp_path / "a"), timeout=60)  # fmt: skip
    assert down.returncode != 0 and "Traceback" not in down.stderr
    assert f"the A2A upstream http://127.0.0.1:{closed} does not answer with an agent card" in down.stderr

    proc, url = start_upstream("--bad-schema")
    try:
        bad = run_cli("serve", "--a2a-upstream", url, "--port", "0", "--state-dir", str(tmp_path / "b"), timeout=60)
    finally:
        proc.terminate()
        proc.wait(10)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert "declares a schema the gateway cannot serve" in bad.stderr
    assert "linkId: property names must be snake_case" in bad.stderr
    assert "type 'frobnicate' is not one of" in bad.stderr


@pytest.mark.slow  # three agent processes
def test_gateway_in_front_of_an_agent_of_ours_with_a_login(tmp_path: Path) -> None:
    """Any A2A v1 agent: here our own A2A face, whose card we generate, behind HTTP Basic."""
    profile = profile_file(tmp_path, "inner-agent")
    inner = ["--profile", str(profile), "--a2a-port", "0", "--a2a-tls", "off", "--user", "bob:s3cret"]
    (tmp_path / "inner").mkdir()
    with serve(tmp_path / "inner", *inner):
        log = (tmp_path / "inner" / "serve.log").read_text(encoding="utf-8")
        url = re.search(r"A2A on (http://127\.0\.0\.1:\d+)/", log)
        assert url, log
        outer = tmp_path / "outer"
        outer.mkdir()
        gateway = ["--a2a-upstream", url.group(1), "--a2a-upstream-auth", "bob:s3cret"]
        with serve(outer, *gateway) as port, connect(port) as client:
            assert client.profile().name == "inner-agent"
            _capacity_free_text(client, "t1", "## target object\nSITE-09\n## task description\nDiagnose the fault")
            # our agent maps the words to a fault_diagnosis_v1 payload and asks for the key it lacks, by name:
            # the question comes through the gateway as input-required naming that key, the answer goes back
            asked = wait_status(client, "t1", "input-required")
            assert any("fault_type" in item.required for item in asked.input_required), asked.input_required
            answer = DataParam(id="t1.in", data_type=DataType.TEXT, format="text/plain", data="fault_type: unknown")
            client.provide_input("t1", [answer])
            done = wait_end(client, "t1")
            assert done.status is not None and done.status.value == "finished", done.result
        wrong = tmp_path / "wrong"
        wrong.mkdir()
        with (
            serve(wrong, "--a2a-upstream", url.group(1), "--a2a-upstream-auth", "bob:nope") as port,
            connect(port) as c,
        ):
            _capacity_free_text(c, "t2", "## target object\nSITE-09\n## task description\nDiagnose the fault")
            failed = wait_end(c, "t2")  # the card is public; the message is refused
            assert failed.status is not None and failed.status.value == "failed"
            assert "the A2A agent at" in (failed.result.reason or "")  # type: ignore[union-attr]


def _capacity_free_text(client: AgentClient, task_id: str, content: str) -> None:
    client.assign_task(Task(task_id=task_id, send_from="admin", commu_type=CommuType.TASK_ASSIGN, content=content,
                            task_async=True))  # fmt: skip


@pytest.mark.slow  # two processes
def test_an_upstream_that_goes_away_fails_the_task_not_the_agent(tmp_path: Path) -> None:
    proc, url = start_upstream()
    try:
        with serve(tmp_path, "--a2a-upstream", url) as port, connect(port) as client:
            proc.terminate()
            proc.wait(10)
            capacity_task(client, "t1", {"link_id": "LINK-C2"})
            failed = wait_end(client, "t1")
            assert failed.status is not None and failed.status.value == "failed"
            assert f"the A2A agent at {url}" in (failed.result.reason or "")  # type: ignore[union-attr]
            assert client.profile().name == "acme-capacity"  # the agent itself goes on
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)


def _trace_events(log: Path, name: str) -> list[dict[str, object]]:
    lines = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines() if x.startswith("{")]
    return [x for x in lines if x.get("event") == name]


@pytest.mark.slow  # two processes
def test_gateway_carries_the_task_trace_to_its_upstream(tmp_path: Path) -> None:
    """A task's trace goes on through the gateway (A2A message metadata) to the agent behind it."""
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    profile = profile_file(tmp_path, "inner-agent")
    json_logs = ["--log-format", "json"]
    (tmp_path / "inner").mkdir()
    inner_argv = ["--profile", str(profile), "--a2a-port", "0", "--a2a-tls", "off", "--user", "bob:s3cret"]
    with serve(tmp_path / "inner", *inner_argv, *json_logs):
        log = (tmp_path / "inner" / "serve.log").read_text(encoding="utf-8")
        url = re.search(r"A2A on (http://127\.0\.0\.1:\d+)/", log)
        assert url, log
        outer = tmp_path / "outer"
        outer.mkdir()
        gateway = ["--a2a-upstream", url.group(1), "--a2a-upstream-auth", "bob:s3cret", *json_logs]
        with serve(outer, *gateway) as port, connect(port) as client:
            content = "## target object\nSITE-09\n## task description\nDiagnose the fault"
            client.assign_task(Task(task_id="t1", send_from="admin", commu_type=CommuType.TASK_ASSIGN,
                                    content=content, task_async=True,
                                    traceparent=f"00-{trace}-00f067aa0ba902b7-01"))  # fmt: skip
            wait_status(client, "t1", "input-required")  # the inner agent has the task and asks for a key
    received = _trace_events(outer / "serve.log", "task.received")
    sent = _trace_events(outer / "serve.log", "task.sent")
    inner = [e for e in _trace_events(tmp_path / "inner" / "serve.log", "task.received") if e["trace_id"] == trace]
    assert [(e["trace_id"], e["parent_span_id"]) for e in received] == [(trace, "00f067aa0ba902b7")]
    assert [(e["trace_id"], e["face"], e["span_id"]) for e in sent] == [(trace, "a2a", received[0]["span_id"])]
    assert len(inner) == 1 and inner[0]["parent_span_id"] == received[0]["span_id"]  # caused by the gateway's task
