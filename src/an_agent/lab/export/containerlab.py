"""``lab export --format containerlab``: ``<name>.clab.yml``, validated by containerlab's JSON Schema.

A ``linux`` node per agent on a management network in 198.18.0.0/24 (the benchmarking range; the
gateway takes .1, agents .10 on), each agent reached by its peers at its management address; a veth
link with a /31 of 198.19.0.0/16 per pair of agents that may talk (``talks_to``), and the topology copy
and login bound into every node under /lab.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import yaml

from an_agent.errors import ConfigError
from an_agent.lab.export import (
    IMAGE,
    Export,
    check_names,
    lab_topology_text,
    login_text,
    serve_args,
    talk_pairs,
    write_private,
)
from an_agent.lab.spec import Topology

MGMT_SUBNET = ipaddress.IPv4Network("198.18.0.0/24")
LINK_SUBNET = ipaddress.IPv4Network("198.19.0.0/16")
FIRST_HOST = 10


def document(topology: Topology, image: str = IMAGE) -> tuple[dict[str, Any], dict[str, str]]:
    """The ``.clab.yml`` document and each agent's management address."""
    check_names(topology)
    hosts = list(MGMT_SUBNET.hosts())
    if len(topology.agents) > len(hosts) - FIRST_HOST:
        raise ConfigError(f"{len(topology.agents)} agents do not fit in the management subnet {MGMT_SUBNET}")
    addresses = {a.name: str(hosts[FIRST_HOST - 1 + i]) for i, a in enumerate(topology.agents)}
    nodes: dict[str, Any] = {}
    for agent in topology.agents:
        nodes[agent.name] = {
            "kind": "linux",
            "image": image,
            "mgmt-ipv4": addresses[agent.name],
            "cmd": " ".join(serve_args(agent.name)),
            "env": {"AN_AGENT_LOGIN_FILE": "/lab/login"},
            "user": "0",  # root in the node: the bound login file is 0600, owned by whoever exported
            "binds": ["topology.yaml:/lab/topology.yaml:ro", "login:/lab/login:ro"],
            "labels": {"an-agent.lab/role": str(agent.role), "an-agent.lab/topology": topology.name},
        }
    interfaces: dict[str, int] = {}
    links = []
    pairs = list(LINK_SUBNET.subnets(new_prefix=31))
    for index, (a, b) in enumerate(talk_pairs(topology)):
        ends = []
        for node in (a, b):
            interfaces[node] = interfaces.get(node, 0) + 1
            ends.append(f"{node}:eth{interfaces[node]}")
        first, second = pairs[index]
        links.append({"endpoints": ends, "ipv4": [f"{first}/31", f"{second}/31"]})
    topo: dict[str, Any] = {"nodes": nodes}
    if links:
        topo["links"] = links
    doc = {
        "name": topology.name,
        "prefix": "",
        "mgmt": {"network": f"{topology.name}-mgmt", "ipv4-subnet": str(MGMT_SUBNET)},
        "topology": topo,
    }
    return doc, addresses


def export(topology: Topology, output: Path, image: str = IMAGE) -> Export:
    """Write ``<name>.clab.yml``, ``topology.yaml`` and ``login`` (0600) into ``output``."""
    doc, addresses = document(topology, image)
    output.mkdir(parents=True, exist_ok=True)
    clab = output / f"{topology.name}.clab.yml"
    clab.write_text(yaml.safe_dump(doc, sort_keys=False, width=110), encoding="utf-8")
    topo = output / "topology.yaml"
    topo.write_text(lab_topology_text(topology, addresses), encoding="utf-8")
    login = write_private(output / "login", login_text())
    return Export(
        [clab, topo, login],
        [
            f"{clab}: {len(topology.agents)} nodes, {len(doc['topology'].get('links', []))} links",
            f"{topo}: the topology each node mounts (agents at their management addresses)",
            f"{login}: the lab's login (user:password, 0600)",
            f"deploy: docker build -t {image} -f deploy/Dockerfile . && sudo containerlab deploy -t {clab}",
        ],
    )
