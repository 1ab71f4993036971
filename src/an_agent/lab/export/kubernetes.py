"""``lab export --format kubernetes``: manifests that pass ``kubernetes-validate --strict``.

One ``<name>.yaml`` with, labelled ``app.kubernetes.io/part-of: <name>``: a ConfigMap with the topology
copy (peers addressed by Service DNS names), a Secret with the login, per agent a StatefulSet (one
replica, its state on a volume claim, so a restarted pod resumes) and a ClusterIP Service on 8830, and
NetworkPolicies: all ingress to the lab's pods denied, except to each agent from the agents that may
talk to it (``talks_to``; its replies and notifications go back on the session they opened).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from an_agent.lab.export import (
    IMAGE,
    NETCONF_PORT,
    Export,
    check_names,
    lab_topology_text,
    login_text,
    serve_args,
)
from an_agent.lab.spec import AgentSpec, Topology

PART_OF = "app.kubernetes.io/part-of"
AGENT = "an-agent.lab/agent"
RUN_AS = 10001
"""The unprivileged user of deploy/Dockerfile."""


def documents(topology: Topology, login: str, image: str = IMAGE) -> list[dict[str, Any]]:
    """Every manifest of the lab, in apply order."""
    check_names(topology)
    lab = topology.name
    part_of = {PART_OF: lab}
    addresses = {a.name: a.name for a in topology.agents}  # the Service's DNS name, in the same namespace
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{lab}-topology", "labels": part_of},
            "data": {"topology.yaml": lab_topology_text(topology, addresses)},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": f"{lab}-login", "labels": part_of},
            "type": "Opaque",
            "stringData": {"login": login},
        },
        {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {"name": f"{lab}-deny-ingress", "labels": part_of},
            "spec": {"podSelector": {"matchLabels": part_of}, "policyTypes": ["Ingress"]},
        },
    ]
    for agent in topology.agents:
        labels = {**part_of, AGENT: agent.name}
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": agent.name, "labels": labels},
                "spec": {
                    "selector": labels,
                    "ports": [
                        {"name": name, "port": port, "targetPort": port, "protocol": "TCP"}
                        for name, port in _ports(agent)
                    ],
                },
            }
        )
        docs.append(_stateful_set(lab, agent, labels, image))
        if agent.name == topology.directory_agent:  # every agent registers there and asks it for peers
            senders = sorted(a.name for a in topology.agents if a.name != agent.name)
        else:
            senders = sorted(s for s, receivers in topology.talks_to.items() if agent.name in receivers)
        if senders:
            docs.append(
                {
                    "apiVersion": "networking.k8s.io/v1",
                    "kind": "NetworkPolicy",
                    "metadata": {"name": f"{agent.name}-from-peers", "labels": labels},
                    "spec": {
                        "podSelector": {"matchLabels": labels},
                        "policyTypes": ["Ingress"],
                        "ingress": [
                            {
                                "from": [{"podSelector": {"matchLabels": {**part_of, AGENT: p}}} for p in senders],
                                "ports": [{"protocol": "TCP", "port": port} for _, port in _ports(agent)],
                            }
                        ],
                    },
                }
            )
    return docs


def _ports(agent: AgentSpec) -> list[tuple[str, int]]:
    """The agent's ports by name: NETCONF, and its A2A face when it has one (the topology's ``a2a_port``)."""
    return [("netconf", NETCONF_PORT), *([("a2a", agent.a2a_port)] if agent.a2a_port else [])]


def _stateful_set(lab: str, agent: AgentSpec, labels: dict[str, str], image: str) -> dict[str, Any]:
    name = agent.name
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "serviceName": name,
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": {"runAsNonRoot": True, "runAsUser": RUN_AS, "fsGroup": RUN_AS},
                    "containers": [
                        {
                            "name": "agent",
                            "image": image,
                            "args": serve_args(name),
                            "env": [{"name": "AN_AGENT_LOGIN_FILE", "value": "/lab/login"}],
                            "ports": [
                                {"name": port_name, "containerPort": port, "protocol": "TCP"}
                                for port_name, port in _ports(agent)
                            ],
                            "readinessProbe": {"tcpSocket": {"port": NETCONF_PORT}, "periodSeconds": 5},
                            "volumeMounts": [
                                {"name": "lab", "mountPath": "/lab", "readOnly": True},
                                {"name": "state", "mountPath": "/var/lib/an-agent"},
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "lab",
                            "projected": {
                                "defaultMode": 0o440,
                                "sources": [
                                    {"configMap": {"name": f"{lab}-topology"}},
                                    {"secret": {"name": f"{lab}-login"}},
                                ],
                            },
                        }
                    ],
                },
            },
            "volumeClaimTemplates": [
                {
                    "metadata": {"name": "state"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
                }
            ],
        },
    }


def export(topology: Topology, output: Path, image: str = IMAGE) -> Export:
    """Write ``<name>.yaml`` (every manifest, ``---`` separated) into ``output``."""
    docs = documents(topology, login_text(), image)
    output.mkdir(parents=True, exist_ok=True)
    path = output / f"{topology.name}.yaml"
    text = yaml.safe_dump_all(docs, sort_keys=False, width=110)
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)  # it holds the login
    kinds: dict[str, int] = {}
    for doc in docs:
        kinds[doc["kind"]] = kinds.get(doc["kind"], 0) + 1
    return Export(
        [path],
        [
            f"{path}: " + ", ".join(f"{n} {k}" for k, n in kinds.items()),
            f"deploy: docker build -t {image} -f deploy/Dockerfile . (push it where the cluster pulls from), "
            f"then kubectl apply -n NAMESPACE -f {path}",
        ],
    )
