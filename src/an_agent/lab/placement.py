"""Placement: a lab spanning machines (``hosts:`` and ``agent.host`` in the topology).

The first host of ``hosts`` runs the lab process proper (``lab up T --host FIRST``): the simulated
clock, network and scenario, its control channel on ``address:control_port`` and its own agents. Every
other host runs ``lab up T --host NAME --lab-secret-file F`` (`serve_member`): only its agents, each
an ``an-agent serve ... --lab-control FIRST_ADDRESS:CONTROL_PORT``, listening on the host's address.
Agents reach each other at their host's address (the lab tells them the ports); all hosts share the
control channel's secret file (copied by the operator, 0600). The scenario starts once every agent of
every host has joined.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from an_agent.errors import AnAgentError, ConfigError
from an_agent.lab.spec import AgentSpec, HostSpec, Topology

JOIN_TIMEOUT = 3600.0
"""Real seconds the first host waits for the agents of the other hosts before giving up on the scenario."""
_SERVING = re.compile(r"serving \S+ on (?P<host>[^:\s]+):(?P<port>\d+)")


def lab_host(topology: Topology) -> HostSpec | None:
    """The host that runs the lab's clock and network (the first of ``hosts``), None without hosts."""
    return topology.hosts[0] if topology.hosts else None


def hosts_from(raw: list[dict[str, Any]], problem: Callable[[list[str | int], str], None]) -> tuple[HostSpec, ...]:
    """A topology's ``hosts`` (schema-checked already); ``problem(path, message)`` for a name given twice."""
    hosts: list[HostSpec] = []
    for i, entry in enumerate(raw):
        if any(h.name == entry["name"] for h in hosts):
            problem(["hosts", i, "name"], f"host {entry['name']!r} is listed twice")
        hosts.append(HostSpec(entry["name"], entry["address"], int(entry.get("control_port", 7830))))
    return tuple(hosts)


def host_of(topology: Topology, agent: AgentSpec) -> str | None:
    """The host ``agent`` runs on: its ``host``, else the first host (None without hosts)."""
    first = lab_host(topology)
    return agent.host or (first.name if first else None)


def runs_here(topology: Topology, agent: AgentSpec, host: str | None) -> bool:
    """True when ``agent`` is started by the lab process of ``host`` (every agent when ``host`` is None),
    never for an ``external`` agent (the lab does not start it)."""
    return agent.external is None and (host is None or host_of(topology, agent) == host)


def check_host(topology: Topology, host: str | None) -> None:
    """`ConfigError` when ``--host`` names no host of the topology (or the topology has none)."""
    if host is None:
        return
    names = [h.name for h in topology.hosts]
    if not names:
        raise ConfigError(f"--host {host}: topology {topology.name} has no hosts")
    if host not in names:
        raise ConfigError(f"--host {host}: no such host in topology {topology.name}; hosts: {', '.join(names)}")


def serve_member(
    topology: Topology, host: str, run_dir: Path, secret_file: Path, state_file: Path, otlp: str | None = None
) -> int:
    """Run ``host``'s agents, joined to the lab on the first host, until SIGTERM/SIGINT (module docstring)."""
    from an_agent.lab.processes import AgentLaunch, start_agent, stop_agents

    first = lab_host(topology)
    assert first is not None and topology.source is not None
    if not secret_file.exists():
        raise ConfigError(f"{secret_file}: copy the lab's control secret from host {first.name} (mode 0600)")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    address = next(h.address for h in topology.hosts if h.name == host)
    processes = []
    try:
        for spec in topology.agents:
            if host_of(topology, spec) != host:
                continue
            launch = AgentLaunch(
                name=spec.name,
                topology_file=topology.source,
                control=(first.address, first.control_port),
                secret_file=secret_file,
                state_dir=run_dir / "agents" / spec.name,
                host=address,
                port=spec.port,
                a2a_port=spec.a2a_port,
                otlp=otlp,
            )
            processes.append(start_agent(launch))
        agents = [{**_serving(p, stop), "role": str(topology.agent(p.launch.name).role)} for p in processes]
        state: dict[str, Any] = {
            "pid": os.getpid(),
            "topology": str(topology.source),
            "name": topology.name,
            "host": host,
            "lab": f"{first.address}:{first.control_port}",
            "run_dir": str(run_dir.resolve()),
            "started": time.time(),
            "agents": agents,
        }
        tmp = state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2), encoding="utf-8")
        os.replace(tmp, state_file)
        print(f"host {host} of lab {topology.name} up: {len(agents)} agent(s)", file=sys.stderr, flush=True)
        while not stop.wait(0.2):
            pass
    finally:
        stop_agents(processes)
        state_file.unlink(missing_ok=True)
    return 0


def _serving(process: Any, stop: threading.Event, timeout: float = 180.0) -> dict[str, Any]:
    """Wait for an agent process's "serving NAME on HOST:PORT" line; its entry of the state file."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stop.is_set():
        match = _SERVING.search(process.log_path.read_text(encoding="utf-8", errors="replace"))
        if match:
            return {
                "name": process.launch.name,
                "host": match["host"],
                "port": int(match["port"]),
                "pid": process.pid,
            }
        if not process.alive():
            raise AnAgentError(f"agent {process.launch.name} exited before serving:\n{process.log_tail()}")
        time.sleep(0.1)
    raise AnAgentError(f"agent {process.launch.name} did not serve within {timeout:.0f} s:\n{process.log_tail()}")
