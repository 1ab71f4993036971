"""Reading an agent's ``/metrics`` from outside (urllib and prometheus-client's parser) and a trace context."""

from __future__ import annotations

import json
import ssl
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE}-00f067aa0ba902b7-01"
"""W3C Trace Context's own example."""


def scrape(url: str, context: ssl.SSLContext | None = None, auth: str | None = None) -> dict[tuple[str, str], float]:
    """Every sample of ``url`` as (name, sorted labels as text) -> value."""
    request = urllib.request.Request(url, headers={"Authorization": auth} if auth else {})
    with urllib.request.urlopen(request, timeout=10, context=context) as answer:
        text = answer.read().decode()
    return {
        (sample.name, json.dumps(sample.labels, sort_keys=True)): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: dict[tuple[str, str], float], name: str, **labels: str) -> float:
    return samples.get((name, json.dumps(labels, sort_keys=True)), 0.0)
