"""lab/netns.py on real namespaces: layout, reachability only through the lab bridge, partitions, teardown.

Every test that makes a lab network removes it (the `lab_network` fixture destroys whatever is left,
by label) and checks that nothing of it remains on the host.
"""

from __future__ import annotations

import errno
import ipaddress
import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from netnssupport import connect_in, needs_root

from an_agent.errors import ConfigError, LabNetworkError
from an_agent.lab import iproute, netns
from an_agent.lab.netns import LabNetwork

PORT = 8830
# A listener bound to the address in argv[1] that accepts (and closes) connections until killed.
SERVER = """
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen()
print("ready", flush=True)
while True:
    s.accept()[0].close()
"""
# An echo server (argv[1]:argv[2]) for one connection at a time.
ECHO = """
import socket, sys
s = socket.create_server((sys.argv[1], int(sys.argv[2])))
print("ready", flush=True)
while True:
    c = s.accept()[0]
    while data := c.recv(64):
        c.sendall(data)
"""
# Connects to argv[1]:argv[2], then per line of stdin (a timeout in seconds) sends 4 bytes and prints
# ``echo`` when 4 bytes come back within the timeout, else ``timeout``.
PINGER = """
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
print("connected", flush=True)
for line in sys.stdin:
    c.settimeout(float(line))
    c.sendall(b"ping")
    try:
        print("echo" if c.recv(4) else "closed", flush=True)
    except TimeoutError:
        print("timeout", flush=True)
"""


def connect_from(net: LabNetwork, agent: str, host: str, port: int = PORT) -> str:
    """``connected`` or ``failed ERRNO``: a TCP connect made inside ``agent``'s namespace."""
    return connect_in(net.prefix(agent), host, port)


