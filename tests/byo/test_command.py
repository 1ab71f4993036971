"""The command behaviour: the documented protocol (docs/behaviour-command.md), and every way a program fails.

An outsider's test: it imports nothing of an_agent. The agent runs as ``an-agent serve`` (`outsider.serve`),
and the tasks go to it as any NETCONF client would send them, with a stock ncclient session
(`outsider.netconf`) and the irtf-agent XML written here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lxml import etree
from ncclient import manager

import outsider
from metricsupport import scrape, value

REPO = Path(__file__).resolve().parents[2]
DOC = (REPO / "docs" / "behaviour-command.md").read_text(encoding="utf-8")
IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
PAYLOAD_FORMAT = "application/json;schema=fault_diagnosis_v1"
TERMINAL = ("finished", "failed", "canceled")


@contextmanager
def serve(where: Path, *argv: str) -> Iterator[manager.Manager]:
    """``an-agent serve ARGV`` until the block ends, and an admin's NETCONF session to it."""
    with outsider.serve(where, *argv) as served, outsider.netconf(served.port) as session:
        yield session


def _node(parent: etree._Element | None, tag: str, text: str | None = None) -> etree._Element:
    name = f"{{{IRTF}}}{tag}"
    node = etree.Element(name) if parent is None else etree.SubElement(parent, name)
    node.text = text
    return node


def _edit(session: manager.Manager, *nodes: etree._Element, default_operation: str | None = None) -> None:
    config = etree.Element(f"{{{NC}}}config", nsmap={"nc": NC})
    config.extend(nodes)
    session.edit_config(config=config, target="running", default_operation=default_operation)


def _text_param(param_id: str, fmt: str, data: str) -> etree._Element:
    """A ``data-params`` entry (merged) holding ``data`` as text."""
    param = _node(None, "data-params")
    param.set(f"{{{NC}}}operation", "merge")
    for tag, text in (("id", param_id), ("dataType", "text"), ("format", fmt), ("data", data)):
        _node(param, tag, text)
    return param


def prompt(description: str, environment: str | None = None) -> str:
    """A task's ``content``: the draft's sections, each marker on a line of its own."""
    sections = ["## target object", "SITE-09", "## task description", description]
    return "\n".join([*sections, *(["## environmental information", environment] if environment else [])])


def assign(session: manager.Manager, task_id: str, description: str, payload: Mapping[str, object]) -> None:
    """Create a task (taskAssign, asynchronous) with a fault_diagnosis_v1 payload, in one edit."""
    param_id = f"{task_id}.payload"
    data = json.dumps({"schema_id": "fault_diagnosis_v1", "payload": payload})
    tasks = _node(None, "tasks")
    task = _node(tasks, "task")
    task.set(f"{{{NC}}}operation", "create")
    for tag, text in (
        ("task-id", task_id),
        ("task-sendFrom", "admin"),
        ("commuType", "taskAssign"),
        ("content", prompt(description)),
        ("task-async", "true"),
        ("msg-data", param_id),
    ):
        _node(task, tag, text)
    _edit(session, _text_param(param_id, PAYLOAD_FORMAT, data), tasks)


def provide_text(session: manager.Manager, task_id: str, param_id: str, text: str) -> None:
    """Answer a task's input-required with a text data-param added to its msg-data."""
    tasks = _node(None, "tasks")
    task = _node(tasks, "task")
    _node(task, "task-id", task_id)
    _node(task, "msg-data", param_id)
    _edit(session, _text_param(param_id, "text/plain", text), tasks)


def cancel(session: manager.Manager, task_id: str) -> None:
    """taskCancel: merge the commuType leaf alone into the task's entry."""
    tasks = _node(None, "tasks")
    task = _node(tasks, "task")
    _node(task, "task-id", task_id)
    _node(task, "commuType", "taskCancel").set(f"{{{NC}}}operation", "merge")
    _edit(session, tasks, default_operation="none")


@dataclass
class Feasibility:
    feasible: bool
    reason: str | None
    counter_proposal: str | None


