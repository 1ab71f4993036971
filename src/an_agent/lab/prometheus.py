"""A running lab in Prometheus: targets of every agent, the simulated network's KPIs, a ready config.

``lab up`` starts each agent with ``--metrics-port 0`` (`an_agent.lab.processes`); the agent tells the
lab its port when it is ready. The lab process serves the network's KPIs itself (`serve_kpis`: cells in
service, users without coverage, energy, ... as ``an_agent_lab_*`` gauges read at scrape time) and
writes into the run directory (`write_files`):

- ``prometheus-targets.json``: Prometheus ``file_sd`` targets, one per agent with labels ``agent``,
  ``role`` and ``lab`` (the topology's name), and the lab's own (``agent="network"``,
  ``role="simulator"``);
- ``prometheus.yml``: a scrape configuration that reads that file (5 s interval), for
  ``prometheus --config.file RUN_DIR/prometheus.yml``.

Both files are written 0600 like everything a lab writes: a Prometheus running as another user needs
them copied or made readable to it. Agents in network namespaces (``--netns``) listen for metrics on
their namespace's loopback, which the host cannot reach: they are left out of the targets.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from an_agent import metrics
from an_agent._files import write_private
from an_agent.metrics_http import MetricsServer

TARGETS_FILE = "prometheus-targets.json"
CONFIG_FILE = "prometheus.yml"
SCRAPE_INTERVAL = "5s"
NETWORK_AGENT = "network"
"""The ``agent`` label of the lab process's own target (the simulated network's KPIs)."""

_KPIS = {
    "cells_in_service": "Cells in service in the simulated network",
    "cells_total": "Cells of the simulated network",
    "sites_out_of_service": "Sites out of service",
    "users_total": "Users of the simulated network",
    "users_without_coverage": "Users without coverage (their cell and no neighbour serves them)",
    "energy_kw": "Power drawn by the radio network, kW",
    "compensating_cells": "Cells compensating for an out-of-service neighbour",
    "energy_saving_suspended": "Cells whose energy saving is suspended or adjusted",
}


@dataclass(frozen=True)
class Target:
    """One scrape target of the lab."""

    agent: str
    role: str
    host: str
    port: int


def serve_kpis(kpis: Callable[[], Any]) -> MetricsServer:
    """Serve the network KPIs (``kpis()`` returns `an_agent.lab.network.Kpis`) on loopback, a free port."""
    for field, documentation in _KPIS.items():
        metrics.probe(f"an_agent_lab_{field}", documentation, _reader(kpis, field))
    return MetricsServer("127.0.0.1", 0, loopback=True).start()


def _reader(kpis: Callable[[], Any], field: str) -> Callable[[], float]:
    return lambda: float(getattr(kpis(), field))


def write_files(run_dir: Path, lab: str, targets: Iterable[Target]) -> tuple[Path, Path]:
    """Write the ``file_sd`` targets and the Prometheus configuration into ``run_dir`` (module docstring)."""
    groups = [
        {"targets": [f"{t.host}:{t.port}"], "labels": {"agent": t.agent, "role": t.role, "lab": lab}} for t in targets
    ]
    targets_path = run_dir.resolve() / TARGETS_FILE
    write_private(targets_path, (json.dumps(groups, indent=2) + "\n").encode())
    config = (
        "# Written by 'an-agent lab up': prometheus --config.file THIS_FILE (docs/observability.md)\n"
        "global:\n"
        f"  scrape_interval: {SCRAPE_INTERVAL}\n"
        f"  evaluation_interval: {SCRAPE_INTERVAL}\n"
        "scrape_configs:\n"
        f"  - job_name: an-agent-lab-{lab}\n"
        "    file_sd_configs:\n"
        f"      - files: [{json.dumps(str(targets_path))}]\n"
        f"        refresh_interval: {SCRAPE_INTERVAL}\n"
    )
    config_path = run_dir.resolve() / CONFIG_FILE
    write_private(config_path, config.encode())
    return targets_path, config_path


def watch_lab(lab: Any, run_dir: Path) -> MetricsServer:
    """For `an_agent.lab.daemon`: serve ``lab``'s network KPIs and write the files for its agents (module
    docstring); returns the KPI server (the caller stops it). ``lab`` is a started `an_agent.lab.runner.Lab`."""
    server = serve_kpis(lab.network.kpis)
    targets = [Target(NETWORK_AGENT, "simulator", server.host, server.port)]
    conductor = getattr(lab.fleet, "conductor", None)  # None in process: the agents' metrics are the lab's
    for spec in lab.local_agents:
        ready = conductor.ready(spec.name) if conductor is not None else None
        port = ready.get("metrics_port") if ready else None
        if port and lab.net is None:
            targets.append(Target(spec.name, str(spec.role), "127.0.0.1", int(port)))
    write_files(run_dir, lab.topology.name, targets)
    return server
