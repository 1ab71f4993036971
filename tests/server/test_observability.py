"""An agent watched from outside: ``/metrics`` read with urllib and prometheus-client's parser, the trace
context of a task over NETCONF (the an-agent-trace leaf), JSON logs. Over A2A: tests/a2a/test_a2a_observability.py."""

from __future__ import annotations

import json
import logging
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest
from lxml import etree

from an_agent.a2a.server import Logins
from an_agent.a2a.tls import TlsFiles, create_certificate
from an_agent.access.logins import LoginThrottle
from an_agent.errors import ConfigError
from an_agent.logs import JsonFormatter
from an_agent.metrics_http import MetricsServer
from an_agent.model import AgentProfile
from an_agent.runtime.principal import Principal
from an_agent.server import AgentServer, ServerConfig
from an_agent.tracing import LOGGER, parse, received
from metricsupport import TRACE, TRACEPARENT, scrape, value
from rawnc import NS, RawSession, wait_for
from support import IRTF, task_xml

TRACE_NS = "urn:an-agent:params:xml:ns:yang:an-agent-trace"


@pytest.fixture
def observed(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    server = AgentServer(ServerConfig(state_dir=tmp_path / "state", port=0, profile=profile, metrics_port=0))
    server.start()
    try:
        yield server
    finally:
        server.stop()


def moved(after: dict[tuple[str, str], float], before: dict[tuple[str, str], float], name: str, **labels: str) -> float:
    """How much a sample changed between two scrapes."""
    return value(after, name, **labels) - value(before, name, **labels)


def test_metrics_count_what_the_agent_did(observed: AgentServer, caplog: pytest.LogCaptureFixture) -> None:
    assert observed.metrics is not None
    url = observed.metrics.url
    assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
    caplog.set_level(logging.INFO, LOGGER)
    before = scrape(url)  # the families are the process's: other tests' agents may have counted already
    raw = RawSession(observed.port)
    try:
        yes = raw.rpc(
            f'<task-negotiate xmlns="{IRTF}"><task-id>n1</task-id><commuType>FeasibilityNegotiate</commuType>'
            "<content>## target object\nSITE-07\n## task description\ndiagnose the fault</content>"
            "<type>FEASIBILITY</type></task-negotiate>"
        )
        assert yes.findtext(f"{{{IRTF}}}feasible") == "true"
        extra = f'<traceparent xmlns="{TRACE_NS}">{TRACEPARENT}</traceparent>'
        reply = raw.rpc(f"<edit-config><target><running/></target>{task_xml('m1', extra=extra)}</edit-config>")
        assert reply.find("nc:ok", NS) is not None, etree.tostring(reply)
        raw.rpc('<frobnicate xmlns="urn:example:nothing"/>')
        samples = scrape(url)
        assert value(samples, "an_agent_netconf_sessions") >= 1  # read when scraped: this session is open

        def finished() -> bool:
            status = raw.rpc(f'<get><filter type="xpath" select="/irtf-agent:tasks" xmlns:irtf-agent="{IRTF}"/></get>')
            return status.findtext(f".//{{{IRTF}}}task-status") == "finished"

        wait_for(finished)
        data = raw.rpc("<get-config><source><running/></source></get-config>")
        assert data.findtext(f".//{{{TRACE_NS}}}traceparent") == TRACEPARENT  # kept with the task, validated
    finally:
        raw.close()
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    with pytest.raises(paramiko.AuthenticationException):
        client.connect("127.0.0.1", observed.port, "admin", "wrong", look_for_keys=False, allow_agent=False)
    client.close()

    samples = scrape(url)  # the task's end was counted as it was recorded, before <get> could see it
    assert moved(samples, before, "an_agent_tasks_total", side="executor", status="finished") == 1
    assert moved(samples, before, "an_agent_tasks_total", side="executor", status="created") == 1
    assert moved(samples, before, "an_agent_tasks_open", side="executor") == 0
    assert (
        moved(samples, before, "an_agent_task_duration_seconds_count", skill="fault-diagnosis", status="finished") == 1
    )
    assert moved(samples, before, "an_agent_negotiations_total", type="FEASIBILITY", outcome="yes") == 1
    assert moved(samples, before, "an_agent_netconf_request_seconds_count", operation="edit-config", result="ok") == 1
    assert (
        moved(samples, before, "an_agent_netconf_request_seconds_count", operation="other", result="unknown-namespace")
        == 1
    )
    assert moved(samples, before, "an_agent_netconf_request_seconds_count", operation="get", result="ok") >= 1
    assert moved(samples, before, "an_agent_failed_logins_total", face="ssh") == 1
    assert moved(samples, before, "an_agent_sqlite_commit_seconds_count", database="agent") >= 1
    assert ("an_agent_notification_queue", "{}") in samples and ("an_agent_subscribers", "{}") in samples
    assert samples[("an_agent_evolution_pool_fragments", "{}")] == 0  # evolution on, nothing learned yet
    assert value(samples, "process_resident_memory_bytes") > 0
    # no task id, user or address among the labels
    assert not any("m1" in labels or "admin" in labels or "127.0.0.1" in labels for _, labels in samples)
    # the trace the task came with: received and ended in it, as the child of the assigner's span
    events = [r for r in caplog.records if getattr(r, "trace_id", None) == TRACE]
    assert [r.event for r in events] == ["task.received", "task.ended"]
    assert {r.parent_span_id for r in events} == {"00f067aa0ba902b7"}
    # OpenMetrics for a scraper that asks for it (Prometheus does)
    request = urllib.request.Request(url, headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("application/openmetrics-text")
        assert answer.read().decode().endswith("# EOF\n")


def test_metrics_off_loopback_take_the_a2a_faces_users_and_tls(tmp_path: Path) -> None:
    logins = Logins(
        lambda user, password: (user, password) == ("ops", "s3cret"), Principal.authenticated, LoginThrottle(0.0)
    )
    with pytest.raises(ConfigError, match="without users and TLS"):
        MetricsServer("127.0.0.1", 0, loopback=False, logins=logins)
    tls = create_certificate(TlsFiles(tmp_path / "cert.pem", tmp_path / "key.pem"), "127.0.0.1")
    server = MetricsServer("127.0.0.1", 0, loopback=False, logins=logins, tls=tls).start()
    try:
        assert server.url.startswith("https://")
        context = ssl.create_default_context(cafile=str(tls.cert))
        with pytest.raises(urllib.error.HTTPError) as refused:
            scrape(server.url, context)
        assert refused.value.code == 401
        with pytest.raises(urllib.error.HTTPError) as wrong:
            scrape(server.url, context, auth="Basic b3BzOndyb25n")  # ops:wrong
        assert wrong.value.code == 401
        samples = scrape(server.url, context, auth="Basic b3BzOnMzY3JldA==")  # ops:s3cret
        assert value(samples, "an_agent_failed_logins_total", face="http") >= 1  # the wrong password
    finally:
        server.stop()


def test_traceparent_parsing() -> None:
    span = parse(TRACEPARENT)
    assert span is not None and (span.trace_id, span.span_id) == (TRACE, "00f067aa0ba902b7")
    child = received(TRACEPARENT)
    assert child.trace_id == TRACE and child.parent_id == "00f067aa0ba902b7" and child.span_id != span.span_id
    assert child.traceparent().startswith(f"00-{TRACE}-{child.span_id}-")
    for bad in (None, "", "01-" + TRACEPARENT[3:], f"00-{'0' * 32}-00f067aa0ba902b7-01", TRACEPARENT.upper()):
        assert parse(bad) is None
        assert received(bad).parent_id is None  # a new trace: a request from outside


def test_json_log_lines_have_the_documented_keys() -> None:
    record = logging.LogRecord("an_agent.x", logging.WARNING, __file__, 1, "hello %s", ("world",), None)
    line = json.loads(JsonFormatter("ran-fault").format(record))
    assert list(line)[:8] == ["time", "level", "agent", "event", "task_id", "trace_id", "peer", "message"]
    assert line["agent"] == "ran-fault" and line["event"] == "log" and line["message"] == "hello world"
    assert line["level"] == "warning" and line["time"].endswith("+00:00") and line["trace_id"] is None


def test_the_trace_leaf_for_a_stock_ncclient(nc: Any) -> None:
    """What an outside client relies on: the module in the hello and in <get-schema>, the leaf kept, a
    malformed value refused with the leaf's path."""
    assert any(TRACE_NS in c and "module=an-agent-trace" in c for c in nc.server_capabilities)
    schema = nc.get_schema("an-agent-trace")
    assert 'augment "/agtask:tasks/agtask:task"' in schema.data
    extra = f'<traceparent xmlns="{TRACE_NS}">{TRACEPARENT}</traceparent>'
    assert nc.edit_config(target="running", config=task_xml("n1", extra=extra)).ok
    assert TRACEPARENT in nc.get_config(source="running").data_xml
    bad = f'<traceparent xmlns="{TRACE_NS}">00-{"x" * 32}-00f067aa0ba902b7-01</traceparent>'
    refused = nc.edit_config(target="running", config=task_xml("n2", extra=bad))
    assert not refused.ok and refused.error.tag == "invalid-value" and "traceparent" in (refused.error.path or "")


def test_otlp_is_off_unless_asked_and_a_url_that_is_none_is_refused(tmp_path: Path) -> None:
    """Without --otlp nothing of OpenTelemetry's SDK is loaded (start-up cost); a bad URL is a user error."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, an_agent.cli.serve, an_agent.cli.lab, an_agent.server, an_agent.lab.run, an_agent.lab.daemon\n"
            "print(sorted(m for m in sys.modules if m.startswith(('opentelemetry.sdk', 'opentelemetry.exporter'))))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]"
    refused = subprocess.run(
        [
            sys.executable,
            "-m",
            "an_agent.cli",
            "serve",
            "--otlp",
            "ftp://collector",
            "--state-dir",
            str(tmp_path / "s"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "--otlp 'ftp://collector': expected the collector's OTLP/HTTP URL" in refused.stderr
    assert not (tmp_path / "s").exists()  # refused before anything was made
