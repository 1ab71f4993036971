"""The Prometheus metrics of one agent process (or of a lab process): every family, defined once here.

The layers record what they own through the functions below: the operation layer task transitions,
durations and negotiations (`an_agent.runtime`), each face its requests at its one dispatch point
(`an_agent.nc.face`, `an_agent.a2a.server`), the faces' shared login throttle failed logins, the
notification bus drops, the stores their commit latency (through `an_agent.store.sqlite`'s commit
observer, since the store is a bottom layer). Values read at scrape time (open sessions, subscribers,
queue depth, evolution pool, clusters and patches by state, a lab's network KPIs) are `probe`s: a
function called when Prometheus asks, which costs nothing in between.

Recording is off until `enable` (``an-agent serve --metrics-port``): each function then costs a flag
test. On, a counter increment or a histogram observation (prometheus-client's own lock, no other).
Label sets are bounded: operations outside the known set count as ``other``, statuses and states are
enumerations, skills are the profile's; no task id, user or address is ever a label.

One process serves one agent, so the families carry no agent label: Prometheus adds ``agent``, ``role``
and ``lab`` from its targets (a lab writes them, `an_agent.lab.prometheus`). `REGISTRY` is ours, not
prometheus-client's global one, so nothing a library registers there leaks into ``/metrics``.
"""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

disable_created_metrics()  # type: ignore[no-untyped-call]  # no *_created series: they double every family for nothing a graph uses
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)  # CPU, memory, open files of the agent process
PlatformCollector(registry=REGISTRY)

_LATENCY = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_TASK_SECONDS = (0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0)
_COMMIT = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)

TASKS = Counter(
    "an_agent_tasks",
    "Task status transitions: side executor (a task this agent runs) or requester (one it assigned a peer), "
    "status the draft's task-status entered",
    ["side", "status"],
    registry=REGISTRY,
)
TASKS_OPEN = Gauge("an_agent_tasks_open", "Tasks created and not ended yet, by side", ["side"], registry=REGISTRY)
TASK_DURATION = Histogram(
    "an_agent_task_duration_seconds",
    "Wall seconds from created to an end state of the tasks this agent ran, by the profile skill that took them",
    ["skill", "status"],
    buckets=_TASK_SECONDS,
    registry=REGISTRY,
)
NEGOTIATIONS = Counter(
    "an_agent_negotiations",
    "task-negotiate answered by this agent: type FEASIBILITY or FULFILLMENT, outcome yes, no or error",
    ["type", "outcome"],
    registry=REGISTRY,
)


class _RequestHistogram(Collector):
    """A histogram of requests by two labels, recorded without a lock: each thread counts into a table of
    its own (a request is one session thread's work), summed when scraped. A prometheus-client `Histogram`
    takes two locks and walks its buckets per observation; this is a dict read, a bisection and two
    additions, for the one family observed on every request of a face."""

    def __init__(self, name: str, documentation: str, labels: tuple[str, str], buckets: tuple[float, ...]) -> None:
        self.name, self.documentation, self.labels, self.bounds = name, documentation, labels, buckets
        self._local = threading.local()
        self._lock = threading.Lock()
        self._tables: list[tuple[threading.Thread, dict[tuple[str, str], list[float]]]] = []
        self._retired: dict[tuple[str, str], list[float]] = {}  # the tables of threads that ended

    def observe(self, key: tuple[str, str], seconds: float) -> None:
        try:
            table: dict[tuple[str, str], list[float]] = self._local.table
        except AttributeError:
            table = self._local.table = {}
            with self._lock:
                self._tables.append((threading.current_thread(), table))
        entry = table.get(key)
        if entry is None:
            entry = table[key] = [0.0] * (len(self.bounds) + 2)  # sum, then one count per bucket and +Inf
        entry[0] += seconds
        entry[1 + bisect_left(self.bounds, seconds)] += 1

    def describe(self) -> Iterable[Metric]:
        return ()

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            live = []
            for thread, table in self._tables:
                if thread.is_alive():
                    live.append((thread, table))
                else:  # it writes no more: fold it in once
                    _add(self._retired, table)
            self._tables = live
            totals: dict[tuple[str, str], list[float]] = {}
            _add(totals, self._retired)
            for _, table in live:
                _add(totals, table)
        family = HistogramMetricFamily(self.name, self.documentation, labels=list(self.labels))
        for key, entry in sorted(totals.items()):
            running, buckets = 0.0, []
            for bound, count in zip((*map(floatToGoString, self.bounds), "+Inf"), entry[1:], strict=True):
                running += count
                buckets.append((bound, running))
            family.add_metric(list(key), buckets, sum_value=entry[0])
        yield family


def _add(into: dict[tuple[str, str], list[float]], table: dict[tuple[str, str], list[float]]) -> None:
    for key, entry in list(table.items()):  # list(): a snapshot, while the owner may add a key
        total = into.setdefault(key, [0.0] * len(entry))
        for index, value in enumerate(list(entry)):
            total[index] += value


