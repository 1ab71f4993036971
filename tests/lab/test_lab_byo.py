"""Outsiders' agents in a lab: (a) the pip-installed example plugin plays the IP/transport fault role."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from labsupport import TOPOLOGIES, run, variant

from an_agent.errors import ConfigError
from an_agent.lab.runner import Lab
from an_agent.lab.topology import load_topology
from an_agent.model.directory import AgentQuery
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.directory_client import DirectoryLogin

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "byo"))
from byosupport import profile_file


@contextmanager
def serve_at(state: Path, port: int, *argv: str) -> Iterator[None]:
    """``an-agent serve ARGV`` on ``port``, as someone outside the lab would start it."""
    state.mkdir(parents=True)
    log = (state / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "an_agent.cli", "serve", "--port", str(port), "--state-dir", str(state), *argv],
        stdout=log, stderr=log, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while "serving" not in (state / "serve.log").read_text():
            assert proc.poll() is None and time.monotonic() < deadline, (state / "serve.log").read_text()
            time.sleep(0.1)
        yield
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
        log.close()


def _closed(result: dict[str, Any]) -> None:
    failed = [c for c in result["outcome"]["checks"] if not c["ok"]]
    assert not failed, failed
    assert result["outcome"]["closed_loop"]
    fault = result["outcome"]["faults"][0]
    assert fault["root_cause_found"] and fault["root_cause"]["diagnosed_by"] == "ip-fault"


@pytest.mark.slow  # a whole scenario, a process per agent
def test_example_plugin_plays_the_ip_fault_role(state_dir: Path) -> None:
    """(a): examples/acme-transport, installed with pip (make setup), named by its entry point."""
    pytest.importorskip("acme_transport", reason="make setup installs examples/acme-transport")
    result = run(TOPOLOGIES / "cross-domain-fault-acme.yaml", state_dir)
    _closed(result)
    notes = [n for n in result["notes"] if n["agent"] == "ip-fault" and n["kind"] == "diagnosis"]
    assert notes and all(n["text"].startswith("ACME: LINK-C2") for n in notes)


def test_bad_plugin_path_refuses_the_lab_naming_the_agent(tmp_path: Path) -> None:
    path = variant(
        tmp_path,
        "cross-domain-fault-acme.yaml",
        ("behaviour: acme-transport", 'behaviour: "acme_missing.agent:Agent"'),
    )
    with pytest.raises(ConfigError) as caught:
        load_topology(path)
    message = str(caught.value)
    assert "agents[2].behaviour: agent ip-fault: behaviour 'acme_missing.agent:Agent': no module" in message


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


IP_FAULT = "  - {name: ip-fault, role: ip-fault, port: 18833, a2a_port: 18843, regions: [metro]}"
TO_IP = "service-fault: [{agent: ip-fault, transport: a2a}, ran-fault, fme-copilot]"
HEALTHY = textwrap.dedent(
    """
    import json, sys
    request = json.loads(sys.stdin.readline())
    if request.get("negotiate"):
        print(json.dumps({"feasible": True, "reason": "I look at backhauls"}))
    else:
        sites = (request.get("payload") or {}).get("affected_site_ids") or []
        print(json.dumps({"result": {"root_cause": f"backhaul of {len(sites)} site(s): no alarm seen here",
                                     "fault_type": "none", "element": None, "explained_site_ids": []},
                          "summary": "nothing found"}))
    """
)


def test_an_external_agent_that_does_not_answer_stops_the_lab(tmp_path: Path, state_dir: Path) -> None:
    port = _free_port()
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        (
            IP_FAULT,
            f'  - {{name: ip-fault, role: ip-fault, regions: [metro], external: {{netconf: "127.0.0.1:{port}"}}}}',
        ),
        (TO_IP, "service-fault: [ip-fault, ran-fault, fme-copilot]"),
    )
    with pytest.raises(ConfigError) as caught:
        run(path, state_dir)
    assert f"external agent ip-fault does not answer: NETCONF 127.0.0.1:{port} (admin)" in str(caught.value)


@pytest.mark.slow  # a whole scenario played to its deadline (about 30 s)
def test_an_external_agent_is_reached_by_name(tmp_path: Path, state_dir: Path) -> None:
    """The lab does not start it; our agents log in with its credentials, negotiate, assign, get the end."""
    program = tmp_path / "healthy.py"
    program.write_text(HEALTHY, encoding="utf-8")
    profile = profile_file(tmp_path, "outside-ip")
    (tmp_path / "login").write_text("ipx:s3cret\n", encoding="utf-8")
    port = _free_port()
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        (IP_FAULT, "  - {name: ip-fault, role: ip-fault, regions: [metro], "
                   f'external: {{netconf: "127.0.0.1:{port}", credentials: login}}}}'),
        (TO_IP, "service-fault: [ip-fault, ran-fault, fme-copilot]"),
    )  # fmt: skip
    argv = ["--behaviour-command", f"{sys.executable} {program}", "--profile", str(profile), "--user", "ipx:s3cret"]
    with serve_at(tmp_path / "outside", port, *argv):
        result = run(path, state_dir)
    to_ip = [m for m in result["messages"] if m["from"] == "service-fault" and m["to"] == "ip-fault"]
    kinds = {m["commuType"] for m in to_ip if m["ok"]}
    assert {"CapabilityRequest", "FeasibilityNegotiate", "taskAssign"} <= kinds, [
        (m["commuType"], m["summary"]) for m in to_ip
    ]
    ends = [m for m in result["messages"] if m["from"] == "ip-fault" and m["to"] == "service-fault"]
    assert any("finished" in m["summary"] for m in ends), [(m["commuType"], m["summary"]) for m in ends]
    assert not [m for m in to_ip if not m["ok"]], [(m["summary"], m.get("error")) for m in to_ip if not m["ok"]]
    # every hand-off with the outside agent ended (a stall would raise LabStall); with nothing found on the
    # transport side the incident stays open until the scenario's end
    assert result["run"]["end_reason"] in ("idle", "deadline")
    assert any("no alarm seen here" in n["text"] for n in result["notes"] if n["agent"] == "service-fault")


def test_services_start_first_and_stop_last(tmp_path: Path, state_dir: Path) -> None:
    """A gateway agent of the lab fronts an a2a-sdk agent that the lab starts as a service."""
    port = _free_port()
    upstream = Path(__file__).resolve().parents[2] / "examples" / "a2a-transport" / "transport_a2a_agent.py"
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        (IP_FAULT, f"  - {{name: ip-fault, role: ip-fault, regions: [metro], a2a_upstream: 'http://127.0.0.1:{port}'}}"),
        (TO_IP, "service-fault: [ip-fault, ran-fault, fme-copilot]"),
        ("scenario:\n", f"services:\n  - {{name: capacity, argv: ['{{python}}', '{upstream}', --port, '{port}'], "
                        f"port: {port}, ready: {{http: /.well-known/agent-card.json}}}}\n\nscenario:\n"),
    )  # fmt: skip
    topology = load_topology(path)
    lab = Lab(topology, state_dir, in_process=True)
    try:
        lab.start()
        assert [s.spec.name for s in lab.services] == ["capacity"]
        address = lab.address_of("ip-fault")
        assert address is not None
        with AgentClient.connect(*address, username="admin", password="admin") as client:
            profile = client.profile()
        assert (profile.name, profile.alias, profile.provider) == ("ip-fault", "acme-capacity", "ACME Networks")
        service = lab.services[0].process
    finally:
        lab.stop()
    assert service.poll() is not None  # stopped with the lab


def test_a_service_that_exits_stops_the_lab_naming_it(tmp_path: Path, state_dir: Path) -> None:
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        ("scenario:\n", "services:\n  - {name: licence, argv: ['{python}', -c, 'import sys; "
                        "print(\"no licence key\"); sys.exit(3)'], port: 1}\n\nscenario:\n"),
    )  # fmt: skip
    with pytest.raises(ConfigError) as caught:
        run(path, state_dir)
    assert "service licence exited (status 3) before it was ready" in str(caught.value)
    assert "no licence key" in str(caught.value)


def test_an_external_agent_is_registered_in_the_lab_directory(tmp_path: Path, state_dir: Path) -> None:
    """With a directory agent, the lab registers the external agent there on its behalf, under its topology name."""
    port = _free_port()
    profile = profile_file(tmp_path, "vendor-ip")
    path = variant(
        tmp_path,
        "discovery-input.yaml",
        ("  - {name: ip-south, role: ip-fault, regions: [south], port: 18878}",
         f'  - {{name: ip-south, role: ip-fault, regions: [south], external: {{netconf: "127.0.0.1:{port}"}}}}'),
    )  # fmt: skip
    with serve_at(tmp_path / "outside", port, "--profile", str(profile)):
        lab = Lab(load_topology(path), state_dir, in_process=True)
        try:
            lab.start()
            directory = lab.address_of("directory")
            assert directory is not None
            with DirectoryLogin(directory[0], directory[1], "admin", "admin").connect() as client:
                found = {e.name: e for e in client.find(AgentQuery(skill="transport-diagnosis"))}
            assert found["ip-south"].port == port and found["ip-south"].provider == "ACME"
        finally:
            lab.stop()


RELAY = textwrap.dedent(
    '''
    """A complaint desk of a third party: finds the service agent by skill and asks it (sdk only)."""
    import re

    from an_agent.agents.sdk import LabBehaviour, TaskFailure, envelope, parse_prompt


    class ComplaintDesk(LabBehaviour):
        description = "a third party's complaint desk"

        def feasibility(self, description, payload, requester):
            return "tickets are welcome"

        def handle(self, task, payload, run):
            text = parse_prompt(task.content or "").task_description or ""
            ticket = re.search(r"TT-[0-9]+", text).group(0)
            found = self.find_peers("cross-domain-correlation")
            self.note("found", f"{ticket}: cross-domain-correlation by {', '.join(found) or 'nobody'}", found=found)
            if not found:
                raise TaskFailure("no agent correlates complaints")
            value = envelope("complaint_ticket_v1", {"ticket_id": ticket, "complaint_category": "no_coverage",
                                                     "location": "harbour district", "region": "metro"})
            outcome = self.ask(found[0], f"desk.{ticket}", "harbour district", f"Complaint ticket {ticket}", value)
            if not outcome.finished:
                raise TaskFailure(f"{found[0]}: {outcome.reason}")
            self.finish(run, f"{found[0]} says: {outcome.reason}", outcome.result())
    '''
)


@pytest.mark.slow  # a whole scenario (about 25 s)
def test_a_plugin_finds_a_peer_by_skill_and_asks_it(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FEASIBILITY -> taskAssign -> result with a peer found by skill, from a plugin (a process per agent)."""
    (tmp_path / "byo_desk.py").write_text(RELAY, encoding="utf-8")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(tmp_path))
    path = variant(
        tmp_path,
        "cross-domain-fault.yaml",
        (
            "{name: complaint, role: complaint,",
            '{name: complaint, role: complaint, behaviour: "byo_desk:ComplaintDesk",',
        ),
    )
    result = run(path, state_dir)
    found = [n for n in result["notes"] if n["agent"] == "complaint" and n["kind"] == "found"]
    assert found and found[0]["details"]["found"] == ["service-fault"]
    to_service = {m["commuType"] for m in result["messages"] if m["from"] == "complaint" and m["to"] == "service-fault"}
    assert {"FeasibilityNegotiate", "taskAssign"} <= to_service
    ticket = next(t for t in result["tasks"] if t["task_id"] == "bss.ticket.1")
    assert ticket["status"] == "finished" and "LINK-C2" in ticket["reason"], ticket


