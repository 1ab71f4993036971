"""Spans to an OpenTelemetry collector over OTLP/HTTP (``--otlp URL`` of ``an-agent serve`` and ``lab run|up``).

Off by default: nothing leaves the machine unless ``--otlp`` names a collector. `export_spans` then
imports OpenTelemetry's SDK (only then: it costs start-up time and memory an agent without it does not
pay) and makes an `OtlpSink` the process's `an_agent.tracing.SpanSink`. The spans are the ones the trace
machinery already has, with its ids, so the spans of every agent a fault touched form one trace:

- ``task``: a task at the agent that runs it, from its arrival to its end (kind server; its parent
  is the span of the assigner that sent it, from the task's ``traceparent``; status error when the
  task failed);
- ``task.sent``: one request assigning a task to a peer, over NETCONF or A2A (kind client; attribute
  ``an_agent.face``), a child of the span the sender worked in;
- ``alarm.received``: an agent handling alarms (kind consumer), a child of the fault that raised them;
- ``fault.injected`` and ``request.sent``: a lab's fault and ticket, the roots of their traces.

Each span's resource names its agent (``service.name``; ``service.namespace`` ``an-agent``), so a lab run
in one process still shows an agent per service. Spans go out in batches (OpenTelemetry's
``BatchSpanProcessor``) from a thread of the SDK; `OtlpSink.shutdown` sends what is left (the process
calls it as it ends), and spans still open then go out ended there, marked ``an_agent.incomplete``.
A collector that does not answer costs at most `EXPORT_TIMEOUT` seconds per batch; the SDK logs it.
"""

from __future__ import annotations

import atexit
import threading
import time
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from an_agent import tracing
from an_agent.errors import ConfigError

TRACES_PATH = "/v1/traces"
"""Added to a ``--otlp`` URL without a path (OTLP/HTTP's path for traces)."""
EXPORT_TIMEOUT = 5.0
SCOPE = "an_agent"
_ATTRIBUTES = {"task_id": "an_agent.task_id", "peer": "an_agent.peer", "face": "an_agent.face"}
_ATTRIBUTES |= {"status": "an_agent.task_status", "target": "an_agent.target", "error": "an_agent.error"}
_NAMES = {"task.received": "task"}
_FAILED = frozenset({"failed", "cancelled"})


def endpoint(url: str) -> str:
    """The OTLP/HTTP traces endpoint of ``url`` (``http(s)://HOST:PORT[/PATH]``; no path: `TRACES_PATH`).

    Raises `ConfigError` for anything else, naming what is wrong.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"--otlp {url!r}: expected the collector's OTLP/HTTP URL, e.g. http://127.0.0.1:4318 (its path "
            f"defaults to {TRACES_PATH})"
        )
    if parts.path in ("", "/"):
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, TRACES_PATH, parts.query, ""))
    return url


@dataclass
class _Open:
    span: tracing.Span
    agent: str
    name: str
    kind: tracing.SpanKind
    start_ns: int
    fields: dict[str, Any]


class OtlpSink:
    """The spans of this process to one OTLP/HTTP endpoint (module docstring); thread-safe."""

    def __init__(self, url: str) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        self.url = endpoint(url)
        self._processor = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=self.url, timeout=EXPORT_TIMEOUT), schedule_delay_millis=1000
        )
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], _Open] = {}  # (trace id, span id) -> the span begun
        self._resources: dict[str, Any] = {}
        self._closed = False

    def opened(
        self, agent: str, name: str, span: tracing.Span, kind: tracing.SpanKind, fields: Mapping[str, Any]
    ) -> None:
        with self._lock:
            if not self._closed:
                self._open[(span.trace_id, span.span_id)] = _Open(span, agent, name, kind, time.time_ns(), dict(fields))

    def closed(self, span: tracing.Span, fields: Mapping[str, Any]) -> None:
        with self._lock:
            begun = self._open.pop((span.trace_id, span.span_id), None)
            if begun is None or self._closed:
                return
        self._processor.on_end(self._readable(begun, {**begun.fields, **fields}, time.time_ns()))

    def shutdown(self) -> None:
        """Send the spans not sent yet, the open ones ended now (module docstring); then nothing more."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            left = list(self._open.values())
            self._open.clear()
        now = time.time_ns()
        for begun in left:
            self._processor.on_end(self._readable(begun, {**begun.fields, "incomplete": True}, now))
        self._processor.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated

    def _resource(self, agent: str) -> Any:
        from opentelemetry.sdk.resources import Resource

        with self._lock:
            resource = self._resources.get(agent)
            if resource is None:
                resource = self._resources[agent] = Resource({"service.name": agent, "service.namespace": "an-agent"})
            return resource

    def _readable(self, begun: _Open, fields: Mapping[str, Any], end_ns: int) -> Any:
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

        span = begun.span
        flags = TraceFlags(TraceFlags.SAMPLED)
        trace_id = int(span.trace_id, 16)
        parent = (
            SpanContext(trace_id, int(span.parent_id, 16), is_remote=True, trace_flags=flags)
            if span.parent_id
            else None
        )
        attributes: dict[str, Any] = {"an_agent.agent": begun.agent, "an_agent.event": begun.name}
        for key, name in _ATTRIBUTES.items():
            if fields.get(key) is not None:
                attributes[name] = str(fields[key])
        if fields.get("incomplete"):
            attributes["an_agent.incomplete"] = True
        failed = fields.get("error") is not None or str(fields.get("status")) in _FAILED
        return ReadableSpan(
            name=_NAMES.get(begun.name, begun.name),
            context=SpanContext(trace_id, int(span.span_id, 16), is_remote=False, trace_flags=flags),
            parent=parent,
            resource=self._resource(begun.agent),
            attributes=attributes,
            kind=SpanKind[begun.kind.upper()],
            status=Status(StatusCode.ERROR) if failed else Status(StatusCode.UNSET),
            start_time=begun.start_ns,
            end_time=max(end_ns, begun.start_ns),
            instrumentation_scope=InstrumentationScope(SCOPE),
        )


def export_spans(url: str) -> OtlpSink:
    """Export this process's spans to ``url`` from now on (module docstring) until it ends; the sink."""
    sink = OtlpSink(url)
    tracing.export_to(sink)
    atexit.register(sink.shutdown)
    return sink