NETCONF_REQUESTS = _RequestHistogram(
    "an_agent_netconf_request_seconds",
    "NETCONF RPCs handled, by operation and result (ok or the rpc-error's error-tag): seconds from a parsed <rpc> "
    "to its reply built; its _count is the number of requests",
    ("operation", "result"),
    _LATENCY,
)
A2A_REQUESTS = _RequestHistogram(
    "an_agent_a2a_request_seconds",
    "A2A requests handled, by method (the JSON-RPC method, agent-card, http+json, other) and result (ok, the HTTP "
    "status class, aborted): seconds from arrival to the start of the response; its _count is the number of requests",
    ("method", "result"),
    _LATENCY,
)
REGISTRY.register(NETCONF_REQUESTS)
REGISTRY.register(A2A_REQUESTS)
FAILED_LOGINS = Counter("an_agent_failed_logins", "Failed logins, by face (ssh, http)", ["face"], registry=REGISTRY)
NOTIFICATION_DROPS = Counter(
    "an_agent_notification_drops",
    "Notifications dropped with a subscriber that fell too far behind (the subscription is ended)",
    registry=REGISTRY,
)
COMMIT_SECONDS = Histogram(
    "an_agent_sqlite_commit_seconds",
    "Seconds a SQLite COMMIT took, by database (agent, evolution)",
    ["database"],
    buckets=_COMMIT,
    registry=REGISTRY,
)

_on = False
_children: dict[tuple[object, ...], Any] = {}
"""Bound label children by (family, labels): `labels()` takes a lock and builds a key; this is a dict read."""


def enable() -> None:
    """Start recording (until the process ends): ``an-agent serve --metrics-port`` calls it before serving."""
    global _on
    _on = True
    from an_agent.store import sqlite  # the store is below us: it calls an observer rather than us

    sqlite.observe_commits(_commit)


def enabled() -> bool:
    return _on


def _child(family: Counter | Gauge | Histogram, *labels: str) -> Any:
    key = (id(family), *labels)
    child = _children.get(key)
    if child is None:
        child = _children[key] = family.labels(*labels)
    return child


def task_status(side: str, status: str) -> None:
    """A task entered ``status`` (the draft's task-status) on ``side`` (executor, requester)."""
    if _on:
        _child(TASKS, side, status).inc()


def task_open(side: str, change: int) -> None:
    """A task of ``side`` was created (+1) or ended (-1)."""
    if _on:
        _child(TASKS_OPEN, side).inc(change)


def task_duration(skill: str, status: str, seconds: float) -> None:
    if _on:
        _child(TASK_DURATION, skill, status).observe(seconds)


def negotiation(kind: str, outcome: str) -> None:
    if _on:
        _child(NEGOTIATIONS, kind, outcome).inc()


def netconf_request(operation: str, result: str, seconds: float) -> None:
    """One RPC: one observation (the histogram's count is the request counter)."""
    if _on:
        NETCONF_REQUESTS.observe((operation, result), seconds)


def a2a_request(method: str, result: str, seconds: float) -> None:
    if _on:
        A2A_REQUESTS.observe((method, result), seconds)


def failed_login(face: str) -> None:
    if _on:
        _child(FAILED_LOGINS, face).inc()


def notifications_dropped(count: int) -> None:
    if _on and count > 0:
        NOTIFICATION_DROPS.inc(count)


def _commit(database: str, seconds: float) -> None:
    _child(COMMIT_SECONDS, database).observe(seconds)


Reading = Callable[[], Mapping[tuple[str, ...], float] | float]
"""What a probe reads at scrape time: one value, or a value per label tuple."""


class _Probes(Collector):
    """Gauges read when scraped (`probe`); a name probed again replaces its reader (one agent per process)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._probes: dict[str, tuple[str, tuple[str, ...], Reading]] = {}

    def set(self, name: str, documentation: str, labels: Sequence[str], read: Reading) -> None:
        with self._lock:
            self._probes[name] = (documentation, tuple(labels), read)

    def describe(self) -> Iterable[Metric]:
        return ()  # the names are known only once probes are set: nothing to check at registration

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            probes = list(self._probes.items())
        for name, (documentation, labels, read) in probes:
            family = GaugeMetricFamily(name, documentation, labels=list(labels))
            try:
                value = read()
            except Exception:  # a probe of a stopping agent: skip it rather than fail the whole scrape
                continue
            if isinstance(value, Mapping):
                for key, number in sorted(value.items()):
                    family.add_metric(list(key), float(number))
            else:
                family.add_metric([], float(value))
            yield family


_PROBES = _Probes()
REGISTRY.register(_PROBES)


def probe(name: str, documentation: str, read: Reading, labels: Sequence[str] = ()) -> None:
    """Serve gauge ``name``, its value(s) read by ``read`` at each scrape (module docstring)."""
    _PROBES.set(name, documentation, labels, read)


def exposition(openmetrics: bool = False) -> tuple[bytes, str]:
    """The current text of every family and its content type (Prometheus text, or OpenMetrics)."""
    if openmetrics:
        from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(REGISTRY), CONTENT_TYPE_LATEST  # type: ignore[no-untyped-call]
    from prometheus_client import CONTENT_TYPE_LATEST as TEXT
    from prometheus_client import generate_latest as text

    return text(REGISTRY), TEXT
