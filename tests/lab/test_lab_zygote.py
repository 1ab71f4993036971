"""Agent processes forked from the lab's template process (issue 30), and bring-up bounded by progress."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from labsupport import TOPOLOGIES

from an_agent.errors import LabStartError
from an_agent.lab.bringup import PROGRESS_FILE, progress_marks, read_progress, wait_serving
from an_agent.lab.conductor import Conductor, LabKernel
from an_agent.lab.control import ControlClient, ControlServer, create_certificate, create_secret
from an_agent.lab.journal import Journal
from an_agent.lab.network import SimNetwork
from an_agent.lab.runner import Lab
from an_agent.lab.topology import load_topology
from an_agent.lab.zygote import Zygote
from an_agent.nc.agent_client import AgentClient


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def zygote(tmp_path: Path) -> Iterator[Zygote]:
    template = Zygote.start(None, tmp_path / "zygote.log")
    yield template
    template.close()


def test_a_forked_child_runs_the_command_line_with_its_own_log_state_dir_and_environment(
    zygote: Zygote, tmp_path: Path
) -> None:
    state = tmp_path / "agent"
    child = zygote.spawn(["--version"], state, state / "agent.log", {"PATH": os.environ["PATH"]}, title="one")
    assert child.wait(60) == 0
    assert _ppid(zygote.pid) == os.getpid()  # the template is ours; the child was its
    assert "an-agent" in (state / "agent.log").read_text()
    assert (state / "agent.log").stat().st_mode & 0o777 == 0o600
    assert state.stat().st_mode & 0o777 == 0o700
    # a bad command line: argparse's exit code 2, reported by the template, log appended to
    again = zygote.spawn(["no-such-command"], state, state / "agent.log", {}, append_log=True)
    assert again.wait(60) == 2
    text = (state / "agent.log").read_text()
    assert "an-agent" in text and "no-such-command" in text


def test_sigkill_of_one_child_ends_only_it(zygote: Zygote, tmp_path: Path) -> None:
    # `an-agent serve` (the quick-tour agent) on a free port: it runs until signalled
    children = []
    for name in ("a", "b"):
        state = tmp_path / name
        args = ["serve", "--port", "0", "--state-dir", str(state)]
        children.append(zygote.spawn(args, state, state / "agent.log", dict(os.environ), title=name))
    first, second = children
    _wait_for(lambda: "serving" in (tmp_path / "b" / "agent.log").read_text(), 60)
    assert _ppid(first.pid) == zygote.pid and first.poll() is None
    with pytest.raises(Exception) as waited:
        first.wait(0.2)
    assert "TimeoutExpired" in type(waited.value).__name__
    first.send_signal(signal.SIGKILL)
    assert first.wait(30) == -signal.SIGKILL
    assert second.poll() is None and zygote.alive()
    second.send_signal(signal.SIGTERM)
    assert second.wait(30) == 0
    assert "an-agent: stopped" in (tmp_path / "b" / "agent.log").read_text()


def _wait_for(condition: object, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():  # type: ignore[operator]
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise AssertionError("condition not met")


@pytest.mark.slow
def test_a_restart_after_the_template_died_forks_from_a_new_one(tmp_path: Path) -> None:
    lab = Lab(load_topology(TOPOLOGIES / "fault-energy-optimization.yaml"), tmp_path)  # no A2A: no model to load
    try:
        lab.start()
        fleet = lab.fleet
        pids = fleet.pids()  # type: ignore[union-attr]
        template = _ppid(pids["ip-fault"])
        assert all(_ppid(pid) == template for pid in pids.values())  # one template for the lab
        assert _ppid(template) == os.getpid()
        os.kill(template, signal.SIGKILL)
        old, new = fleet.kill_and_restart("ip-fault")  # type: ignore[union-attr]
        assert old == pids["ip-fault"] and new != old
        assert _ppid(new) not in (template, os.getpid()) and _ppid(_ppid(new)) == os.getpid()
        host, port = lab.address_of("ip-fault")  # type: ignore[misc]
        with AgentClient.connect(host, port, username="admin", password="admin") as client:
            assert client.list_tasks() == []
        # the others lived on without their template (a process's end is not its children's)
        others = [pid for name, pid in fleet.pids().items() if name != "ip-fault"]  # type: ignore[union-attr]
        assert others and all(_state(pid) in "SR" for pid in others)
    finally:
        assert lab.stop() == []
    processes, ports = lab.leftovers()
    assert processes == [] and ports == []


def test_an_idle_agent_process_imports_nothing_its_template_did_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A module an agent imports after the fork is paid by every agent of the lab (its import writes to
    # the template's objects, copying their pages): 2-4 MiB each in issue 30 round 3. Python's
    # -X importtime (inherited by the forked children) names every module imported, in each agent's log.
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    lab = Lab(load_topology(TOPOLOGIES / "fault-energy-optimization.yaml"), tmp_path)  # /metrics on loopback
    try:
        lab.start()
        assert "import time:" in (tmp_path / "zygote.log").read_text()  # the flag reached the template
        for name in lab.fleet.pids():  # type: ignore[union-attr]
            path = tmp_path / "agents" / name / "agent.log"
            _wait_for(lambda n=name, p=path: f"serving {n}" in p.read_text(), 60)  # printed once the lab has it
            log = path.read_text()
            imported = [line.rsplit("|", 1)[-1].strip() for line in log.splitlines() if "import time:" in line]
            assert imported == [], f"{name} imported after the fork: {imported}"
    finally:
        assert lab.stop() == []


# ---- bring-up bounded by progress ----------------------------------------------------------------
@pytest.fixture
def conductor() -> Conductor:
    topology = load_topology(TOPOLOGIES / "cross-domain-fault.yaml")
    kernel = LabKernel(0.0)
    network = SimNetwork(topology.network, topology.seed, kernel.now, kernel.call_at)
    return Conductor(kernel, network, Journal(kernel.now), lambda n: None, lambda n: None, {"logins": {}})


def test_bring_up_waits_while_agents_arrive_and_names_what_the_missing_ones_wait_for(
    conductor: Conductor, tmp_path: Path
) -> None:
    handlers = conductor.handlers()
    now = time.monotonic()
    started = {"slow": now - 7.0, "slower": now - 7.0, "joined": now - 5.0, "early": now - 5.0}
    handlers["hello"]({"agent": "joined"})
    handlers["hello"]({"agent": "early"})
    handlers["ready"]({"agent": "early", "port": 8830})

    def arrive_late() -> None:  # a step every 0.8 s: 4.8 s in all, longer than the stall, never one stall long
        for name in ("joined", "slow", "slower"):
            time.sleep(0.8)
            handlers["hello"]({"agent": name})
            time.sleep(0.8)
            handlers["ready"]({"agent": name, "port": 8831})

    arriving = threading.Thread(target=arrive_late)
    arriving.start()
    begun = time.monotonic()
    ready = wait_serving(conductor, started, lambda: None, tmp_path / PROGRESS_FILE, stall=3.0)
    waited = time.monotonic() - begun
    arriving.join()
    assert sorted(ready) == ["early", "joined", "slow", "slower"] and ready["slow"]["port"] == 8831
    assert waited > 3.0
    assert read_progress(tmp_path)[1] == "4 of 4 agents serve"

    # nobody moves: it gives up after the stall and says who waits for what, and since when
    handlers["hello"]({"agent": "stuck-joined"})
    started = {"stuck-joined": time.monotonic(), "never": time.monotonic() - 30.0, "early": now}
    with pytest.raises(LabStartError) as failed:
        wait_serving(conductor, started, lambda: None, tmp_path / PROGRESS_FILE, stall=0.3)
    message = str(failed.value)
    assert message.startswith("lab bring-up made no progress for 0.3 s: 1 of 3 agents serve; waiting for never to")
    assert "never to join the lab's control channel (its process started) for 30 s" in message
    assert "stuck-joined to serve NETCONF (it joined the lab) for 0 s" in message
    assert (tmp_path / PROGRESS_FILE).stat().st_mode & 0o777 == 0o600
    assert "waiting for never to join" in (read_progress(tmp_path)[1] or "")

    # an agent process that exits: at once, with what the others wait for
    with pytest.raises(LabStartError) as dead:
        wait_serving(conductor, {"never": time.monotonic()}, lambda: "agent never exited with code 3", stall=60)
    assert str(dead.value).startswith("agent never exited with code 3\n0 of 1 agents serve; waiting for never")


def test_progress_marks_move_with_the_lab(tmp_path: Path) -> None:
    before = progress_marks(tmp_path)
    (tmp_path / "agents" / "a").mkdir(parents=True)
    (tmp_path / "agents" / "a" / "agent.db").write_bytes(b"")
    assert progress_marks(tmp_path) != before
    marks = progress_marks(tmp_path)
    (tmp_path / "lab.log").write_text("started\n")
    assert progress_marks(tmp_path) != marks


def test_many_agents_connecting_at_once_all_get_through(tmp_path: Path) -> None:
    # 2 connections per agent at once: more than the kernel's default accept queue of 128
    secret = create_secret(tmp_path / "secret")
    server = ControlServer(secret, {"ping": lambda p: "pong"}, create_certificate(tmp_path, "127.0.0.1")).start()
    results: list[object] = []
    lock = threading.Lock()

    def one() -> None:
        try:
            with ControlClient.connect(*server.address, secret, timeout=30.0) as client:
                answer: object = client.call("ping")
        except Exception as exc:  # reported below, with what failed
            answer = exc
        with lock:
            results.append(answer)

    try:
        threads = [threading.Thread(target=one) for _ in range(300)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        server.stop()
    assert results == ["pong"] * 300, [r for r in results if r != "pong"][:3]


def test_a_remembered_topology_is_served_until_its_file_changes(tmp_path: Path) -> None:
    from an_agent.lab.topology_memo import _remembered, remember

    path = tmp_path / "lab.yaml"
    path.write_text((TOPOLOGIES / "fault-energy-optimization.yaml").read_text())
    loaded = load_topology(path)
    remember(path, loaded)
    try:
        assert load_topology(path) is loaded and load_topology(tmp_path / "." / "lab.yaml") is loaded
        path.write_text(path.read_text().replace("name: fault-energy-optimization", "name: changed", 1))
        assert load_topology(path).name == "changed"
    finally:
        _remembered.clear()
