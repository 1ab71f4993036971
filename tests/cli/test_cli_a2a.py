"""``an-agent task ... --a2a URL`` against a live agent's A2A face: the same commands as over NETCONF."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.agents.default import DefaultBehaviour
from an_agent.cli import main
from an_agent.clock import ManualClock, from_rfc3339
from an_agent.model import AgentProfile, Task, TaskStatus
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder


def _config(tmp_path: Path, profile: AgentProfile, work_seconds: float) -> ServerConfig:
    return ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        a2a_port=0,
        a2a_tls=True,
        users={"admin": "admin"},
        profile=profile,
        behaviour=DefaultBehaviour(work_seconds),
        embedder=FakeEmbedder(),
        clock=ManualClock(from_rfc3339("2026-10-05T00:00:00Z")),
    )


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    with AgentServer(_config(tmp_path, profile, 0.5)) as running:
        yield running


@pytest.fixture
def slow_server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    """Tasks run 60 s (cancelled well before): a cancel reaches a running task on any load."""
    with AgentServer(_config(tmp_path, profile, 60)) as running:
        yield running


def cli(capsys: pytest.CaptureFixture[str], server: AgentServer, *argv: str) -> tuple[int, str, str]:
    assert server.a2a is not None
    assert server.a2a.url.startswith("https://") and server.a2a.certificate is not None
    trust = ["--a2a-trust", str(server.a2a.certificate)]
    code = main([*argv, "--a2a", server.a2a.url, *trust, "--user", "admin", "--password", "admin"])
    out, err = capsys.readouterr()
    return code, out, err


def test_assign_structured_over_a2a_and_read_it_over_netconf(capsys, server: AgentServer) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli(
        capsys, server, "task", "assign", "--schema", "energy_saving_adjust", "--schema-version", "1",
        "--set", "cell_ids=CELL-0401,CELL-0402", "--set", "action=reduce", "--set", "duration_minutes=30",
        "--wait", "--json",
    )  # fmt: skip
    assert code == 0, err
    task = json.loads(out)
    assert task["task-status"] == "finished" and task["schema_update_suggestion"] == []
    assert [json.loads(line)["task-status"] for line in err.splitlines()] == ["created", "processing", "finished"]
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        stored = nc.get_task(task["task-id"])
    assert stored.status == TaskStatus.FINISHED and stored.msg_data == [f"{task['task-id']}-payload"]

    code, out, _ = cli(capsys, server, "task", "get", task["task-id"], "--json")
    assert code == 0 and json.loads(out)["result"]["format"].startswith("application/json")
    code, out, _ = cli(capsys, server, "task", "watch", task["task-id"], "--json")
    assert code == 0 and [json.loads(line)["task-status"] for line in out.splitlines()][-1] == "finished"


def test_bad_payload_and_version_refused_before_sending(capsys, server: AgentServer) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli(
        capsys, server, "task", "assign", "--schema", "energy_saving_adjust",
        "--set", "cell_ids=CELL-0401", "--set", "action=explode", "--set", "colour=red",
    )  # fmt: skip
    assert code == 1 and "action:" in err and "checked before sending" in err, err
    code, _, err = cli(capsys, server, "task", "assign", "--schema", "energy_saving_adjust", "--schema-version", "7")
    assert code == 1 and "no common version" in err and "energy_saving_adjust_v1" in err, err
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        assert nc.list_tasks() == []


def test_cancel_of_a_running_task(capsys, slow_server: AgentServer) -> None:  # type: ignore[no-untyped-def]
    server = slow_server
    code, out, err = cli(
        capsys, server, "task", "assign", "--target", "SITE-07", "--description", "diagnose the outage", "--json"
    )
    assert code == 0, err
    task_id = json.loads(out)["task-id"]
    code, out, err = cli(capsys, server, "task", "cancel", task_id, "--json")
    assert code == 0 and json.loads(out)["task-status"] == "canceled", err
    code, out, _ = cli(capsys, server, "task", "get", "--json")
    assert [t["task-id"] for t in json.loads(out)] == [task_id]
    assert main(["task", "assign", "--text", "x", "--port", "1"]) == 2
    assert "--a2a" in capsys.readouterr().err


def test_input_for_answers_a_task_waiting_for_input(capsys, server: AgentServer) -> None:  # type: ignore[no-untyped-def]
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        # No target object: the default behaviour asks its assigner for one (input-required).
        nc.assign_task(Task("needs-target", task_async=True, content="## task description\nsave energy tonight"))
        for event in nc.watch("needs-target", start_time=0, timeout=60, until_terminal=False):
            if event.status == TaskStatus.INPUT_REQUIRED:
                break
    code, out, err = cli(capsys, server, "task", "assign", "--input-for", "needs-target", "--text", "CELL-0401",
                         "--wait", "--json")  # fmt: skip
    assert code == 0, err
    task = json.loads(out)
    assert task["task-status"] == "finished" and json.loads(task["result"]["data"])["target_object"] == "CELL-0401"
