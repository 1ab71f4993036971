"""``lab run --otlp URL`` seen from outside: a tiny OTLP/HTTP receiver on 127.0.0.1 decodes what the lab and
its agent processes export (``ExportTraceServiceRequest``, opentelemetry-proto) and finds the cross-domain
fault as one trace: spans from every agent the fault touched, over NETCONF and A2A, each parent a span of
the same trace. Nothing of an_agent is imported: the lab is a program, the receiver is OpenTelemetry's."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from tests.lab.otlpsupport import Collector, running_collector

pytestmark = pytest.mark.slow
TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "cross-domain-fault.yaml"


@pytest.fixture
def collector() -> Iterator[Collector]:
    with running_collector() as server:
        yield server


def test_the_fault_is_one_trace_of_spans_from_every_agent_it_touched(collector: Collector, tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "an_agent.cli",
            "lab",
            "run",
            str(TOPOLOGY),
            "--json",
            "--quiet",
            "--otlp",
            collector.url,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout)
    fault = next(n for n in result["notes"] if n["kind"] == "fault")
    trace = fault["details"]["trace_id"]
    agents = {a["name"] for a in yaml.safe_load(TOPOLOGY.read_text())["agents"]}
    touched = {m["from"] for m in result["messages"] if m["trace_id"] == trace}
    touched = agents & (touched | {m["to"] for m in result["messages"] if m["trace_id"] == trace})
    assert {"ip-fault", "service-fault", "ran-fault", "fme-copilot"} <= touched

    assert collector.paths == {"/v1/traces"}  # the URL had no path: OTLP/HTTP's traces path
    spans = [s for s in collector.spans if s.trace_id == trace]
    services = {s.service for s in spans}
    assert touched <= services, f"no spans from {touched - services}"
    # one trace: a single root (the fault), every other span's parent is a span of the trace
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_span_id]
    assert [(r.service, r.name) for r in roots] == [("scenario", "fault.injected")]
    assert all(s.parent_span_id in ids for s in spans if s.parent_span_id), [
        (s.service, s.name) for s in spans if s.parent_span_id and s.parent_span_id not in ids
    ]
    assert len(ids) == len(spans)  # each span once
    # a span per task at each agent, its parent the request that sent it over either face
    server, client = 2, 3  # OTLP's SpanKind values
    sent = [s for s in spans if s.name == "task.sent"]
    assert {s.attributes["an_agent.face"] for s in sent} == {"netconf", "a2a"}
    assert all(s.kind == client for s in sent)
    tasks = [s for s in spans if s.name == "task"]
    assert tasks and all(s.kind == server for s in tasks)
    by_id = {s.span_id: s for s in spans}
    for task in tasks:
        parent = by_id[task.parent_span_id]
        assert parent.service != task.service, (task, parent)  # caused by another agent
    assert {t.service for t in tasks} == touched  # each of them ran a task of the fault
    diagnosis = next(
        t for t in tasks if t.service == "ip-fault" and t.attributes.get("an_agent.peer") == "service-fault"
    )
    assert diagnosis.attributes["an_agent.task_status"] == "finished"  # the A2A task, ended and exported
    # the ticket from the BSS is a trace of its own
    ticket = next(n for n in result["notes"] if n["kind"] == "ticket")["details"]["trace_id"]
    assert ticket != trace and any(s.trace_id == ticket for s in collector.spans)
