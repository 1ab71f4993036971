"""The A2A face observed: its requests in ``/metrics``, the trace context in message metadata (``traceparent``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from a2asupport import collect, energy_agent_config, run, structured
from google.protobuf.struct_pb2 import Struct

from an_agent.server import AgentServer
from an_agent.tracing import LOGGER
from metricsupport import TRACE, TRACEPARENT, scrape, value


def test_a2a_requests_and_the_trace_in_message_metadata(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, LOGGER)
    config = energy_agent_config(tmp_path / "state", 0.0)
    config.metrics_port = 0
    with AgentServer(config) as server:
        assert server.metrics is not None

        async def send(client: Any, card: Any, http: Any) -> None:
            request = structured({"cell_ids": ["CELL-0401"], "action": "reduce", "duration_minutes": 30})
            request.message.metadata.CopyFrom(Struct())
            request.message.metadata.update({"traceparent": TRACEPARENT})
            await collect(client.send_message(request))

        before = scrape(server.metrics.url)  # the process's families: other tests may have counted already
        run(server, send)
        samples = scrape(server.metrics.url)
    for method, count in (("agent-card", 1), ("SendStreamingMessage", 1)):
        labels = {"method": method, "result": "ok"}
        assert (
            value(samples, "an_agent_a2a_request_seconds_count", **labels)
            - value(before, "an_agent_a2a_request_seconds_count", **labels)
            == count
        )
    received_events = [r for r in caplog.records if getattr(r, "event", None) == "task.received"]
    assert [r.trace_id for r in received_events] == [TRACE]