def feasibility(session: manager.Manager, task_id: str, description: str, payload: Mapping[str, object]) -> Feasibility:
    """The ``task-negotiate`` RPC (FEASIBILITY) for a task with a fault_diagnosis_v1 payload."""
    rpc = _node(None, "task-negotiate")
    environment = json.dumps({"schema_id": "fault_diagnosis_v1", "payload": payload})
    for tag, text in (
        ("task-sendFrom", "admin"),
        ("commuType", "FeasibilityNegotiate"),
        ("task-id", task_id),
        ("content", prompt(description, environment)),
        ("type", "FEASIBILITY"),
    ):
        _node(rpc, tag, text)
    reply = etree.fromstring(session.dispatch(rpc).xml.encode())
    return Feasibility(
        reply.findtext(f"{{{IRTF}}}feasible") == "true",
        reply.findtext(f"{{{IRTF}}}reason"),
        reply.findtext(f"{{{IRTF}}}counter-proposal"),
    )


@dataclass
class TaskState:
    """What ``<get>`` says of a task: its status, what it waits for, its result's leaves."""

    status: str | None
    required: list[str] = field(default_factory=list)
    result: dict[str, str] = field(default_factory=dict)


def get_task(session: manager.Manager, task_id: str) -> TaskState:
    found = f'<tasks xmlns="{IRTF}"><task><task-id>{task_id}</task-id></task></tasks>'
    task = session.get(filter=("subtree", found)).data_ele.find(f"{{{IRTF}}}tasks/{{{IRTF}}}task")
    assert task is not None, f"the agent has no task {task_id}"
    return TaskState(
        task.findtext(f"{{{IRTF}}}task-status"),
        [r.text or "" for r in task.iterfind(f"{{{IRTF}}}input-required/{{{IRTF}}}required")],
        {etree.QName(leaf).localname: leaf.text or "" for leaf in task.iterfind(f"{{{IRTF}}}result/*")},
    )


def wait_status(session: manager.Manager, task_id: str, *statuses: str, timeout: float = 30) -> TaskState:
    deadline = time.monotonic() + timeout
    while (task := get_task(session, task_id)).status not in statuses:
        assert time.monotonic() < deadline, f"task {task_id} is {task.status}, not {statuses}, after {timeout} s"
        time.sleep(0.05)
    return task


def wait_end(session: manager.Manager, task_id: str, timeout: float = 30) -> TaskState:
    return wait_status(session, task_id, *TERMINAL, timeout=timeout)


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
    profile = outsider.profile_file(tmp_path)
    argv = ["--behaviour-command", f"{sys.executable} {program}", "--profile", str(profile)]
    with serve(tmp_path, *argv) as session:
        refused = feasibility(session, "f1", "Diagnose the backhaul", {"fault_type": "transmission_failure"})
        assert not refused.feasible and refused.reason == "say how severe"
        assert '"severity": "major"' in (refused.counter_proposal or "")
        accepted = feasibility(session, "f2", "Diagnose", {"fault_type": "transmission_failure", "severity": "major"})
        assert accepted.feasible and accepted.reason == "I can look at that backhaul"

        payload = {"fault_type": "transmission_failure", "affected_site_ids": ["SITE-09", "SITE-10"]}
        assign(session, "t1", "Diagnose the backhaul", payload)
        asked = wait_status(session, "t1", "input-required")
        assert "ticket_id" in asked.required[0]
        provide_text(session, "t1", "t1.in", "ticket_id: TT-4")
        done = wait_end(session, "t1")
        assert done.status == "finished", done.result
        result = json.loads(done.result.get("data", "{}"))
        assert result["root_cause"] == "backhaul of 2 site(s) checked (TT-4): no fault found"
        assert done.result.get("summary") == "backhaul of 2 site(s) healthy"


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
    argv = ["--behaviour-command", f"{sys.executable} {program}", "--profile", str(outsider.profile_file(tmp_path))]
    with serve(tmp_path, *argv) as session:
        assign(session, "t1", "Diagnose the backhaul", {"fault_type": "transmission_failure"})
        for n, (key, answer) in enumerate((("ticket_id", "TT-9"), ("window", "02:00"))):
            asked = wait_status(session, "t1", "input-required")
            assert f"give {key}:" in asked.required[-1], asked.required
            provide_text(session, "t1", f"t1.in{n}", f"{key}: {answer}")
            if n == 0:  # the second question comes once the first answer is in
                deadline = time.monotonic() + 20
                while "give window:" not in str(get_task(session, "t1").required):
                    assert time.monotonic() < deadline, get_task(session, "t1")
                    time.sleep(0.1)
        done = wait_end(session, "t1")
        assert done.status == "finished", done.result
        assert json.loads(done.result.get("data", "{}"))["root_cause"] == "TT-9 at 02:00"


