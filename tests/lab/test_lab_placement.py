"""Placement: ``hosts:`` and ``agent.host``; ``lab up --host NAME`` starts only that host's agents."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from labsupport import variant

from an_agent.cli import main
from an_agent.errors import ConfigError
from an_agent.lab.placement import host_of
from an_agent.lab.topology import load_topology
from an_agent.nc.agent_client import AgentClient


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def two_hosts(tmp_path: Path) -> Path:
    """fault-energy-optimization over two hosts: h1 (127.0.0.1, the lab) and h2 (127.0.0.2: ip-fault, energy-saving)."""
    return variant(
        tmp_path,
        "fault-energy-optimization.yaml",
        ("agents:\n", f"hosts:\n  - {{name: h1, address: 127.0.0.1, control_port: {_free_port()}}}\n"
         "  - {name: h2, address: 127.0.0.2}\nagents:\n"),
        ("port: 18841", "port: 0"),
        ("port: 18843", "port: 0"),
        ("{name: ip-fault, role: ip-fault, port: 18842}", "{name: ip-fault, role: ip-fault, host: h2}"),
        ("{name: energy-saving, role: energy-saving, port: 18844}", "{name: energy-saving, role: energy-saving, host: h2}"),
    )  # fmt: skip


def test_hosts_give_agents_their_address_and_are_checked(tmp_path: Path) -> None:
    topology = load_topology(two_hosts(tmp_path))
    assert [h.name for h in topology.hosts] == ["h1", "h2"]
    assert topology.agent("ip-fault").address == "127.0.0.2"
    assert topology.agent("optimization").address is None
    assert host_of(topology, topology.agent("optimization")) == "h1"  # no host: the first one
    bad = tmp_path / "bad"
    bad.mkdir()
    path = variant(
        bad,
        "fault-energy-optimization.yaml",
        ("{name: ip-fault, role: ip-fault, port: 18842}", "{name: ip-fault, role: ip-fault, host: nowhere}"),
    )
    with pytest.raises(ConfigError, match="unknown host 'nowhere'"):
        load_topology(path)


def test_a_lab_over_two_hosts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = two_hosts(tmp_path)
    secret = tmp_path / "lab.secret"
    first, second = tmp_path / "h1", tmp_path / "h2"
    assert main(["lab", "up", str(path), "--host", "h3", "--run-dir", str(first)]) == 2
    assert "no such host" in capsys.readouterr().err
    assert (
        main(
            [
                "lab",
                "up",
                str(path),
                "--host",
                "h1",
                "--run-dir",
                str(first),
                "--lab-secret-file",
                str(secret),
                "--json",
            ]
        )
        == 0
    )
    lab = json.loads(capsys.readouterr().out)
    try:
        assert secret.stat().st_mode & 0o777 == 0o600
        assert {a["name"]: a["host"] for a in lab["agents"]} == {"ran-fault": "127.0.0.1", "optimization": "127.0.0.1"}
        assert (
            main(
                [
                    "lab",
                    "up",
                    str(path),
                    "--host",
                    "h2",
                    "--run-dir",
                    str(second),
                    "--lab-secret-file",
                    str(secret),
                    "--json",
                ]
            )
            == 0
        )
        member = json.loads(capsys.readouterr().out)
        try:
            assert {a["name"]: a["host"] for a in member["agents"]} == {
                "ip-fault": "127.0.0.2",
                "energy-saving": "127.0.0.2",
            }
            assert member["pid"] != lab["pid"] and {a["pid"] for a in member["agents"]}.isdisjoint(
                {lab["pid"], member["pid"]}
            )
            ip = next(a for a in member["agents"] if a["name"] == "ip-fault")
            with socket.socket() as probe:  # h2's agents listen on h2's address only
                assert probe.connect_ex(("127.0.0.1", ip["port"])) != 0
            # the scenario starts once h2 joined: ran-fault (h1) has ip-fault (h2) diagnose the outage
            with AgentClient.connect("127.0.0.2", ip["port"], username="admin", password="admin") as client:
                deadline = time.monotonic() + 120
                while not client.list_tasks() and time.monotonic() < deadline:
                    time.sleep(0.3)
                tasks = client.list_tasks()
            assert [t.task_id for t in tasks] == ["ran-fault.diagnose.SITE-06"] and tasks[0].send_from == "ran-fault"
        finally:
            assert main(["lab", "down", "--run-dir", str(second), "--json"]) == 0
            assert json.loads(capsys.readouterr().out)["stopped"]
    finally:
        assert main(["lab", "down", "--run-dir", str(first), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["stopped"]
    for agent in [*lab["agents"], *member["agents"]]:
        assert not Path(f"/proc/{agent['pid']}").exists()


@pytest.mark.slow
def test_an_a2a_link_across_two_hosts_is_https_verified_against_the_lab_bundle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import ssl
    import urllib.request

    a2a_port = _free_port()
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        ("agents:\n", f"hosts:\n  - {{name: h1, address: 127.0.0.1, control_port: {_free_port()}}}\n"
         "  - {name: h2, address: 127.0.0.2}\nagents:\n"),
        *((f"port: {p}", "port: 0") for p in (18831, 18832, 18834, 18835, 18836, 18850, 18851)),
        ("{name: ip-fault, role: ip-fault, port: 18833, a2a_port: 18843,",
         f"{{name: ip-fault, role: ip-fault, host: h2, a2a_port: {a2a_port},"),
    )  # fmt: skip
    secret = tmp_path / "lab.secret"
    first, second = tmp_path / "h1", tmp_path / "h2"
    up = ["lab", "up", str(path), "--lab-secret-file", str(secret), "--json"]
    assert main([*up, "--host", "h1", "--run-dir", str(first)]) == 0
    lab = json.loads(capsys.readouterr().out)
    try:
        assert main([*up, "--host", "h2", "--run-dir", str(second)]) == 0
        member = json.loads(capsys.readouterr().out)
        try:
            # h1 made ip-fault's certificate (for h2's address) and sent it with the bundle over the control channel
            bundle = first / "a2a-trust.pem"
            made = first / "remote-a2a" / "ip-fault" / "a2a-cert.pem"
            ip_dir = second / "agents" / "ip-fault"
            assert (ip_dir / "a2a-cert.pem").read_bytes() == made.read_bytes()
            assert (ip_dir / "a2a-trust.pem").read_bytes() == bundle.read_bytes()
            for private in ("a2a-key.pem", "a2a-cert.pem", "a2a-trust.pem"):
                assert (ip_dir / private).stat().st_mode & 0o777 == 0o600
            context = ssl.create_default_context(cafile=str(bundle))  # host name and chain checked
            card_url = f"https://127.0.0.2:{a2a_port}/.well-known/agent-card.json"
            with urllib.request.urlopen(card_url, context=context) as reply:
                assert json.loads(reply.read())["name"] == "ip-fault"
            # the scenario's diagnosis request goes from service-fault (h1) to ip-fault (h2) over that HTTPS link
            ip = next(a for a in member["agents"] if a["name"] == "ip-fault")
            with AgentClient.connect("127.0.0.2", ip["port"], username="admin", password="admin") as client:
                deadline = time.monotonic() + 180
                while time.monotonic() < deadline:
                    sent = {t.task_id: t for t in client.list_tasks() if t.send_from == "service-fault"}
                    if sent:
                        break
                    time.sleep(0.5)
            assert "service-fault.diagnose.LINK-C2" in sent, sent
        finally:
            assert main(["lab", "down", "--run-dir", str(second), "--json"]) == 0
            capsys.readouterr()
    finally:
        assert main(["lab", "down", "--run-dir", str(first), "--json"]) == 0
        capsys.readouterr()
    assert lab["agents"] and member["agents"]
