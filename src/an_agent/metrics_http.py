"""``/metrics`` over HTTP: what Prometheus scrapes from an agent (or a lab) process.

`MetricsServer` serves `an_agent.metrics.REGISTRY` at ``/metrics`` on ``host:port`` (uvicorn in a thread
of its own), in the Prometheus text format, or OpenMetrics when the scraper asks for it (``Accept:
application/openmetrics-text``, as Prometheus does). On a loopback address it is open, like any
exporter on localhost. On any other address it takes the A2A face's rules: HTTP Basic with the agent's
users, or their bearer tokens (`an_agent.a2a.server.BasicAuth`, the same password check and login
throttle), over HTTPS only; it refuses to start without both.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp

from an_agent import metrics
from an_agent.errors import ConfigError

if TYPE_CHECKING:
    from an_agent.a2a.server import Logins
    from an_agent.a2a.tls import TlsFiles
    from an_agent.runtime.operations import Operations

METRICS_PATH = "/metrics"


async def _metrics(request: Request) -> Response:
    openmetrics = "application/openmetrics-text" in request.headers.get("accept", "")
    body, content_type = metrics.exposition(openmetrics)
    return Response(body, media_type=content_type)


class MetricsServer:
    """``/metrics`` on ``host:port`` (0: a free port, see `port`); ``logins`` and ``tls`` off loopback."""

    def __init__(
        self, host: str, port: int, loopback: bool, logins: Logins | None = None, tls: TlsFiles | None = None
    ) -> None:
        app: ASGIApp = Starlette(routes=[Route(METRICS_PATH, _metrics, methods=["GET"])])
        if not loopback:
            if logins is None or tls is None:
                raise ConfigError(
                    f"refusing to serve metrics on {host} without users and TLS: off loopback /metrics takes "
                    "the A2A face's rules (HTTP Basic or bearer tokens, HTTPS)"
                )
            from an_agent.a2a.server import BasicAuth  # the A2A face's check, throttle and tokens

            app = BasicAuth(app, logins.check_password, (), logins.throttle, logins.token_owner)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.create_server((host, port), family=family)  # only the address asked for
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        scheme = "https" if tls is not None else "http"
        self.url = f"{scheme}://{f'[{host}]' if ':' in host else host}:{self.port}{METRICS_PATH}"
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            access_log=False,
            # uvicorn's own logging setup (dictConfig of its loggers, handlers and formatters) is not run: its
            # warnings reach the process's log as configured (`an_agent.logs`), and an agent forked from a
            # lab's template keeps ~0.7 MiB more of the template's pages shared (issue 30)
            log_config=None,
            timeout_graceful_shutdown=2,
            ssl_certfile=str(tls.cert) if tls is not None else None,
            ssl_keyfile=str(tls.key) if tls is not None else None,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"metrics-{self.port}", daemon=True)

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._socket]))

    def start(self) -> MetricsServer:
        metrics.enable()
        self._thread.start()
        for _ in range(1000):  # uvicorn sets `started` once it serves on our socket
            if self._server.started:
                return self
            if not self._thread.is_alive():
                raise RuntimeError("the metrics server did not start")
            threading.Event().wait(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self._socket.close()


def watch_agent(operations: Operations, sessions: Callable[[], int]) -> None:
    """The gauges read at scrape time (`an_agent.metrics.probe`): sessions, subscribers, queue, evolution."""
    metrics.probe("an_agent_netconf_sessions", "Open NETCONF sessions", sessions)
    metrics.probe(
        "an_agent_subscribers", "Notification subscriptions (NETCONF and A2A streams)", operations.bus.subscriber_count
    )
    metrics.probe(
        "an_agent_notification_queue", "Notifications queued for subscribers, not yet written", operations.bus.backlog
    )
    schemas = operations.schemas
    if schemas is None:
        return
    metrics.probe(
        "an_agent_evolution_pool_fragments",
        "Fragments in the semantic pool of schema evolution",
        lambda: schemas.census()[0],
    )
    metrics.probe(
        "an_agent_evolution_clusters", "Clusters of the semantic pool by state", lambda: schemas.census()[1], ["state"]
    )
    metrics.probe("an_agent_evolution_patches", "Schema patches by state", lambda: schemas.census()[2], ["state"])