@pytest.mark.slow  # agent processes, several seconds
def test_program_failures_end_the_task_not_the_agent(tmp_path: Path) -> None:
    program = tmp_path / "modes.py"
    program.write_text(MODES, encoding="utf-8")
    profile = outsider.profile_file(tmp_path)
    argv = ["--behaviour-command", f"{sys.executable} {program}", "--behaviour-timeout", "4"]
    with serve(tmp_path, *argv, "--profile", str(profile)) as session:
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
            assign(session, f"t-{word}", f"Diagnose {word}", payload)
        for word, reason in expected.items():
            task = wait_end(session, f"t-{word}", timeout=30)
            assert task.status == "failed", (word, task)
            assert reason in task.result.get("reason", ""), (word, task.result)
        assert time.monotonic() - started < 20  # garbage does not wait for the program to end by itself

        # cwd = the state directory, a minimal environment
        assign(session, "t-env", "Diagnose the environment", payload)
        done = wait_end(session, "t-env")
        result = json.loads(done.result.get("data", "{}"))
        assert Path(result["cwd"]) == (tmp_path / "state").resolve()
        assert result["env"] == ["AN_AGENT_PROTOCOL", "HOME", "LANG", "LC_ALL", "PATH", "TMPDIR"]

        # cancel: the program's process group is stopped
        (tmp_path / "state" / "pid").unlink(missing_ok=True)
        assign(session, "t-cancel", "Diagnose SLOW", payload)
        deadline = time.monotonic() + 10
        while not (tmp_path / "state" / "pid").exists():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        pid = int((tmp_path / "state" / "pid").read_text())
        cancel(session, "t-cancel")
        deadline = time.monotonic() + 10
        while _alive(pid):
            assert time.monotonic() < deadline, "the cancelled task's program still runs"
            time.sleep(0.05)
        assert get_task(session, "t-cancel").status == "canceled"


def test_a_missing_program_fails_the_task(tmp_path: Path) -> None:
    profile = outsider.profile_file(tmp_path)
    argv = ["--behaviour-command", "/nonexistent/agent --x", "--profile", str(profile)]
    with serve(tmp_path, *argv) as session:
        assign(session, "t1", "Diagnose", {"fault_type": "unknown"})
        task = wait_end(session, "t1")
        assert "program /nonexistent/agent cannot be started: No such file or directory" in task.result.get(
            "reason", ""
        )
        refused = feasibility(session, "f1", "Diagnose", {"fault_type": "unknown"})
        assert not refused.feasible and "cannot be started" in (refused.reason or "")


def test_serve_needs_a_profile_for_a_command(tmp_path: Path) -> None:
    command = [
        sys.executable,
        "-m",
        "an_agent.cli",
        "serve",
        "--behaviour-command",
        "true",
        "--state-dir",
        str(tmp_path),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
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
    argv = ["--behaviour-command", f"{sys.executable} {program}", "--profile", str(outsider.profile_file(tmp_path))]
    with serve(tmp_path, *argv, "--metrics-port", "0") as session:
        found = re.search(r"metrics at (\S+)", (tmp_path / "serve.log").read_text(encoding="utf-8"))
        assert found, "serve says where its metrics are"
        payload = {"fault_type": "transmission_failure"}
        assert feasibility(session, "f1", "Diagnose the backhaul", payload).feasible
        assign(session, "t1", "Diagnose the backhaul", payload)
        assign(session, "t2", "ERROR please", payload)
        assert wait_end(session, "t1").status == "finished"
        assert wait_end(session, "t2").status == "failed"
        samples = scrape(found.group(1))
    assert value(samples, "an_agent_tasks_total", side="executor", status="finished") == 1
    assert value(samples, "an_agent_tasks_total", side="executor", status="failed") == 1
    assert value(samples, "an_agent_tasks_total", side="executor", status="suspended") == 1  # the program said so
    assert value(samples, "an_agent_tasks_open", side="executor") == 0
    durations = [n for (n, _), v in samples.items() if n == "an_agent_task_duration_seconds_count" and v]
    assert durations, "the tasks' durations, by skill"
    assert value(samples, "an_agent_negotiations_total", type="FEASIBILITY", outcome="yes") == 1
