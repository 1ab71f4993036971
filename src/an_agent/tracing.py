"""Traces across agents: one W3C trace id per injected fault or external request, carried by every task.

A trace is born with an injected fault (the lab's scenario) or with a request from outside (a ticket
the lab sends, a client's task without a trace) and travels with every task it causes: over NETCONF in
the leaf ``/irtf-agent:tasks/task/an-agent-trace:traceparent`` (module ``an-agent-trace``, an augment:
draft-wang's leaves are untouched), over A2A in the message metadata key ``traceparent`` (W3C Trace
Context's name for it). Inside an agent the trace of the work in hand is a context variable
(`current`): the operation layer sets it while a task runs, the lab's scheduler hands it to the
activities a behaviour spawns, and a task a behaviour assigns carries `outgoing` (the same trace id,
this agent's span as parent).

Each agent records what it did for a trace with `event` on the logger ``an_agent.trace`` (INFO):
``alarm.received``, ``task.received``, ``task.sent``, ``task.ended``, and a lab's ``fault.injected`` /
``request.sent``. ``an-agent serve --log-format json`` writes them always, as JSON lines, which
``an-agent trace TRACE_ID --lab RUN_DIR`` reads back into the causal chain (`an_agent.lab.trace`); the
text format shows them from ``-v`` on.

The same events can leave the process as spans (``--otlp URL``, `an_agent.otlp`): a `SpanSink` set by
`export_to` hears each span open and close: a task at the agent that runs it (from ``task.received`` to
``task.ended``), an agent's handling of alarms (`close` ends it), each task sent to a peer (`sending`:
the request, a span of its own below the sender's), and a lab's faults and requests. Without a sink
(the default) this costs one test per event.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

TRACEPARENT_KEY = "traceparent"
"""The A2A message-metadata key of the trace context (W3C Trace Context's header name)."""

LOGGER = "an_agent.trace"
_log = logging.getLogger(LOGGER)

_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


@dataclass(frozen=True)
class Span:
    """Where an agent is in a trace: the trace id, its own span id, and the span that caused it."""

    trace_id: str
    span_id: str
    parent_id: str | None = None

    def traceparent(self) -> str:
        """The W3C traceparent naming this span as the parent of what it asks for next."""
        return f"00-{self.trace_id}-{self.span_id}-01"

    def child(self) -> Span:
        """A new span of the same trace caused by this one."""
        return Span(self.trace_id, secrets.token_hex(8), self.span_id)


def new_trace() -> Span:
    """The root span of a new trace (a fault injected, a request from outside)."""
    return Span(secrets.token_hex(16), secrets.token_hex(8))


def parse(traceparent: str | None) -> Span | None:
    """The span a traceparent names as parent (None for a missing or malformed value, or all-zero ids)."""
    match = _TRACEPARENT.match(traceparent or "")
    if match is None or set(match.group(1)) == {"0"} or set(match.group(2)) == {"0"}:
        return None
    return Span(match.group(1), match.group(2))


def received(traceparent: str | None) -> Span:
    """The span of work asked for with ``traceparent``: a child of it, or a new trace without one."""
    parent = parse(traceparent)
    return parent.child() if parent is not None else new_trace()


_current: ContextVar[Span | None] = ContextVar("an_agent_trace", default=None)


def current() -> Span | None:
    """The span of the work in hand in this thread (None outside any)."""
    return _current.get()


@contextlib.contextmanager
def use(span: Span | None) -> Iterator[Span | None]:
    """Run the block as ``span`` (None: outside any trace)."""
    token = _current.set(span)
    try:
        yield span
    finally:
        _current.reset(token)


def outgoing() -> str | None:
    """The traceparent for a task assigned now: the current span as parent (None outside a trace)."""
    span = _current.get()
    return span.traceparent() if span is not None else None


SpanKind = Literal["internal", "server", "client", "producer", "consumer"]
"""OpenTelemetry's span kinds, in its words."""


class SpanSink(Protocol):
    """Where spans go when they are exported (`an_agent.otlp.OtlpSink`); called from any thread."""

    def opened(self, agent: str, name: str, span: Span, kind: SpanKind, fields: Mapping[str, Any]) -> None:
        """``span`` (its trace, its id, its parent) began now, at ``agent``, as event ``name``."""

    def closed(self, span: Span, fields: Mapping[str, Any]) -> None:
        """``span`` ended now (``fields``: what the end adds, e.g. ``status``); unknown spans are ignored."""


_sink: SpanSink | None = None
# The events that open a span of their own (and its kind); a fault or request has no duration here.
_OPENS: dict[str, SpanKind] = {
    "task.received": "server",
    "alarm.received": "consumer",
    "fault.injected": "internal",
    "request.sent": "producer",
}
_INSTANT = frozenset({"fault.injected", "request.sent"})


def export_to(sink: SpanSink | None) -> None:
    """Send the spans of this process to ``sink`` from now on (None: no longer)."""
    global _sink
    _sink = sink


def close(span: Span | None, **fields: Any) -> None:
    """``span`` ended (an agent is done with the alarms it received); nothing without a sink."""
    sink = _sink
    if sink is not None and span is not None:
        sink.closed(span, fields)


@contextlib.contextmanager
def sending(agent: str, message: str, **fields: Any) -> Iterator[None]:
    """The block sends a task to a peer: event ``task.sent`` in the current span, and with a sink the
    request as a client span of its own (a child of the current one) that ends with the block."""
    span = _current.get()
    event(agent, "task.sent", message, span, **fields)
    sink = _sink
    if sink is None or span is None:
        yield
        return
    request = span.child()
    sink.opened(agent, "task.sent", request, "client", fields)
    try:
        yield
    except BaseException as exc:
        sink.closed(request, {"error": str(exc) or type(exc).__name__})
        raise
    sink.closed(request, {})


def event(agent: str, name: str, message: str, span: Span | None = None, **fields: Any) -> None:
    """Log trace event ``name`` of ``agent`` (module docstring) with the span's ids and ``fields``
    (``task_id``, ``peer``, ``face``, ``status``, ...); nothing outside a trace."""
    span = span or _current.get()
    if span is None:
        return
    _log.info(
        message,
        extra={
            "agent": agent,
            "event": name,
            "trace_id": span.trace_id,
            "span_id": span.span_id,
            "parent_span_id": span.parent_id,
            **fields,
        },
    )
    sink = _sink
    if sink is None:
        return
    kind = _OPENS.get(name)
    if kind is not None:
        sink.opened(agent, name, span, kind, fields)
    if name in _INSTANT or name == "task.ended":
        sink.closed(span, fields)
