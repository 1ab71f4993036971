"""The lab's lock-step clock is cheap (issue 30): agents read it from a shared file, an instant is sent only to
agents with something due (or without the file), and network events only to agents that need them."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from labsupport import TOPOLOGIES

from an_agent.lab.conductor import Conductor
from an_agent.lab.journal import Journal
from an_agent.lab.lockstep import LabKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.sharedclock import CLOCK_FILE, PublishedClock, SharedClock
from an_agent.lab.spec import FaultSpec, FaultType
from an_agent.lab.topology import load_topology

T0 = 1_000_000.0


def test_an_agent_reads_the_time_the_lab_writes(tmp_path: Path) -> None:
    lab = PublishedClock(T0)
    hello = lab.publish(tmp_path)
    assert (tmp_path / CLOCK_FILE).stat().st_mode & 0o777 == 0o600
    agent = SharedClock.open(hello)
    assert agent is not None and agent.now() == T0
    lab.set(T0 + 90.5)
    assert agent.now() == T0 + 90.5
    agent.set(T0 + 90.5)  # what an agent does when told of the instant: nothing, the file has it
    assert lab.now() == agent.now() == T0 + 90.5


def test_another_file_at_the_path_is_not_the_labs_clock(tmp_path: Path) -> None:
    hello = PublishedClock(T0).publish(tmp_path)
    assert SharedClock.open({**hello, "token": "00" * 16}) is None  # e.g. another lab's on another host
    assert SharedClock.open({**hello, "path": str(tmp_path / "missing")}) is None
    assert SharedClock.open({**hello, "boot_id": "another machine"}) is None  # the same file over NFS
    assert SharedClock.open(None) is None  # a lab that publishes none: the agent keeps its own copy


def _follow(kernel: LabKernel, name: str, told: list[tuple[str, float]]) -> None:
    """An agent's clock thread: acknowledge each instant it is told of, with nothing scheduled after it."""
    ack: dict[str, Any] = {}
    seq = 1
    while True:
        reply = kernel.next_for(name, ack)
        if reply.get("closed"):
            return
        told.append((name, reply["advance"]))
        seq += 1
        ack = {"epoch": reply["epoch"], "seq": seq, "busy": False, "head": None}


def test_an_instant_is_sent_only_to_agents_with_something_due_or_their_own_clock(tmp_path: Path) -> None:
    kernel = LabKernel(T0, stall_timeout=10.0)
    kernel.publish_clock(tmp_path)
    for name in ("shared", "copy"):
        kernel.join(name)
    kernel.shares_clock("shared")
    kernel.report("shared", 1, False, T0 + 20)
    kernel.report("copy", 1, False, None)
    kernel.call_at(T0 + 10, "lab timer", lambda: None)
    told: list[tuple[str, float]] = []
    threads = [threading.Thread(target=_follow, args=(kernel, n, told)) for n in ("shared", "copy")]
    for thread in threads:
        thread.start()
    try:
        assert kernel.run() == "idle"
    finally:
        kernel.close()
        for thread in threads:
            thread.join(5)
    assert sorted(told) == [("copy", T0 + 10), ("copy", T0 + 20), ("shared", T0 + 20)]
    assert kernel.stats.instants == 2 and kernel.stats.told == 3


def test_network_events_go_only_to_agents_whose_listeners_need_them(tmp_path: Path) -> None:
    topology = load_topology(TOPOLOGIES / "cross-domain-fault.yaml")
    kernel = LabKernel(topology.start_time)
    network = SimNetwork(topology.network, topology.seed, kernel.now, kernel.call_at)
    conductor = Conductor(kernel, network, Journal(kernel.now), lambda n: None, lambda n: None, {})
    handlers = conductor.handlers()
    region = network.site(network.sites_behind("LINK-C2")[0]).region
    wants = {
        "all": None,
        "wireless-here": [{"domain": "wireless", "regions": [region]}],
        "transport": [{"domain": "ip_transport", "regions": None}],
        "elsewhere": [{"domain": None, "regions": ["nowhere"]}],
    }
    for name, interest in wants.items():
        handlers["hello"]({"agent": name})
        handlers["subscribe"]({"agent": name, "interest": interest})
    network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
    got = {name: kernel._remotes[name].events for name in wants}
    assert {e["alarm"]["domain"] for e in got["all"]} == {"wireless", "ip_transport"}
    assert got["wireless-here"] and all(
        e["alarm"]["domain"] == "wireless" and e["alarm"]["region"] == region for e in got["wireless-here"]
    )
    assert got["transport"] and all(e["alarm"]["domain"] == "ip_transport" for e in got["transport"])
    assert not got["elsewhere"]
    assert kernel.busy_labels()["network events to all"] == len(got["all"])  # in flight until acknowledged
    kernel.close()
