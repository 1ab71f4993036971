"""Whole labs in network namespaces (``--netns``): up, reachability only through the lab network, run to the
same outcome as on loopback, partitions, and teardown that leaves nothing (also after a crash)."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from labsupport import TOPOLOGIES, comparable, run
from netnssupport import connect_in, needs_root

from an_agent.cli import main
from an_agent.lab import netns
from an_agent.nc.agent_client import AgentClient

pytestmark = [needs_root, pytest.mark.slow]

TOPOLOGY = TOPOLOGIES / "cross-domain-fault.yaml"


def listening(pid: int) -> set[tuple[str, int]]:
    """The TCP addresses listened on in ``pid``'s network namespace (its /proc/PID/net/tcp and tcp6)."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A":  # LISTEN
                continue
            address, port = fields[1].split(":")
            raw = bytes.fromhex(address)
            # the kernel prints each 32-bit word in host (little-endian) order
            words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
            found.add((str(ipaddress.ip_address(words)), int(port, 16)))
    return found


def same_netns(pid: int, name: str) -> bool:
    mine, theirs = os.stat(f"/proc/{pid}/ns/net"), os.stat(netns.RUN_NETNS / name)
    return (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def lab_up(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["lab", "up", str(TOPOLOGY), "--netns", "--idle", "--run-dir", str(run_dir), "--json"]) == 0
    state: dict[str, Any] = json.loads(capsys.readouterr().out)
    return state


def assert_all_gone(state: dict[str, Any]) -> None:
    lab_id = state["network"]["lab_id"]
    assert lab_id not in netns.leftover_labs()
    deadline = time.monotonic() + 30
    while any(alive(a["pid"]) for a in state["agents"]) and time.monotonic() < deadline:
        time.sleep(0.1)  # reaped by init once their parent is gone
    assert not [a["name"] for a in state["agents"] if alive(a["pid"])]
    assert not (Path(state["run_dir"]) / netns.STATE_FILE).exists()


def test_up_in_namespaces_reach_only_through_the_lab_network_and_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    state = lab_up(run_dir, capsys)
    try:
        network = state["network"]
        subnet = ipaddress.ip_network(network["subnet"])
        agents = {a["name"]: a for a in state["agents"]}
        assert list(agents) == [
            "service-fault",
            "ran-fault",
            "ip-fault",
            "complaint",
            "fme-copilot",
            "network-copilot",
        ]
        for agent in agents.values():
            assert set(agent) >= {"name", "role", "host", "port", "netns", "pid"}
            assert ipaddress.ip_address(agent["host"]) in subnet and agent["netns"].startswith(network["label"])
            assert same_netns(agent["pid"], agent["netns"])  # the agent process runs in its namespace
            # it listens on its lab address only: not on 0.0.0.0 / ::, not on a loopback
            assert {host for host, _ in listening(agent["pid"])} == {agent["host"]}
        ran, ip = agents["ran-fault"], agents["ip-fault"]
        ip_ns = ["ip", "netns", "exec", ip["netns"]]
        assert connect_in(ip_ns, "ran-fault", ran["port"]) == "connected"  # by name, over the lab bridge
        assert connect_in(ip_ns, "127.0.0.1", ran["port"]).startswith("failed")  # not through a loopback
        assert connect_in(ip_ns, "192.0.2.1", 80).startswith("failed")  # no route out of the lab
        # the element managers are in the lab network too: an agent in its namespace reaches them by address
        devices = {d["name"]: d for d in state["devices"]}
        assert {d["domain"] for d in devices.values()} == {"transport", "ran"}
        transport = devices["transport-em"]
        assert ipaddress.ip_address(transport["host"]) in subnet
        assert connect_in(ip_ns, transport["host"], transport["port"]) == "connected"
        # people on the host reach the agents through the bridge
        with AgentClient.connect(ran["host"], ran["port"], username="admin", password="admin") as client:
            assert client.profile().name == "ran-fault"
    finally:
        assert main(["lab", "down", "--run-dir", str(run_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["was_up"] and report["stopped"], report
    assert report["network"] is None  # the lab removed its network itself when it stopped
    assert_all_gone(state)


def test_down_after_a_crash_removes_the_network_and_the_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    state = lab_up(run_dir, capsys)
    try:
        os.kill(state["pid"], signal.SIGKILL)  # the lab process dies; its agents and namespaces stay
        deadline = time.monotonic() + 30
        while alive(state["pid"]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert state["network"]["lab_id"] in netns.leftover_labs()
    finally:
        assert main(["lab", "down", "--run-dir", str(run_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert not report["was_up"] and "no longer running" in report["message"]
    removed = report["network"]
    assert removed["lab_id"] == state["network"]["lab_id"]
    assert sorted(removed["namespaces"]) == sorted(a["netns"] for a in state["agents"])
    assert_all_gone(state)


def test_run_in_namespaces_has_the_same_outcome_as_on_loopback(tmp_path: Path) -> None:
    before = set(netns.leftover_labs())
    in_namespaces = run(TOPOLOGY, tmp_path / "netns", netns=True)
    assert set(netns.leftover_labs()) == before and not (tmp_path / "netns" / netns.STATE_FILE).exists()
    on_loopback = run(TOPOLOGY, tmp_path / "loopback")
    assert in_namespaces["outcome"]["closed_loop"] and not in_namespaces["run"]["activity_errors"]
    assert comparable(in_namespaces) == comparable(on_loopback)
    assert all(a["address"].startswith("198.18.") for a in in_namespaces["agents"])


def test_a_partition_across_a_live_exchange_is_ridden_out_and_the_loop_closes(tmp_path: Path) -> None:
    from an_agent.lab.partition import Partition

    # service-fault hands the repair ticket to fme-copilot at 750 s (without chaos): inside the cut
    result = run(
        TOPOLOGY, tmp_path / "run", netns=True, partitions=[Partition.parse("service-fault,fme-copilot@700+600")]
    )
    chaos = [(n["t"], n["kind"], n["text"]) for n in result["notes"] if n["agent"] == "chaos"]
    assert chaos == [
        (700.0, "partition", "traffic between service-fault and fme-copilot dropped for 600 s"),
        (1300.0, "partition_healed", "service-fault and fme-copilot reach each other again"),
    ]
    [event] = result["chaos"]
    assert event["kind"] == "partition" and event["agents"] == ["service-fault", "fme-copilot"]
    assert (event["at"], event["duration"]) == (700.0, 600.0)
    # the cut was real and ridden out: the ticket found no route, was tried again with backoff on the
    # simulated clock, and went through after the heal; the loop closed, later by what the cut cost
    assert result["outcome"]["closed_loop"] and not result["run"]["activity_errors"]
    log = (tmp_path / "run" / "agents" / "service-fault" / "agent.log").read_text()
    assert "service-fault -> fme-copilot" in log and "No route to host" in log and "trying again in" in log
    sent = [m for m in result["messages"] if (m["from"], m["to"]) == ("service-fault", "fme-copilot")]
    assert sent and all(m["t"] >= 1300.0 for m in sent)  # nothing went through the cut
    assert [m["task_id"] for m in sent if m["operation"] == "edit-config"] == ["service-fault.ticket.LINK-C2"]
    cost = event["time_to_restore_s"]
    assert cost["with"] > cost["without"] and 0 < cost["cost_s"] <= 600.0 + 60.0  # the cut and one backoff step


def test_a_partition_across_a_task_in_flight_delivers_its_end_after_the_heal(tmp_path: Path) -> None:
    from an_agent.lab.partition import Partition

    # ip-fault diagnoses service-fault's request (over A2A) from 450 s to 750 s: the end comes inside the cut
    result = run(TOPOLOGY, tmp_path / "run", netns=True, partitions=[Partition.parse("service-fault,ip-fault@600+300")])
    assert result["outcome"]["closed_loop"] and not result["run"]["activity_errors"]
    ended = [
        m for m in result["messages"] if m["task_id"] == "service-fault.diagnose.LINK-C2" and m["status"] == "finished"
    ]
    # the executor's end (750 s) waited in its send queue while the lab's time moved on to the heal (900 s)
    assert [(m["operation"], m["t"]) for m in ended][:2] == [("TaskStatusUpdateEvent", 750.0), ("GetTask", 900.0)]
    [event] = result["chaos"]
    assert event["time_to_restore_s"]["cost_s"] == 150.0
