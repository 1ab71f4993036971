"""``lab export``: containerlab files valid against containerlab's schema, Kubernetes manifests valid
with ``kubernetes-validate --strict``, and the topology copy every node mounts."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import regex
import yaml
from labsupport import SHIPPED, TOPOLOGIES, variant

from an_agent.cli import main
from an_agent.errors import ConfigError
from an_agent.lab.agent import load_agent, peer_login
from an_agent.lab.export import containerlab, talk_pairs
from an_agent.lab.generate import generate
from an_agent.lab.kernel import SimKernel
from an_agent.lab.topology import load_topology

CLAB_SCHEMA = json.loads((Path(__file__).parent / "data" / "clab.schema.json").read_text(encoding="utf-8"))


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    # containerlab's schema uses Unicode property classes (\p{L}) that Python's re lacks; `regex` has them
    if isinstance(instance, str) and not regex.search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


ClabValidator = jsonschema.validators.extend(jsonschema.Draft7Validator, {"pattern": _pattern})


def _export(path: Path, fmt: str, out: Path, capsys: pytest.CaptureFixture[str]) -> list[Path]:
    assert main(["lab", "export", str(path), "--format", fmt, "--output", str(out), "--json"]) == 0
    return [Path(p) for p in json.loads(capsys.readouterr().out)["files"]]


def _generated(tmp_path: Path) -> Path:
    path = tmp_path / "generated.yaml"
    path.write_text(generate(200, 4, 1, None, None, 0), encoding="utf-8")
    return path


def _outside(path: Path) -> bool:
    """A topology with agents or programs that run outside the an-agent image (bring your own agent)."""
    topology = load_topology(path)
    return bool(topology.services) or any(a.external or a.command or a.a2a_upstream for a in topology.agents)


def _sources(tmp_path: Path) -> list[Path]:
    """Every shipped topology that can be exported (one of them with a directory agent), and a generated one."""
    shipped = [TOPOLOGIES / n for n in SHIPPED if not _outside(TOPOLOGIES / n)]
    assert any(load_topology(p).directory_agent is not None for p in shipped)
    return [*shipped, _generated(tmp_path)]


def test_containerlab_export_validates_and_mirrors_the_topology(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for source in _sources(tmp_path):
        topology = load_topology(source)
        out = tmp_path / "clab" / topology.name
        files = _export(source, "containerlab", out, capsys)
        clab_file = next(p for p in files if p.name.endswith(".clab.yml"))
        doc = yaml.safe_load(clab_file.read_text(encoding="utf-8"))
        errors = [e.message for e in ClabValidator(CLAB_SCHEMA).iter_errors(doc)]
        assert not errors, errors[:5]
        nodes = doc["topology"]["nodes"]
        assert sorted(nodes) == sorted(a.name for a in topology.agents)
        for name, node in nodes.items():
            assert node["kind"] == "linux" and node["image"] == "an-agent:latest"
            assert node["cmd"].startswith(f"serve --topology /lab/topology.yaml --agent {name} ")
            assert "topology.yaml:/lab/topology.yaml:ro" in node["binds"]
        # one link per pair of agents that may talk, each end a distinct interface of its node
        linked = sorted(tuple(sorted(e.split(":")[0] for e in link["endpoints"])) for link in doc["topology"]["links"])
        assert linked == talk_pairs(topology)
        ends = [e for link in doc["topology"]["links"] for e in link["endpoints"]]
        assert len(ends) == len(set(ends))
        # the mounted copy: every agent at its management address on port 8830, the login beside it
        copy = load_topology(out / "topology.yaml")
        assert {a.name: (a.address, a.port) for a in copy.agents} == {
            n: (node["mgmt-ipv4"], 8830) for n, node in nodes.items()
        }
        user, password = peer_login(copy)
        assert user == "lab" and len(password) >= 20
        assert stat.S_IMODE((out / "login").stat().st_mode) == 0o600


def test_kubernetes_export_validates_strictly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for source in _sources(tmp_path):
        topology = load_topology(source)
        (manifest,) = _export(source, "kubernetes", tmp_path / "k8s" / topology.name, capsys)
        assert stat.S_IMODE(manifest.stat().st_mode) == 0o600  # it holds the login
        checked = subprocess.run(
            [str(Path(sys.executable).with_name("kubernetes-validate")), "--strict", "--quiet", str(manifest)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        docs = list(yaml.safe_load_all(manifest.read_text(encoding="utf-8")))
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for doc in docs:
            by_kind.setdefault(doc["kind"], []).append(doc)
        names = sorted(a.name for a in topology.agents)
        assert sorted(d["metadata"]["name"] for d in by_kind["StatefulSet"]) == names
        assert sorted(d["metadata"]["name"] for d in by_kind["Service"]) == names
        # peers are addressed by Service DNS names in the ConfigMap's topology
        (config,) = by_kind["ConfigMap"]
        copy_path = tmp_path / "copy.yaml"
        copy_path.write_text(config["data"]["topology.yaml"], encoding="utf-8")
        (tmp_path / "login").write_text(by_kind["Secret"][0]["stringData"]["login"], encoding="utf-8")
        copy = load_topology(copy_path)
        assert {a.name: a.address for a in copy.agents} == {n: n for n in names}
        # every port an agent serves on (NETCONF, and A2A when it has a face) is on its Service and container
        ports = {a.name: {8830, *([a.a2a_port] if a.a2a_port else [])} for a in topology.agents}
        for service in by_kind["Service"]:
            assert {p["port"] for p in service["spec"]["ports"]} == ports[service["metadata"]["name"]]
        for stateful in by_kind["StatefulSet"]:
            (container,) = stateful["spec"]["template"]["spec"]["containers"]
            assert {p["containerPort"] for p in container["ports"]} == ports[stateful["metadata"]["name"]]
        # NetworkPolicies: everything denied, then each agent reachable from exactly the agents that talk to it,
        # and the directory (if any) from every agent: all register there and find their peers there
        policies = {d["metadata"]["name"]: d["spec"] for d in by_kind["NetworkPolicy"]}
        deny = policies.pop(f"{topology.name}-deny-ingress")
        assert deny["policyTypes"] == ["Ingress"] and "ingress" not in deny
        allowed = set()
        for spec in policies.values():
            receiver = spec["podSelector"]["matchLabels"]["an-agent.lab/agent"]
            for rule in spec["ingress"]:
                assert {p["port"] for p in rule["ports"]} == ports[receiver]
                allowed |= {(p["podSelector"]["matchLabels"]["an-agent.lab/agent"], receiver) for p in rule["from"]}
        expected = {(s, r) for s, rs in topology.talks_to.items() for r in rs}
        if topology.directory_agent is not None:
            expected |= {
                (a.name, topology.directory_agent) for a in topology.agents if a.name != topology.directory_agent
            }
        assert allowed == expected


def test_an_exported_agent_reaches_its_peers_at_their_lab_addresses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = TOPOLOGIES / "fault-energy-optimization.yaml"
    _export(source, "containerlab", tmp_path, capsys)
    _, behaviour = load_agent(tmp_path / "topology.yaml", "optimization")
    try:
        saver = behaviour.peers.address_of("energy-saving")
        node = yaml.safe_load((tmp_path / "fault-energy-optimization.clab.yml").read_text())["topology"]["nodes"]
        assert saver == (node["energy-saving"]["mgmt-ipv4"], 8830)
        assert behaviour.peers.credentials == peer_login(load_topology(tmp_path / "topology.yaml"))
    finally:
        assert isinstance(behaviour.env.scheduler, SimKernel)
        behaviour.env.scheduler.close()


def test_export_refuses_names_that_are_not_dns_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (TOPOLOGIES / "fault-energy-optimization.yaml").read_text(encoding="utf-8")
    path = tmp_path / "t.yaml"
    for old, new in (
        ("{name: ip-fault, role", "{name: ip-fault-, role"),
        ("optimization, ip-fault]", "optimization, ip-fault-]"),
    ):
        assert old in text
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    assert main(["lab", "export", str(path), "--format", "kubernetes", "--output", str(tmp_path / "o")]) == 2
    assert "DNS labels" in capsys.readouterr().err


def _wait_port(port: int, timeout: float = 60.0) -> None:
    import socket
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"nothing listens on {port}")


@pytest.mark.slow
def test_exported_agents_in_their_own_processes_talk_with_the_lab_login(tmp_path: Path) -> None:
    """What every exported node runs (serve --topology COPY --agent NAME with the lab login), as processes here."""
    import socket

    from an_agent.agents import payloads
    from an_agent.errors import AuthError
    from an_agent.model import CommuType, Task, TaskStatus, build_prompt
    from an_agent.nc.agent_client import AgentClient

    ports = {}
    for name in ("optimization", "energy-saving"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports[name] = s.getsockname()[1]
    source = yaml.safe_load((TOPOLOGIES / "fault-energy-optimization.yaml").read_text(encoding="utf-8"))
    for agent in source["agents"]:
        agent["address"] = "127.0.0.1"  # as the export sets management addresses / Service names
        agent["port"] = ports.get(agent["name"], 1)
    source["peer_login_file"] = "login"
    (tmp_path / "topology.yaml").write_text(yaml.safe_dump(source), encoding="utf-8")
    login = "lab:" + "s3cret-" * 3
    (tmp_path / "login").write_text(login + "\n", encoding="utf-8")
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "an_agent.cli",
                "serve",
                "--topology",
                str(tmp_path / "topology.yaml"),
                "--agent",
                name,
                "--port",
                str(port),
                "--state-dir",
                str(tmp_path / name),
                "--user",
                login,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, port in ports.items()
    ]
    try:
        for port in ports.values():
            _wait_port(port)
        user, password = login.split(":", 1)
        with pytest.raises(AuthError):  # admin/admin is not accepted: the lab login is
            AgentClient.connect("127.0.0.1", ports["optimization"], username="admin", password="admin").close()
        with AgentClient.connect("127.0.0.1", ports["optimization"], username=user, password=password) as client:
            value = payloads.envelope(
                "coverage_compensation_v1",
                {
                    "target_cell_ids": ["CELL-0601"],
                    "tx_power_delta_db": 1,
                    "antenna_tilt_delta_deg": -1,
                    "duration_minutes": 30,
                    "compensation_reason": "neighbour_outage",
                },
            )
            param = payloads.data_param("c1.payload", value, "compensation")
            events = client.watch("c1")
            client.assign_task(
                Task(
                    "c1",
                    send_from="operator",
                    commu_type=CommuType.TASK_ASSIGN,
                    content=build_prompt("CELL-0601", "Compensate the coverage of SITE-06"),
                    msg_data=[param.id],
                ),
                [param],
            )
            assert [e.status for e in events][-1] == TaskStatus.FINISHED
            result = json.loads(client.get_task("c1").result.data or "{}")  # type: ignore[union-attr]
        # the optimization process reached the energy-saving process at its address, with the lab login
        assert result["energy_saving_suspended"], result
        with AgentClient.connect("127.0.0.1", ports["energy-saving"], username=user, password=password) as client:
            tasks = client.list_tasks()
        # the suspension, and (simulated time runs freely under serve) the resume when the compensation expired
        assert tasks[0].task_id == "optimization.suspend.c1"
        assert {(t.send_from, t.status) for t in tasks} == {("optimization", TaskStatus.FINISHED)}
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(30)


def test_the_image_entry_point_adds_the_login_from_its_file(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "an-agent"
    stub.write_text('#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n', encoding="utf-8")
    stub.chmod(0o755)
    (tmp_path / "login").write_text("lab:pa ss\n", encoding="utf-8")
    entry = Path(__file__).resolve().parents[2] / "deploy" / "entrypoint.sh"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "AN_AGENT_LOGIN_FILE": str(tmp_path / "login")}

    def args(*given: str, login: bool = True) -> list[str]:
        done = subprocess.run(
            ["sh", str(entry), *given],
            env=env if login else {"PATH": env["PATH"]},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.splitlines()

    assert args("serve", "--agent", "x") == ["serve", "--user", "lab:pa ss", "--agent", "x"]
    assert args("profile", "--json") == ["profile", "--json"]  # only serve gets the login
    assert args("serve", "--agent", "x", login=False) == ["serve", "--agent", "x"]


@pytest.mark.slow
def test_exported_agents_register_with_the_exported_directory_in_any_start_order(tmp_path: Path) -> None:
    """What the nodes of an exported topology with a directory run, as processes here: an agent started before
    its directory registers once the directory answers, at the address the topology gives it (its advertised
    host, in its A2A card too), and deregisters when it stops."""
    import socket
    import time
    import urllib.parse
    import urllib.request

    from an_agent.model.directory import AgentQuery
    from an_agent.nc.directory_client import DirectoryLogin

    names = ("directory", "complaint-south", "tickets-south")
    ports = {}
    for name in (*names, "a2a"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports[name] = s.getsockname()[1]
    source = yaml.safe_load((TOPOLOGIES / "discovery-input.yaml").read_text(encoding="utf-8"))
    for agent in source["agents"]:
        agent["address"] = "localhost"  # a name, as an exported lab's Service names: what peers are told
        agent["port"] = ports.get(agent["name"], 1)
        if agent["name"] == "tickets-south":
            agent["a2a_port"] = ports["a2a"]
    source["peer_login_file"] = "login"
    (tmp_path / "topology.yaml").write_text(yaml.safe_dump(source), encoding="utf-8")
    user, password = "lab", "s3cret-" * 3
    (tmp_path / "login").write_text(f"{user}:{password}\n", encoding="utf-8")

    def serve(name: str) -> subprocess.Popen[str]:
        arguments = ["serve", "--topology", str(tmp_path / "topology.yaml"), "--agent", name]
        arguments += ["--port", str(ports[name]), "--state-dir", str(tmp_path / name), "--user", f"{user}:{password}"]
        return subprocess.Popen(
            [sys.executable, "-m", "an_agent.cli", *arguments, "-v"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )

    directory = DirectoryLogin("127.0.0.1", ports["directory"], user, password)

    def registered(expected: set[str], timeout: float = 90.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            with directory.connect() as client:
                found = {e.name: e for e in client.find(AgentQuery())}
            if set(found) == expected or time.monotonic() > deadline:
                return found
            time.sleep(0.5)

    processes = {"complaint-south": serve("complaint-south")}  # before its directory: nothing to register with
    try:
        _wait_port(ports["complaint-south"])
        processes["directory"] = serve("directory")
        _wait_port(ports["directory"])
        processes["tickets-south"] = serve("tickets-south")
        _wait_port(ports["tickets-south"])
        found = registered({"complaint-south", "tickets-south"})
        assert set(found) == {"complaint-south", "tickets-south"}, found
        for name, entry in found.items():
            assert (entry.address, entry.port) == ("localhost", ports[name])
        assert found["tickets-south"].a2a_url == f"http://localhost:{ports['a2a']}"
        assert "complaint_ticket_v1" in found["tickets-south"].schemas  # what it can be found by
        card = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{ports['a2a']}/.well-known/agent-card.json").read())
        urls = [urllib.parse.urlsplit(i["url"]) for i in card["supportedInterfaces"]]
        assert {(u.hostname, u.port) for u in urls} == {
            ("localhost", ports["a2a"]),
            ("localhost", ports["tickets-south"]),
        }
        processes.pop("tickets-south").terminate()
        assert set(registered({"complaint-south"})) == {"complaint-south"}  # deregistered on its way out
    finally:
        for process in processes.values():
            process.terminate()
        for process in processes.values():
            process.wait(30)


def test_export_refuses_what_runs_outside_the_image(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        ("{name: ip-fault, role: ip-fault, port: 18833, a2a_port: 18843, regions: [metro]}",
         '{name: ip-fault, role: ip-fault, regions: [metro], external: {netconf: "127.0.0.1:18933"}}'),
        ("{agent: ip-fault, transport: a2a}", "ip-fault"),
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"cannot carry what runs outside it: ip-fault \(external\)"):
        containerlab.export(load_topology(path), tmp_path / "out")
