"""Log output of an agent or lab process: text for people (the default) or JSON lines for machines.

``--log-format json`` writes one object per line with ``time`` (RFC 3339, UTC, microseconds), ``level``,
``agent``, ``event``, ``task_id``, ``trace_id``, ``peer`` and ``message`` (always these keys, null when a
record has no value), then ``logger`` and whatever else the record carries (``span_id``,
``parent_span_id``, ``face``, ``status`` of the trace events, `an_agent.tracing`). ``agent`` is the
record's own (a lab process speaks for several) or the process's agent name; ``event`` is the
record's, else ``log``.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
from typing import Any, Literal

LogFormat = Literal["text", "json"]
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_KEYS = ("agent", "event", "task_id", "trace_id", "peer")
_EXTRA = ("span_id", "parent_span_id", "face", "status", "target", "alarms")


class JsonFormatter(logging.Formatter):
    """One JSON object per record (module docstring)."""

    def __init__(self, agent: str | None = None) -> None:
        super().__init__()
        self.agent = agent

    def format(self, record: logging.LogRecord) -> str:
        fields = record.__dict__
        entry: dict[str, Any] = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(timespec="microseconds"),
            "level": record.levelname.lower(),
            "agent": fields.get("agent") or self.agent,
            "event": fields.get("event") or "log",
            "task_id": fields.get("task_id"),
            "trace_id": fields.get("trace_id"),
            "peer": fields.get("peer"),
            "message": record.getMessage(),
            "logger": record.name,
        }
        entry.update({key: fields[key] for key in _EXTRA if fields.get(key) is not None})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def configure(log_format: LogFormat, level: int, agent: str | None = None) -> None:
    """Send this process's log records to stderr in ``log_format`` at ``level`` (in JSON the trace events
    of `an_agent.tracing` at any level: they are the record ``an-agent trace`` reads)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(agent) if log_format == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    if log_format == "json":  # the trace events are what `an-agent trace` reads: whatever the level
        from an_agent.tracing import LOGGER

        logging.getLogger(LOGGER).setLevel(logging.INFO)


def name_agent(agent: str) -> None:
    """Name the agent the JSON lines speak for once it is known (after the profile is loaded)."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler.formatter, JsonFormatter):
            handler.formatter.agent = agent


def trace_to_stderr(agent: str) -> None:
    """Write the trace events (`an_agent.tracing`) of a process that logs nothing else as JSON lines on
    stderr, naming ``agent`` (a lab process: its scenario's faults and requests)."""
    from an_agent.tracing import LOGGER

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(agent))
    trace = logging.getLogger(LOGGER)
    trace.addHandler(handler)
    trace.setLevel(logging.INFO)
    trace.propagate = False