def _ip_results(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The results of the diagnoses the lab's ip-fault agent finished."""
    return [t["result"] for t in result["tasks"] if t["agent"] == "ip-fault" and t["result"]]


@pytest.mark.slow  # a whole scenario, a process per agent, a program per task
def test_command_behaviour_plays_the_ip_fault_role(state_dir: Path) -> None:
    """(b): a program written against docs/behaviour-command.md only, on the element managers over NETCONF."""
    result = run(TOPOLOGIES / "cross-domain-fault-command.yaml", state_dir)
    _closed(result)
    diagnosed = _ip_results(result)
    assert diagnosed and {r["diagnosed_by"] for r in diagnosed} == {"acme-command"}
    assert {r["element"] for r in diagnosed} == {"LINK-C2"}


@pytest.mark.slow  # a whole scenario, a process per agent, an A2A agent as a service
def test_a2a_agent_behind_the_gateway_plays_the_ip_fault_role(state_dir: Path) -> None:
    """(c): an a2a-sdk agent (nothing of ours imported), started by the lab as a service, fronted by a gateway."""
    result = run(TOPOLOGIES / "cross-domain-fault-a2a.yaml", state_dir)
    _closed(result)
    diagnosed = _ip_results(result)
    assert diagnosed and {r["diagnosed_by"] for r in diagnosed} == {"acme-transport-a2a"}
    with socket.socket() as probe:  # the service stopped with the lab
        assert probe.connect_ex(("127.0.0.1", 18943)) != 0


@pytest.mark.slow  # a whole scenario with an agent started outside the lab
def test_an_external_agent_plays_the_ip_fault_role(
    tmp_path: Path, state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """(d): started as the topology's comment says, before the lab; the lab only names it. The lab runs paced
    (600 simulated seconds per wall second), as for participants it cannot see."""
    topology = TOPOLOGIES / "cross-domain-fault-external.yaml"
    started = re.search(
        r"#   an-agent serve (.*?) &\n", topology.read_text(encoding="utf-8").replace("\\\n#    ", ""), re.S
    )
    assert started, "the topology documents the command that starts the outside agent"
    argv = shlex.split(started.group(1).replace("/tmp/acme-outside", str(tmp_path / "outside")))
    port = int(argv[argv.index("--port") + 1])
    argv = [a for i, a in enumerate(argv) if a != "--port" and argv[i - 1] != "--port" and a != "--state-dir"
            and argv[i - 1] != "--state-dir"]  # fmt: skip
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # the command is given from the repository's root
    with serve_at(tmp_path / "outside", port, *argv):
        result = run(topology, state_dir, pace=600.0)
        with AgentClient.connect("127.0.0.1", port, username="admin", password="admin") as outside:
            done = [t for t in outside.list_tasks() if t.task_id.startswith("service-fault.diagnose-transport")]
    _closed(result)
    assert done and all(t.status is not None and t.status.value == "finished" for t in done)
    assert all(json.loads(t.result.data or "{}")["diagnosed_by"] == "acme-command" for t in done if t.result)
    assert not [a for a in result["agents"] if a["name"] == "ip-fault" and a["address"]]  # the lab did not start it
