"""The command behaviour: the documented protocol (docs/behaviour-command.md), and every way a program fails."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
import time
from pathlib import Path

import pytest
from byosupport import REPO, assign, connect, feasibility, profile_file, run_cli, serve, wait_end, wait_status

from an_agent.model import DataParam, DataType
from metricsupport import scrape, value

DOC = (REPO / "docs" / "behaviour-command.md").read_text(encoding="utf-8")

MODES = textwrap.dedent(
    """
    import json, os, sys, time

    def send(message):
        print(json.dumps(message), flush=True)

    request = json.loads(sys.stdin.readline())
    description = request.get("description") or ""
    if request.get("negotiate"):
        send({"feasible": True})
    elif "GARBAGE" in description:
        print("this is not json", flush=True)
        time.sleep(30)
    elif "EARLYEXIT" in description:
        print("starting", file=sys.stderr)
        print("licence server unreachable", file=sys.stderr)
        sys.exit(3)
    elif "SLOW" in description:
        with open("pid", "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(60)
    elif "UNKNOWN" in description:
        send({"hello": "world"})
    elif "ERROR" in description:
        send({"error": "the controller refused the port reset"})
    else:
        send({"status": "suspended", "reason": "maintenance window"})
        send({"result": {"cwd": os.getcwd(), "env": sorted(os.environ)}, "summary": "environment"})
    """
)


def documented_example() -> str:
    found = re.search(r"```python\n(#!/usr/bin/env python3\n.*?)```", DOC, re.S)
    assert found, "the complete example is missing from docs/behaviour-command.md"
    code = found.group(1)
    assert "an_agent" not in code  # it imports nothing of ours
    return code


@pytest.mark.slow  # agent processes, several seconds
def test_documented_example_speaks_the_protocol(tmp_path: Path) -> None:
    program = tmp_path / "transport_agent.py"
    program.write_text(documented_example(), encoding="utf-8")
    profile = profile_file(tmp_path)
    argv = ["--behaviour-command", f"{sys.executable} {program}", "--profile", str(profile)]
    with serve(tmp_path, *argv) as port, connect(port) as client:
        refused = feasibility(client, "f1", "Diagnose the backhaul", {"fault_type": "transmission_failure"})
        assert not refused.feasible and refused.reason == "say how severe"
        assert '"severity": "major"' in (refused.counter_proposal or "")
        accepted = feasibility(client, "f2", "Diagnose", {"fault_type": "transmission_failure", "severity": "major"})
        assert accepted.feasible and accepted.reason == "I can look at that backhaul"

        payload = {"fault_type": "transmission_failure", "affected_site_ids": ["SITE-09", "SITE-10"]}
        assign(client, "t1", "Diagnose the backhaul", payload)
        asked = wait_status(client, "t1", "input-required")
        assert "ticket_id" in asked.input_required[0].required
        client.provide_input(
            "t1", [DataParam(id="t1.in", data_type=DataType.TEXT, format="text/plain", data="ticket_id: TT-4")]
        )
        done = wait_end(client, "t1")
        assert done.status is not None and done.status.value == "finished", done.result
        result = json.loads(done.result.data or "{}")  # type: ignore[union-attr]
        assert result["root_cause"] == "backhaul of 2 site(s) checked (TT-4): no fault found"
        assert done.result is not None and done.result.summary == "backhaul of 2 site(s) healthy"


READ_ON = textwrap.dedent(
    """
    import json, sys

    def send(message):
        print(json.dumps(message), flush=True)

    def ask(key, reason):
        send({"input_required": [key], "reason": reason})
        line = sys.stdin.readline()
        if not line:  # the first run: stdin ends after the question; the agent runs us again with the answer
            sys.exit(0)
        return json.loads(line)["input"][key]

    request = json.loads(sys.stdin.readline())
    if request.get("negotiate"):
        send({"feasible": True})
        sys.exit(0)
    ticket = ask("ticket_id", "which ticket?")
    window = ask("window", "when may I reset the port?")
    send({"result": {"root_cause": f"{ticket} at {window}"}, "summary": "asked twice"})
    """
)


@pytest.mark.slow  # agent processes, several seconds
def test_a_program_that_reads_on_after_its_questions(tmp_path: Path) -> None:
    """The other way the contract allows: a program that asks, then reads its answer from the next line."""
    program = tmp_path / "read_on.py"
    program.write_text(READ_ON, encoding="utf-8")
    argv = ["--behaviour-command", f"{sys.executable} {program}", "--profile", str(profile_file(tmp_path))]
    with serve(tmp_path, *argv) as port, connect(port) as client:
        assign(client, "t1", "Diagnose the backhaul", {"fault_type": "transmission_failure"})
        for n, (key, answer) in enumerate((("ticket_id", "TT-9"), ("window", "02:00"))):
            asked = wait_status(client, "t1", "input-required")
            assert f"give {key}:" in asked.input_required[-1].required, asked.input_required
            param = DataParam(id=f"t1.in{n}", data_type=DataType.TEXT, format="text/plain", data=f"{key}: {answer}")
            client.provide_input("t1", [param])
            if n == 0:  # the second question comes once the first answer is in
                deadline = time.monotonic() + 20
                while "give window:" not in str(client.get_task("t1").input_required):  # type: ignore[union-attr]
                    assert time.monotonic() < deadline, client.get_task("t1")
                    time.sleep(0.1)
        done = wait_end(client, "t1")
        assert done.status is not None and done.status.value == "finished", done.result
        assert json.loads(done.result.data or "{}")["root_cause"] == "TT-9 at 02:00"  # type: ignore[union-attr]


@pytest.mark.slow  # agent processes, several seconds
def test_program_failures_end_the_task_not_the_agent(tmp_path: Path) -> None:
    program = tmp_path / "modes.py"
    program.write_text(MODES, encoding="utf-8")
    profile = profile_file(tmp_path)
    argv = ["--behaviour-command", f"{sys.executable} {program}", "--behaviour-timeout", "4"]
    with serve(tmp_path, *argv, "--profile", str(profile)) as port, connect(port) as client:
        payload = {"fault_type": "unknown"}
        expected = {
            "GARBAGE": "printed something that is not a JSON line of the protocol: 'this is not json'",
            "EARLYEXIT": "ended without a result: licence server unreachable",
            "UNKNOWN": "sent a message this protocol does not have",
            "ERROR": "the controller refused the port reset",
            "SLOW": "did not end within 4 s: stopped",
        }
        started = time.monotonic()
        for word in expected:
            assign(client, f"t-{word}", f"Diagnose {word}", payload)
        for word, reason in expected.items():
            task = wait_end(client, f"t-{word}", timeout=30)
            assert task.status is not None and task.status.value == "failed", (word, task)
            assert reason in (task.result.reason or ""), (word, task.result)  # type: ignore[union-attr]
        assert time.monotonic() - started < 20  # garbage does not wait for the program to end by itself

        # cwd = the state directory, a minimal environment
        assign(client, "t-env", "Diagnose the environment", payload)
        done = wait_end(client, "t-env")
        result = json.loads(done.result.data or "{}")  # type: ignore[union-attr]
        assert Path(result["cwd"]) == (tmp_path / "state").resolve()
        assert result["env"] == ["AN_AGENT_PROTOCOL", "HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"]

        # cancel: the program's process group is stopped
        (tmp_path / "state" / "pid").unlink(missing_ok=True)
        assign(client, "t-cancel", "Diagnose SLOW", payload)
        deadline = time.monotonic() + 10
        while not (tmp_path / "state" / "pid").exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pid = int((tmp_path / "state" / "pid").read_text())
        client.cancel_task("t-cancel")
        deadline = time.monotonic() + 10
        while _alive(pid):
            assert time.monotonic() < deadline, "the cancelled task's program still runs"
            time.sleep(0.05)
        assert client.get_task("t-cancel").status.value == "canceled"  # type: ignore[union-attr]


def test_a_missing_program_fails_the_task(tmp_path: Path) -> None:
    profile = profile_file(tmp_path)
    argv = ["--behaviour-command", "/nonexistent/agent --x", "--profile", str(profile)]
    with serve(tmp_path, *argv) as port, connect(port) as client:
        assign(client, "t1", "Diagnose", {"fault_type": "unknown"})
        task = wait_end(client, "t1")
        assert "program /nonexistent/agent cannot be started: No such file or directory" in (
            task.result.reason or ""  # type: ignore[union-attr]
        )
        refused = feasibility(client, "f1", "Diagnose", {"fault_type": "unknown"})
        assert not refused.feasible and "cannot be started" in (refused.reason or "")


def test_serve_needs_a_profile_for_a_command(tmp_path: Path) -> None:
    result = run_cli("serve", "--behaviour-command", "true", "--state-dir", str(tmp_path), timeout=60)
    assert result.returncode != 0 and "need --profile FILE" in result.stderr and "Traceback" not in result.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:  # a zombie is gone for our purpose
        return fh.read().split()[2] != "Z"


@pytest.mark.slow  # an agent process
def test_a_command_behaviours_tasks_are_counted_like_any(tmp_path: Path) -> None:
    """The operation layer counts every task whatever behaviour runs it: here a program's (issue 25)."""
    program = tmp_path / "modes.py"
    program.write_text(MODES, encoding="utf-8")
    argv = ["--behaviour-command", f"{sys.executable} {program}", "--profile", str(profile_file(tmp_path))]
    with serve(tmp_path, *argv, "--metrics-port", "0") as port, connect(port) as client:
        found = re.search(r"metrics at (\S+)", (tmp_path / "serve.log").read_text(encoding="utf-8"))
        assert found, "serve says where its metrics are"
        payload = {"fault_type": "transmission_failure"}
        assert feasibility(client, "f1", "Diagnose the backhaul", payload).feasible
        assign(client, "t1", "Diagnose the backhaul", payload)
        assign(client, "t2", "ERROR please", payload)
        assert wait_end(client, "t1").status.value == "finished"  # type: ignore[union-attr]
        assert wait_end(client, "t2").status.value == "failed"  # type: ignore[union-attr]
        samples = scrape(found.group(1))
    assert value(samples, "an_agent_tasks_total", side="executor", status="finished") == 1
    assert value(samples, "an_agent_tasks_total", side="executor", status="failed") == 1
    assert value(samples, "an_agent_tasks_total", side="executor", status="suspended") == 1  # the program said so
    assert value(samples, "an_agent_tasks_open", side="executor") == 0
    durations = [n for (n, _), v in samples.items() if n == "an_agent_task_duration_seconds_count" and v]
    assert durations, "the tasks' durations, by skill"
    assert value(samples, "an_agent_negotiations_total", type="FEASIBILITY", outcome="yes") == 1
