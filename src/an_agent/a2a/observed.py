"""The A2A face's request metrics: one ASGI layer outside everything else, so refusals count too.

Each request is counted and timed (`an_agent.metrics.a2a_request`) from its arrival to the start of its
response (a stream: to its first bytes). The method label is the JSON-RPC method when the request is a
JSON-RPC call of the protocol, ``agent-card`` for the card, ``http+json`` for the other routes and
``other`` for anything else, so a client cannot grow the label set; the result is ``ok`` (2xx) or the
HTTP status class (``4xx``, ``5xx``). With the metrics off the layer passes requests straight through.
"""

from __future__ import annotations

import json
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from an_agent import metrics
from an_agent.a2a.sdk import JSONRPC_REQUEST_TYPES
from an_agent.a2a.strict import _buffered as buffered  # the one way this face reads a body twice


class RequestMetrics:
    """ASGI middleware (module docstring); ``jsonrpc_path`` and ``card_path`` name the two known routes."""

    def __init__(self, app: ASGIApp, jsonrpc_path: str, card_path: str) -> None:
        self.app = app
        self.jsonrpc_path = jsonrpc_path
        self.card_path = card_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not metrics.enabled():
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        label = "other"
        path = scope["path"]
        if path == self.card_path:
            label = "agent-card"
        elif path == self.jsonrpc_path and scope["method"] == "POST":
            label, receive = await _jsonrpc_method(receive)
        elif path.startswith("/"):
            label = "http+json"
        status = [0]

        async def observed(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
                code = status[0]
                metrics.a2a_request(label, "ok" if code < 300 else f"{code // 100}xx", time.perf_counter() - start)
            await send(message)

        await self.app(scope, receive, observed)
        if status[0] == 0:  # the app ended without a response (the client went away)
            metrics.a2a_request(label, "aborted", time.perf_counter() - start)


async def _jsonrpc_method(receive: Receive) -> tuple[str, Receive]:
    """The JSON-RPC method of the request (a protocol method, else ``other``) and a ``receive`` replaying it."""
    body, receive = await buffered(receive)
    try:
        method = json.loads(body).get("method") if body else None
    except (ValueError, AttributeError):
        method = None
    return (method if isinstance(method, str) and method in JSONRPC_REQUEST_TYPES else "other"), receive
