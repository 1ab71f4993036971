"""Options that let an operator watch an agent or a lab (docs/observability.md): Prometheus metrics, JSON
logs, and spans to an OpenTelemetry collector (``--otlp``, off by default: nothing leaves the machine
unless asked)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

OTLP_HELP = (
    "send spans (a task at each agent, each task sent to a peer, alarms, faults) to the OpenTelemetry "
    "collector at URL over OTLP/HTTP, e.g. http://127.0.0.1:4318 (its path defaults to /v1/traces); off by "
    "default: nothing leaves the machine unless asked"
)


def add_arguments(parser: Any) -> None:
    """``an-agent serve``'s group: ``--metrics-port``, ``--metrics-host``, ``--log-format``, ``--otlp``."""
    group = parser.add_argument_group("observability (docs/observability.md)")
    group.add_argument(
        "--metrics-port",
        type=int,
        metavar="PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics (0 picks a free one); off by default, and "
        "nothing is recorded while off",
    )
    group.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        metavar="HOST",
        help="address of --metrics-port (default 127.0.0.1, open); any other address needs users and serves "
        "HTTPS with the A2A face's certificate, like the A2A face",
    )
    group.add_argument(
        "--log-format",
        choices=["text", "json"],
        default="text",
        help="text for people (default), or json: one object per line with time, level, agent, event, "
        "task_id, trace_id, peer, message",
    )
    add_otlp(group)


def add_otlp(parser: Any) -> None:
    parser.add_argument("--otlp", metavar="URL", help=OTLP_HELP)


@contextlib.contextmanager
def spans(url: str | None) -> Iterator[None]:
    """Export this process's spans to ``url`` for the block (`an_agent.otlp`), sending what is left at its
    end; nothing, and no import of OpenTelemetry, when ``url`` is None."""
    if url is None:
        yield
        return
    from an_agent.otlp import export_spans

    sink = export_spans(url)
    try:
        yield
    finally:
        sink.shutdown()
