"""One process per agent: the lab's clock over the control channel, and whole labs as agent processes."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labsupport import TOPOLOGIES

from an_agent.agents.environment import Shutdown
from an_agent.lab.chaos import control_peers
from an_agent.lab.conductor import Conductor
from an_agent.lab.control import ControlClient, ControlServer, create_certificate, create_secret
from an_agent.lab.journal import Journal
from an_agent.lab.lockstep import LabKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.processes import AgentLaunch, agent_argv
from an_agent.lab.remote import AgentKernel, RemoteNetwork
from an_agent.lab.run import run_topology
from an_agent.lab.topology import load_topology

T0 = 1_000_000.0


class Member:
    """An `AgentKernel` joined to a lab over real 127.0.0.1 sockets, its clock thread running."""

    def __init__(self, address: tuple[str, int], secret: bytes, name: str) -> None:
        self.channel = ControlClient.connect(*address, secret)
        self.clock = ControlClient.connect(*address, secret)
        now = self.channel.call("hello", agent=name)["now"]
        self.kernel = AgentKernel(now, name, self.channel)
        self.network = RemoteNetwork(name, self.channel)
        self.ended_by_the_lab: bool | None = None  # what `follow` returned
        self.thread = threading.Thread(target=self._follow)
        self.thread.start()

    def _follow(self) -> None:
        self.ended_by_the_lab = self.kernel.follow(self.clock, self.network.deliver)

    def close(self) -> None:
        self.kernel.close()
        self.thread.join(10)
        self.channel.close()
        self.clock.close()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[LabKernel, SimNetwork, Journal, Any]]:
    topology = load_topology(TOPOLOGIES / "cross-domain-fault.yaml")
    kernel = LabKernel(T0, stall_timeout=30)
    network = SimNetwork(topology.network, topology.seed, kernel.now, kernel.call_at)
    journal = Journal(kernel.now)
    conductor = Conductor(kernel, network, journal, lambda n: None, lambda n: None, {"logins": {}})
    secret = create_secret(tmp_path / "secret")
    server = ControlServer(secret, conductor.handlers(), create_certificate(tmp_path, "127.0.0.1")).start()
    members: list[Member] = []

    def join(name: str) -> Member:
        member = Member(server.address, secret, name)
        members.append(member)
        return member

    join.server = server  # type: ignore[attr-defined]  # for a test that cuts a member's channels
    yield kernel, network, journal, join
    kernel.close()
    for member in members:
        member.close()
    server.stop()


def test_agents_in_other_processes_wake_in_lab_time_order(lab: Any) -> None:
    kernel, _, _, join = lab
    a, b = join("a"), join("b")
    seen: list[tuple[str, float, float]] = []
    lock = threading.Lock()

    def sleeper(member: Member, seconds: float) -> None:
        member.kernel.sleep(seconds)
        with lock:
            seen.append((member.kernel.name, member.kernel.now() - T0, kernel.now() - T0))

    a.kernel.spawn("a sleeps", lambda: sleeper(a, 300.0))
    b.kernel.spawn("b sleeps", lambda: sleeper(b, 5.0))
    b.kernel.spawn("b sleeps more", lambda: sleeper(b, 60.0))
    assert kernel.run() == "idle"
    assert seen == [("b", 5.0, 5.0), ("b", 60.0, 60.0), ("a", 300.0, 300.0)]
    assert kernel.now() == T0 + 300.0


def test_lab_time_waits_for_a_busy_agent_and_an_open_handoff(lab: Any) -> None:
    kernel, _, _, join = lab
    assigner, executor = join("assigner"), join("executor")
    key = ("executor", "task-1")
    observed: list[tuple[str, float]] = []
    handed = threading.Event()

    def assign() -> None:
        ended = assigner.kernel.expect(key)
        handed.set()
        ended.wait()
        observed.append(("assigner saw the end", assigner.kernel.now() - T0))

    def execute() -> None:
        handed.wait()
        time.sleep(0.3)  # real work in another process: lab time must stand still
        executor.kernel.sleep(10)
        observed.append(("executor done", executor.kernel.now() - T0))
        executor.kernel.arrive(key)

    def notify_later() -> None:  # the notification reaches the assigner a moment after the executor ends
        while not kernel.is_expected(key) or kernel.busy_labels().get("hand-off executor/task-1") is None:
            time.sleep(0.05)
        time.sleep(0.3)
        assigner.kernel.complete(key, "finished")

    kernel.call_at(T0 + 1000, "a later timer", lambda: observed.append(("timer", kernel.now() - T0)))
    assigner.kernel.spawn("assign", assign)
    executor.kernel.spawn("execute", execute)
    notifier = threading.Thread(target=notify_later)
    notifier.start()
    assert kernel.run() == "idle"
    notifier.join(10)
    assert observed == [("executor done", 10.0), ("assigner saw the end", 10.0), ("timer", 1000.0)]


def test_network_events_reach_an_agent_before_time_moves(lab: Any) -> None:
    kernel, network, _, join = lab
    ran = join("ran")
    alarms = ran.kernel.queue("alarms")
    ran.network.subscribe(alarms.put)
    seen: list[tuple[str, float]] = []

    def monitor() -> None:
        while True:
            event = alarms.get()
            ran.kernel.sleep(30)
            seen.append((event.alarm.element, ran.kernel.now() - T0))

    ran.kernel.spawn("monitor", monitor)
    fault = load_topology(TOPOLOGIES / "cross-domain-fault.yaml").events[0].fault
    assert fault is not None
    kernel.call_at(T0 + 300, "fault", lambda: network.inject(fault))
    assert kernel.run() == "idle"
    # the first alarm is queued at 300 and handled 30 s later; the monitor then takes one every 30 s
    assert seen[0] == (fault.target, 330.0)
    assert [t for _, t in seen] == [330.0 + 30 * i for i in range(len(seen))]
    assert ran.network.link(fault.target).up is False  # reads go to the lab's network
    with pytest.raises(ValueError):
        ran.network.set_cell_radio(network.site(seen[0][0]).cell_ids[0], 99.0, 0.0, "ran")


def test_an_agent_that_loses_its_lab_closes_nothing(lab: Any) -> None:
    """A lab lost (its channel cut: the lab died, or a soak's control drop) is not a lab that ended: the
    agent's activities are not unwound with `Shutdown`, so its tasks in progress are not ended ("the lab
    stopped") and their assigners told so; the process stops as if killed and the lab resumes them."""
    _, _, _, join = lab
    member = join("a")
    outcome: list[str] = []

    def waits_an_hour() -> None:
        try:
            member.kernel.sleep(3600)
            outcome.append("woken")
        except Shutdown:
            outcome.append("shut down")

    member.kernel.spawn("a: an hour's wait", waits_an_hour)
    assert join.server.drop(control_peers(os.getpid(), join.server.address[1])) == 2
    member.thread.join(10)
    assert not member.thread.is_alive() and member.ended_by_the_lab is False
    time.sleep(0.2)
    assert not member.kernel.closed and outcome == []
    member.kernel.close()  # as the test's clean-up: now the activity unwinds
    assert outcome == ["shut down"]


def test_agent_argv_names_the_lab_and_never_the_secret(tmp_path: Path) -> None:
    secret = tmp_path / "control.secret"
    value = create_secret(secret)
    argv = agent_argv(
        AgentLaunch("ran", TOPOLOGIES / "iov-complaint.yaml", ("127.0.0.1", 4000), secret, tmp_path, "127.0.0.1", 0)
    )
    assert argv[argv.index("--lab-control") + 1] == "127.0.0.1:4000"
    assert argv[argv.index("--lab-secret-file") + 1] == str(secret.resolve())
    assert value.hex() not in " ".join(argv)


def _comparable(result: dict[str, Any]) -> Any:
    """The result without wall time, order numbers (per process: they only break ties within an instant) and
    trace ids (random)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("order", "wall_seconds", "trace_id")}
        if isinstance(value, list):
            items = [strip(v) for v in value]
            return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
        return value

    return strip({k: result[k] for k in ("notes", "messages", "outcome", "kpis", "tasks", "baseline", "run")})


def test_agent_processes_run_the_same_lab_as_one_process(tmp_path: Path) -> None:
    path = TOPOLOGIES / "cross-domain-fault.yaml"
    pids: dict[str, int] = {}

    def on_phase(text: str) -> None:
        if text.startswith("playing"):
            pids.update(_lab_pids(tmp_path / "procs"))

    separate = run_topology(load_topology(path), tmp_path / "procs", on_phase=on_phase, stall_timeout=30).to_json()
    single = run_topology(load_topology(path), tmp_path / "single", in_process=True, stall_timeout=30).to_json()
    assert separate["outcome"]["closed_loop"]
    assert _comparable(separate) == _comparable(single)
    assert len(set(pids.values())) == len(separate["agents"]) and os.getpid() not in pids.values()
    for agent in separate["agents"]:
        log = tmp_path / "procs" / "agents" / agent["name"] / "agent.log"
        assert f"serving {agent['name']}" in log.read_text()
        assert log.stat().st_mode & 0o077 == 0


def _lab_pids(state_dir: Path) -> dict[str, int]:
    """The agents' processes, seen from /proc: those whose output (fd 1) is STATE/agents/NAME/agent.log
    (forked from the lab's template process, they all have its command line)."""
    agents = (state_dir / "agents").resolve()
    pids = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            output = Path(os.readlink(entry / "fd" / "1"))
        except OSError:
            continue
        if output.name == "agent.log" and output.parent.parent == agents:
            pids[output.parent.name] = int(entry.name)
    return pids


def test_a_task_end_parked_by_one_cut_is_not_released_by_the_next() -> None:
    """An isolation is one cut per pair: a hand-off parked by the first must not be released again by the
    others (found by lab soak --netns: the count went below zero and the lab's clock stopped for good)."""
    kernel = LabKernel(T0, stall_timeout=30)
    key = ("ip-fault", "service-fault.diagnose.LINK-C2")
    label = f"hand-off {key[0]}/{key[1]}"
    others = ["ran-fault", "complaint", "fme-copilot"]
    try:
        kernel.expect_for(key, "service-fault")
        kernel.arrive(key)
        assert kernel.busy_labels() == {label: 1}
        for other in ["service-fault", *others]:  # ip-fault isolated from everyone
            kernel.cut("ip-fault", other)
        assert kernel.busy_labels() == {}
        for other in others:  # healed pair by pair: the hand-off's own pair last
            kernel.heal("ip-fault", other)
            assert kernel.busy_labels() == {}
        kernel.heal("ip-fault", "service-fault")
        assert kernel.busy_labels() == {label: 1}  # in flight again, once
        kernel.complete(key, None)
        assert kernel.busy_labels() == {} and not kernel.is_expected(key)
        assert kernel.stats.errors == []
    finally:
        kernel.close()


def test_a_task_end_across_a_partition_is_parked_until_the_heal() -> None:
    kernel = LabKernel(T0, stall_timeout=30)
    key = ("ip-fault", "service-fault.diagnose.LINK-C2")
    try:
        kernel.expect_for(key, "service-fault")
        kernel.cut("ip-fault", "service-fault")
        kernel.arrive(key)  # the executor ended: its notification cannot reach the assigner
        assert kernel.busy_labels() == {}  # parked: time may move on to the heal
        kernel.heal("service-fault", "ip-fault")
        assert kernel.busy_labels() == {f"hand-off {key[0]}/{key[1]}": 1}  # in flight again
        kernel.complete(key, None)  # the notification got through
        assert kernel.busy_labels() == {} and not kernel.is_expected(key)
        # a hand-off counted before the cut is parked by it; the assigner's side then closes it uncounted
        kernel.expect_for(key, "service-fault")
        kernel.arrive(key)
        kernel.cut("service-fault", "ip-fault")
        assert kernel.busy_labels() == {}
        kernel.complete(key, None)
        assert kernel.busy_labels() == {} and not kernel.is_expected(key)
        # other pairs are not parked
        other = ("ran-fault", "service-fault.verify.LINK-C2")
        kernel.expect_for(other, "service-fault")
        kernel.arrive(other)
        assert kernel.busy_labels() == {f"hand-off {other[0]}/{other[1]}": 1}
        kernel.forget(other)
    finally:
        kernel.close()
