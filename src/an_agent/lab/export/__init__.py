"""``an-agent lab export``: a topology as a lab for containerlab or Kubernetes.

Every agent becomes one node (containerlab) or one StatefulSet + Service (Kubernetes) running
``an-agent serve --topology /lab/topology.yaml --agent NAME`` in the image built by
``deploy/Dockerfile``. The topology each node mounts is a copy of the source in which every agent has
the ``address`` its peers reach it at (a management address, or its Service's DNS name), the NETCONF
port 8830, and ``peer_login_file: login``: the one login (``lab:<random password>``, written beside it,
0600) every agent accepts (``AN_AGENT_LOGIN_FILE``, read by the image's entry point) and uses on its
peers. As with ``serve --topology``, each agent plays its own copy of the simulated network, idle (no
scenario): the exported lab is for interoperability and exploration, not for ``lab run``.

A topology with a ``directory`` agent exports as it runs in a lab: that node serves the registry, and
every other node registers with it on start at the address its peers reach it at (``serve --topology``
advertises the agent's topology ``address``; registration is retried in the background until the
directory answers, since nodes start in any order), deregisters on stop, and finds its peers there
(``talks_to`` stays the policy). Agents with an ``a2a_port`` get that port on their Service too.
"""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from an_agent.errors import ConfigError
from an_agent.lab.spec import Topology

NETCONF_PORT = 8830
LOGIN_USER = "lab"
IMAGE = "an-agent:latest"
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class Export:
    """What an export wrote: the files, and one line per file for the operator."""

    files: list[Path] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)


def check_names(topology: Topology) -> None:
    """`ConfigError` unless every agent name is a DNS label (not ending with '-'): node, Service and host
    names are made of them."""
    bad = [a.name for a in topology.agents if not _DNS_LABEL.match(a.name)]
    if bad:
        raise ConfigError(f"agent names must be DNS labels (not ending with '-') to be exported: {', '.join(bad)}")
    check_outsiders(topology)


def check_outsiders(topology: Topology) -> None:
    """`ConfigError` for what an exported lab cannot carry: agents it does not start (``external``), programs
    and A2A agents of this machine (``command``, ``a2a_upstream``, ``services``). A ``behaviour`` plugin is
    exported: the image must have its package installed."""
    outside = [
        f"{a.name} ({key})"
        for a in topology.agents
        for key, given in (("external", a.external), ("command", a.command), ("a2a_upstream", a.a2a_upstream))
        if given
    ]
    outside += [f"service {s.name}" for s in topology.services]
    if outside:
        raise ConfigError(
            "an exported lab runs each agent from the an-agent image; it cannot carry what runs outside it: "
            + ", ".join(outside)
        )


def lab_topology_text(topology: Topology, addresses: dict[str, str]) -> str:
    """The source topology with each agent's ``address``, port 8830 and the shared peer login."""
    if topology.source is None:
        raise ConfigError("only a topology read from a file can be exported")
    raw: dict[str, Any] = yaml.safe_load(topology.source.read_text(encoding="utf-8"))
    for agent in raw["agents"]:
        agent["address"] = addresses[agent["name"]]
        agent["port"] = NETCONF_PORT
    raw["peer_login_file"] = "login"
    header = f"# Exported by an-agent lab export from {topology.source.name}: addresses and ports for the lab.\n"
    return header + yaml.safe_dump(raw, sort_keys=False, width=110)


def login_text() -> str:
    """``lab:<random password>``: the login of an exported lab."""
    return f"{LOGIN_USER}:{secrets.token_urlsafe(18)}\n"


def write_private(path: Path, text: str) -> Path:
    """Write ``text`` readable by the owner only (0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


def serve_args(agent: str) -> list[str]:
    """The arguments after ``an-agent`` that start one exported agent."""
    return [
        "serve",
        "--topology",
        "/lab/topology.yaml",
        "--agent",
        agent,
        "--host",
        "0.0.0.0",
        "--port",
        str(NETCONF_PORT),
        "--state-dir",
        "/var/lib/an-agent",
    ]


def talk_pairs(topology: Topology) -> list[tuple[str, str]]:
    """Every unordered pair of agents one of which may talk to the other, sorted."""
    pairs = {tuple(sorted((a, b))) for a, receivers in topology.talks_to.items() for b in receivers}
    return sorted((a, b) for a, b in pairs)