def serve_in(net: LabNetwork, agent: str, script: str = SERVER, port: int = PORT) -> subprocess.Popen[str]:
    """A listener in ``agent``'s namespace on its lab address; the caller (or destroy) ends it."""
    process = subprocess.Popen(
        [*net.prefix(agent), sys.executable, "-c", script, net.address(agent), str(port)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


@pytest.fixture
def lab_network(tmp_path: Path) -> Iterator[Callable[..., LabNetwork]]:
    """``make(*agents)``: a lab network in its own run dir; everything left is destroyed at the end."""
    made: list[LabNetwork] = []

    def make(*agents: str, run_dir: Path | None = None) -> LabNetwork:
        net = netns.create(run_dir or tmp_path / f"run{len(made)}", list(agents))
        made.append(net)
        return net

    yield make
    for net in made:
        if net.lab_id in netns.leftover_labs():
            net.destroy(grace=1.0)
        assert net.lab_id not in netns.leftover_labs()


def ns_json(net: LabNetwork, agent: str, *args: str) -> list[dict[str, object]]:
    out = subprocess.run(["ip", "-j", "-n", net.slot(agent).netns, *args], capture_output=True, text=True, check=True)
    value: list[dict[str, object]] = json.loads(out.stdout or "[]")
    return value


@needs_root
def test_layout_addresses_hosts_and_state_file(lab_network: Callable[..., LabNetwork], tmp_path: Path) -> None:
    net = lab_network("ran-fault", "ip-fault", "cross-domain")
    other = lab_network("x")
    assert net.subnet in netns.SUBNETS and net.subnet.prefixlen == 24 and net.subnet.subnet_of(netns.SUPERNET)
    assert other.subnet != net.subnet  # two labs on one host never share a subnet
    addresses = [ipaddress.IPv4Address(net.address(a)) for a in net.slots]
    assert len(set(addresses)) == 3 and all(a in net.subnet for a in addresses)
    assert net.host_address == str(next(net.subnet.hosts()))
    assert all(s.netns.startswith(net.label) and s.link.startswith(net.label) for s in net.slots.values())
    assert net.bridge.startswith(net.label) and all(len(s.link) <= 15 for s in net.slots.values())

    for agent in net.slots:
        routes = ns_json(net, agent, "route", "show")
        assert [r["dst"] for r in routes] == [str(net.subnet)]  # the lab subnet, no default route
        links = {str(link["ifname"]): link for link in ns_json(net, agent, "link", "show")}
        assert set(links) == {"lo", netns.INNER_LINK} and "UP" in links["lo"]["flags"]  # type: ignore[operator]
        hosts = (netns.NETNS_ETC / net.slot(agent).netns / "hosts").read_text(encoding="utf-8")
        assert f"{net.address('ip-fault')}\tip-fault" in hosts and f"{net.host_address}\tcontrol.lab" in hosts

    state = tmp_path / "run0" / netns.STATE_FILE
    assert state.stat().st_mode & 0o777 == 0o600
    loaded = netns.load(tmp_path / "run0")
    assert loaded == net
    assert set(netns.leftover_labs()[net.lab_id]) >= {f"netns {s.netns}" for s in net.slots.values()}
    with pytest.raises(ConfigError, match="no agent 'nope'"):
        net.prefix("nope")


@needs_root
def test_agents_reach_each_other_only_through_the_lab_network(lab_network: Callable[..., LabNetwork]) -> None:
    net = lab_network("a", "b")
    host_listener = socket.create_server(("127.0.0.1", 0))  # a server on the host's loopback
    server = serve_in(net, "b")
    try:
        assert connect_from(net, "a", "b") == "connected"  # by name, through the hosts file
        assert connect_from(net, "a", net.address("b")) == "connected"
        assert connect_from(net, "a", "127.0.0.1") == f"failed {errno.ECONNREFUSED}"  # a's own loopback
        host_port = host_listener.getsockname()[1]
        assert connect_from(net, "a", "127.0.0.1", host_port) == f"failed {errno.ECONNREFUSED}"
        assert connect_from(net, "a", "192.0.2.1", 80) == f"failed {errno.ENETUNREACH}"  # no route out
        with socket.create_connection((net.address("b"), PORT), timeout=10):
            pass  # the host reaches agents through the bridge
    finally:
        host_listener.close()
        removed = net.destroy(grace=2.0)
    # the listener still ran in b's namespace: destroy stopped it, then removed everything
    assert server.wait(timeout=30) != 0 and server.pid in removed.processes
    assert sorted(removed.namespaces) == sorted(s.netns for s in net.slots.values())
    assert set(removed.links) == {net.bridge, *(s.link for s in net.slots.values())}
    assert net.lab_id not in netns.leftover_labs()
    assert not [n for n in os.listdir("/run/netns") if n.startswith(net.label)]
    assert not (net.run_dir / netns.STATE_FILE).exists()


@needs_root
def test_partition_drops_traffic_between_two_agents_until_healed(lab_network: Callable[..., LabNetwork]) -> None:
    net = lab_network("a", "b", "c")
    servers = [serve_in(net, "b"), serve_in(net, "a")]
    try:
        assert connect_from(net, "a", "b") == "connected"
        # an established connection: its traffic is dropped during the partition, and flows again after
        servers.append(serve_in(net, "b", ECHO, PORT + 1))
        pinger = subprocess.Popen(
            [*net.prefix("a"), sys.executable, "-c", PINGER, "b", str(PORT + 1)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        servers.append(pinger)
        assert pinger.stdin is not None and pinger.stdout is not None
        assert pinger.stdout.readline().strip() == "connected"

        def ping(timeout: float) -> str:
            assert pinger.stdin is not None and pinger.stdout is not None
            pinger.stdin.write(f"{timeout}\n")
            pinger.stdin.flush()
            return pinger.stdout.readline().strip()

        assert ping(30) == "echo"
        net.partition("a", "b")
        net.partition("b", "a")  # idempotent
        assert ping(1) == "timeout"
        assert net.partitions() == {frozenset({"a", "b"})}
        assert connect_from(net, "a", "b") == f"failed {errno.EHOSTUNREACH}"
        assert connect_from(net, "b", "a") == f"failed {errno.EHOSTUNREACH}"
        assert connect_from(net, "c", "b") == "connected"  # other pairs untouched
        net.heal("a", "b")
        net.heal("a", "b")  # healing twice is harmless
        assert net.partitions() == set()
        assert ping(60) == "echo"  # TCP retransmitted what the partition dropped
        assert connect_from(net, "a", "b") == "connected"
        assert connect_from(net, "b", "a") == "connected"
        with pytest.raises(ConfigError, match="itself"):
            net.partition("a", "a")
    finally:
        net.destroy(grace=2.0)
        for server in servers:
            server.wait(timeout=30)


CRASHING_LAB = """
import subprocess, sys, os
from pathlib import Path
from an_agent.lab import iproute, netns
net = netns.create(Path(sys.argv[1]), ["a", "b"])
# an agent that outlives its lab
child = subprocess.Popen(
    [*net.prefix("a"), "sleep", "600"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
)
print(net.lab_id, child.pid, flush=True)
os._exit(9)
"""


@needs_root
def test_cleanup_after_a_crash_finds_everything_by_label(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", CRASHING_LAB, str(run_dir)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 9, done.stderr
    lab_id, pid = done.stdout.split()
    try:
        assert lab_id in netns.leftover_labs() and Path(f"/proc/{pid}").exists()
        removed = netns.cleanup(run_dir, grace=2.0)
        assert removed is not None and int(pid) in removed.processes
        assert lab_id not in netns.leftover_labs() and not (run_dir / netns.STATE_FILE).exists()
        assert netns.cleanup(run_dir) is None  # nothing recorded any more
    finally:
        if lab_id in netns.leftover_labs():
            netns.destroy_lab(lab_id, grace=1.0)


@needs_root
def test_destroy_by_label_without_a_state_file(lab_network: Callable[..., LabNetwork]) -> None:
    net = lab_network("a", "b")
    (net.run_dir / netns.STATE_FILE).unlink()  # lost with the run dir, say
    removed = netns.destroy_lab(net.lab_id, grace=1.0)
    assert set(removed.namespaces) == {s.netns for s in net.slots.values()}
    assert sorted(removed.etc) == sorted(s.netns for s in net.slots.values())
    assert net.lab_id not in netns.leftover_labs()


def test_clear_errors_without_root_or_ip(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(iproute.os, "geteuid", lambda: 1000)
    with pytest.raises(LabNetworkError, match="needs root"):
        netns.create(tmp_path, ["a"])
    monkeypatch.setattr(iproute.os, "geteuid", lambda: 0)
    monkeypatch.setattr(iproute.shutil, "which", lambda *a, **k: None)
    with pytest.raises(LabNetworkError, match=r"'ip' command \(iproute2\)"):
        netns.create(tmp_path, ["a"])
    assert not (tmp_path / netns.STATE_FILE).exists()


@needs_root
@pytest.mark.parametrize(
    ("agents", "message"),
    [([], "at least one"), (["a", "a"], "unique"), (["A b"], "must match"), ([f"a{i}" for i in range(254)], "253")],
)
def test_bad_agent_lists_are_refused_before_anything_is_made(tmp_path: Path, agents: list[str], message: str) -> None:
    before = netns.leftover_labs()
    with pytest.raises(ConfigError, match=message):
        netns.create(tmp_path, agents)
    assert netns.leftover_labs() == before and not (tmp_path / netns.STATE_FILE).exists()
