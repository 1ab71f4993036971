"""Clients we did not write: netconf-console2 (PyPI) and yuma123 yangcli (Debian).

Each discovers the agent's modules through <get-schema>, reads the profile,
and (netconf-console2) creates a task, negotiates it, and receives its status
notifications. The profile it read is validated with yanglint against the
modules it downloaded — libyang's own CLI, not our code.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from an_agent.lab.tour import tour_agent
from an_agent.server import AgentServer, ServerConfig

pytestmark = pytest.mark.interop

IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"
NC = "urn:ietf:params:xml:ns:netconf:base:1.0"
NCC = str(Path(sys.executable).parent / "netconf-console2")
RUN: dict[str, Any] = {"capture_output": True, "text": True, "timeout": 60, "check": False}


@pytest.fixture
def served(tmp_path: Path) -> Iterator[AgentServer]:
    # The quick-tour agent: what a newcomer sees first.
    tour = tour_agent(schemas="validate")
    config = ServerConfig(
        tmp_path / "state", port=0, profile=tour.profile, behaviour=tour.behaviour, schemas="validate"
    )
    with AgentServer(config) as server:
        yield server


def ncc(server: AgentServer, *args: str, timeout: float = 30) -> str:
    cmd = [NCC, "--host", "127.0.0.1", "--port", str(server.port), "-u", "admin", "-p", "admin", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_netconf_console2_discovers_reads_validates_assigns_negotiates_and_watches(
    served: AgentServer, tmp_path: Path
) -> None:
    hello = ncc(served, "--hello")
    assert "irtf-agent?module=irtf-agent&amp;revision=2025-06-01" in hello or "module=irtf-agent" in hello

    # Discover: every module listed in /netconf-state/schemas, fetched with <get-schema>.
    schemas = etree.fromstring(
        ncc(
            served,
            "--ns",
            "m=urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring",
            "--get",
            "-x",
            "/m:netconf-state/m:schemas",
        ).encode()
    )
    names = [e.text for e in schemas.iter("{urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring}identifier")]
    assert "irtf-agent" in names and "agent-message" in names
    downloaded = tmp_path / "modules"
    downloaded.mkdir()
    for name in names:
        text = etree.fromstring(ncc(served, "--get-schema", str(name)).encode()).text or ""
        assert text.lstrip().startswith("module ")
        (downloaded / f"{name}.yang").write_text(text)

    # Read the profile, and validate it with yanglint against the downloaded modules.
    profile = etree.fromstring(ncc(served, "--ns", f"a={IRTF}", "--get", "-x", "/a:agent").encode())
    agent = profile.find(f"{{{IRTF}}}agent")
    assert agent is not None and agent.findtext(f"{{{IRTF}}}name")
    data_file = tmp_path / "profile.xml"
    data_file.write_bytes(etree.tostring(agent))
    lint = subprocess.run(
        # Every downloaded module: /agent carries the an-agent-schema augmentation too. --present: the
        # document holds /agent alone, so other modules' mandatory nodes (/nacm's counters) are not asked.
        [
            "yanglint",
            "--present",
            "-p",
            str(downloaded),
            "-t",
            "data",
            *sorted(str(p) for p in downloaded.glob("*.yang")),
            str(data_file),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stderr

    # Subscribe (a second netconf-console2 process), then assign a task, then negotiate.
    watcher = subprocess.Popen(
        [
            NCC,
            "--host",
            "127.0.0.1",
            "--port",
            str(served.port),
            "-u",
            "admin",
            "-p",
            "admin",
            "--create-subscription",
            "--sleep",
            "4",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while served.operations.bus.subscriber_count() == 0:
            assert time.monotonic() < deadline, "netconf-console2 never subscribed"
            time.sleep(0.05)
        task_file = tmp_path / "task.xml"
        task_file.write_text(
            f'<tasks xmlns="{IRTF}"><task><task-id>ncc-1</task-id><task-sendFrom>netconf-console2</task-sendFrom>'
            "<content>## target object\nSITE-02\n## task description\nDiagnose the radio side of SITE-02</content></task></tasks>"
        )
        assert "<ok" in ncc(served, "--edit-config", str(task_file))
        negotiate = tmp_path / "negotiate.xml"
        negotiate.write_text(
            f'<task-negotiate xmlns="{IRTF}"><task-id>ncc-2</task-id>'
            "<content>## target object\nSITE-02\n## task description\ndiagnose the fault</content>"
            "<type>FEASIBILITY</type></task-negotiate>"
        )
        answer = etree.fromstring(ncc(served, "--rpc", str(negotiate)).encode())
        assert answer.findtext(f".//{{{IRTF}}}feasible") in ("true", "false")
        out, err = watcher.communicate(timeout=20)
    finally:
        if watcher.poll() is None:
            watcher.kill()
    statuses = [
        etree.fromstring(line.encode()).findtext(f".//{{{IRTF}}}task-status")
        for line in out.splitlines()
        if "<notification" in line
    ]
    assert statuses == ["created", "processing", "finished"], out + err


def test_yangcli_autoloads_the_modules_and_reads_the_profile(served: AgentServer) -> None:
    yangcli = shutil.which("yangcli")
    assert yangcli, "yangcli (Debian package yangcli) is not installed: run 'make setup'"
    done = subprocess.run(
        [
            yangcli,
            "--server=127.0.0.1",
            f"--ncport={served.port}",
            "--user=admin",
            "--password=admin",
            "--batch-mode",
            "--run-command=xget /agent",
        ],
        capture_output=True,
        timeout=60,
        check=False,
    )
    out = done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")
    assert "Auto-load for module" not in out, out  # every module came through <get-schema> and compiled
    assert "irtf-agent@2025-06-01" in out
    assert f"name {served.profile.name}" in out, out
    assert "skill-name" in out


def test_netconf_console2_reads_an_element_managers_alarms_and_restarts_a_link(tmp_path: Path) -> None:
    """A person with netconf-console2 on a lab's transport element manager (docs/element-managers.md)."""
    from an_agent.access.users import agent_users
    from an_agent.lab.agent import lab_host_key
    from an_agent.lab.devices import DeviceDomain, DeviceSpec
    from an_agent.lab.em.manager import ElementManager
    from an_agent.lab.kernel import SimKernel
    from an_agent.lab.network import SimNetwork
    from an_agent.lab.spec import FaultSpec, FaultType
    from an_agent.lab.topology import load_topology

    topology = load_topology(Path(__file__).resolve().parents[2] / "topologies" / "cross-domain-fault.yaml")
    kernel = SimKernel(topology.start_time)
    network = SimNetwork(topology.network, topology.seed, kernel.now, kernel.call_at)
    lab_host_key(tmp_path / "key")
    em = ElementManager(
        DeviceSpec("transport-em", DeviceDomain.TRANSPORT),
        network,
        kernel.call_at,
        kernel,
        state_dir=tmp_path / "em",
        host="127.0.0.1",
        port=0,
        host_key=tmp_path / "key",
        logins={"admin": "admin"},
        user_db=agent_users([])[0],
    ).start()
    try:
        network.inject(FaultSpec(FaultType.ROUTER_PORT_FAULT, "LINK-A2"))
        al = "urn:ietf:params:xml:ns:yang:ietf-alarms"
        base = [NCC, "--host", "127.0.0.1", "--port", str(em.port), "-u", "admin", "-p", "admin"]
        got = subprocess.run([*base, "--ns", f"al={al}", "--get", "-x", "/al:alarms/al:alarm-list"], **RUN)
        assert got.returncode == 0, got.stderr
        alarm = etree.fromstring(got.stdout.encode()).find(f".//{{{al}}}alarm")
        assert alarm is not None and alarm.findtext(f"{{{al}}}resource", "").endswith("[nt:link-id='LINK-A2']")
        rpc = tmp_path / "restart.xml"
        rpc.write_text(
            '<restart-element xmlns="urn:an-agent:params:xml:ns:yang:an-agent-network">'
            "<element-id>LINK-A2</element-id></restart-element>"
        )
        done = subprocess.run([*base, "--rpc", str(rpc)], **RUN)
        assert done.returncode == 0, done.stderr
        cleared = etree.fromstring(done.stdout.encode()).findtext("{*}fault-cleared")
        assert cleared == "true"
        assert network.link("LINK-A2").up
    finally:
        em.stop()
        kernel.close()
