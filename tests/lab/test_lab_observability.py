"""A running lab watched from outside: the real Prometheus server scrapes it through the file_sd targets
``lab up`` writes, and ``an-agent trace`` follows the cross-domain fault across agents over both faces."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.lab.labsupport import TOPOLOGIES, variant
from tests.lab.otlpsupport import Collector, running_collector

from an_agent.cli import main
from outsider import netconf

pytestmark = pytest.mark.slow
PROMETHEUS = shutil.which("prometheus")
DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana-lab-dashboard.json"
AGENTS = {"service-fault", "ran-fault", "ip-fault", "complaint", "fme-copilot", "network-copilot"}


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """cross-domain-fault up (free ports; ip-fault's A2A face too), until the module's tests are done."""
    tmp = tmp_path_factory.mktemp("observed")
    ports = [*range(18831, 18837), 18850, 18851]  # the agents', the element managers'
    replacements = [("a2a_port: 18843", "a2a_port: 0")] + [(f"port: {p}", "port: 0") for p in ports]
    path = variant(tmp, "cross-domain-fault.yaml", *replacements)
    run_dir = tmp / "run"
    with running_collector() as collector:
        command = ["lab", "up", str(path), "--run-dir", str(run_dir), "--json", "--otlp", f"{collector.url}/v1/traces"]
        up = subprocess.run(
            [sys.executable, "-m", "an_agent.cli", *command],
            capture_output=True,
            text=True,
            check=True,
        )
        try:
            yield run_dir, {**json.loads(up.stdout), "collector": collector}
        finally:
            assert main(["lab", "down", "--run-dir", str(run_dir)]) == 0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _query(port: int, promql: str) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=5) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def _names(port: int) -> list[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/label/__name__/values", timeout=5) as answer:
        body = json.load(answer)
    names: list[str] = body["data"]
    return names


def _wait(port: int, promql: str, done: Any, timeout: float = 90.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    result: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        try:
            result = _query(port, promql)
        except OSError:
            result = []
        if done(result):
            return result
        time.sleep(1.0)
    raise AssertionError(f"{promql}: {result}")


@pytest.mark.skipif(PROMETHEUS is None, reason="the prometheus server is not installed (make setup installs it)")
def test_prometheus_scrapes_every_agent_and_the_tasks_move(lab: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    run_dir, state = lab
    assert state["metrics_url"].startswith("http://127.0.0.1:")
    targets = json.loads((run_dir / "prometheus-targets.json").read_text())
    assert {t["labels"]["agent"] for t in targets} == AGENTS | {"network"}
    assert {t["labels"]["lab"] for t in targets} == {"cross-domain-fault"}
    assert (run_dir / "prometheus.yml").stat().st_mode & 0o077 == 0
    port = _free_port()
    assert PROMETHEUS is not None
    server = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={run_dir / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "prometheus.log").open("w"),
    )
    try:
        up = _wait(port, "up", lambda r: len(r) == len(targets) and all(s["value"][1] == "1" for s in r))
        assert {s["metric"]["agent"] for s in up} == AGENTS | {"network"}
        assert {s["metric"]["role"] for s in up if s["metric"]["agent"] == "network-copilot"} == {"fme-copilot"}
        # the scenario's tasks, counted where they ran (the incident reports end at once)
        moved = _wait(
            port,
            'sum by (agent) (an_agent_tasks_total{side="executor", status="finished"})',
            lambda r: {"service-fault", "ip-fault"} <= {s["metric"]["agent"] for s in r if float(s["value"][1]) > 0},
        )
        assert moved
        asked = _wait(
            port,
            'an_agent_tasks_total{agent="service-fault", side="requester", status="finished"}',
            lambda r: bool(r) and float(r[0]["value"][1]) > 0,
        )  # the diagnosis, the ticket, the verification it asked its peers for
        assert asked
        requests = _wait(port, 'an_agent_a2a_request_seconds_count{agent="ip-fault"}', lambda r: bool(r))
        assert {s["metric"]["method"] for s in requests} & {"SendStreamingMessage", "agent-card"}
        kpis = _wait(port, "an_agent_lab_cells_total", lambda r: bool(r))
        assert float(kpis[0]["value"][1]) == 96.0
        # an element manager's NETCONF requests: the same face histogram, in the lab process's target
        em = next(d for d in state["devices"] if d["name"] == "ran-em")
        with netconf(em["port"], em["host"]) as session:
            session.get()
        gets = _wait(
            port,
            'an_agent_netconf_request_seconds_count{agent="network", operation="get", result="ok"}',
            lambda r: bool(r) and float(r[0]["value"][1]) >= 1,
        )
        assert gets
        # the shipped Grafana board: every query of it is one Prometheus takes, over the lab's families
        board = json.loads(DASHBOARD.read_text())
        queries = [t["expr"].replace("$lab", "cross-domain-fault") for p in board["panels"] for t in p["targets"]]
        names = set(_names(port))
        for query in queries:
            _query(port, query)  # raises unless Prometheus accepts it
        used = {n for q in queries for n in re.findall(r"\b(an_agent_\w+|up)\b", q)}
        assert len(used) >= 15
        # a family with labels has no series before its first event: logins did not fail, no patch was made
        assert used - names <= {"an_agent_failed_logins_total", "an_agent_evolution_patches"}, used - names
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_trace_follows_the_fault_across_agents_over_both_faces(
    lab: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir, state = lab
    deadline = time.monotonic() + 90
    fault: dict[str, Any] | None = None
    document: dict[str, Any] = {}
    while time.monotonic() < deadline:
        lines = [json.loads(x) for x in (run_dir / "lab.log").read_text().splitlines() if x.startswith("{")]
        fault = next((x for x in lines if x.get("event") == "fault.injected"), None)
        if fault is not None:
            assert main(["trace", fault["trace_id"], "--lab", str(run_dir), "--json"]) == 0
            document = json.loads(capsys.readouterr().out)
            if any(s.get("event") == "task.ended" and s["agent"] == "ran-fault" for s in document["chain"]):
                break  # the verification, the fault's last task, is done
        time.sleep(1.0)
    assert fault is not None and document, "the fault was not injected"
    chain = document["chain"]
    assert document["agents"][0] == "scenario"
    assert {"ip-fault", "ran-fault", "service-fault", "fme-copilot"} <= set(document["agents"])
    assert {s["trace_id"] for s in chain} == {fault["trace_id"]}
    faces = {s["face"] for s in chain if s["event"] == "task.sent"}
    assert faces == {"netconf", "a2a"}
    # causal order: every task is received after (below) the step that sent it, one level deeper
    for index, step in enumerate(chain):
        if step["event"] == "task.received":
            sent = [
                i for i, s in enumerate(chain[:index]) if s["event"] == "task.sent" and s["task_id"] == step["task_id"]
            ]
            assert sent and chain[sent[-1]]["depth"] == step["depth"] - 1, step
    diagnose = next(s for s in chain if s["event"] == "task.received" and s["agent"] == "ip-fault")
    assert diagnose["peer"] == "service-fault"  # the diagnosis came over A2A and kept the trace
    # lab up --otlp: the lab process and every agent process send the same trace's spans, with its span ids
    collector: Collector = state["collector"]
    wanted = {(s["agent"], s["span_id"]) for s in chain if s["event"] in ("fault.injected", "task.received")}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        exported = {(s.service, s.span_id) for s in collector.spans if s.trace_id == fault["trace_id"]}
        if wanted <= exported:
            break
        time.sleep(0.5)
    assert wanted <= exported, wanted - exported
    assert main(["trace", "0" * 32, "--lab", str(run_dir)]) == 1


def test_the_timeline_and_the_report_filter_by_trace(tmp_path: Path) -> None:
    from an_agent.lab.report import render
    from an_agent.lab.run import run_topology
    from an_agent.lab.text import timeline
    from an_agent.lab.topology import load_topology

    result = run_topology(load_topology(TOPOLOGIES / "cross-domain-fault.yaml"), tmp_path / "state", stall_timeout=30.0)
    document = result.to_json()
    fault = next(n for n in document["notes"] if n["kind"] == "fault")
    ticket = next(n for n in document["notes"] if n["kind"] == "ticket")
    trace, other = fault["details"]["trace_id"], ticket["details"]["trace_id"]
    assert trace != other  # a fault and a request from outside: a trace each
    mine = [m for m in document["messages"] if m["trace_id"] == trace]
    operations = {(m["from"], m["to"], m["operation"]) for m in mine}
    assert ("service-fault", "ip-fault", "SendStreamingMessage") in operations  # A2A
    assert ("ran-fault", "service-fault", "edit-config") in operations  # NETCONF
    assert ("ip-fault", "service-fault", "TaskStatusUpdateEvent") in operations  # the A2A task's statuses too
    lines = timeline(result, trace[:12])
    assert f"[trace {trace}]" in "\n".join(lines) and len(lines) < len(timeline(result))
    assert not any("bss.ticket.1" in line for line in lines)
    html = render(result)
    assert f"[data-trace='{trace}']" in html and f"[data-trace='{other}']" in html  # a CSS rule each
    assert "<script" not in html  # the report stays without scripts
    assert html.count(f"data-trace='{trace}'") >= len(mine)
