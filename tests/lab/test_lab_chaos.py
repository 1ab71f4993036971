"""``lab run --chaos kill:AGENT@SECONDS``: an agent's process killed mid-scenario, restarted; the loop closes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from labsupport import TOPOLOGIES

from an_agent.cli import main
from an_agent.errors import ConfigError
from an_agent.lab.chaos import ChaosSpec, parse_chaos
from an_agent.lab.topology import load_topology

TOPOLOGY = TOPOLOGIES / "fault-energy-optimization.yaml"


def test_a_killed_agent_is_restarted_its_task_resumes_and_the_loop_closes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # ip-fault diagnoses ran-fault's request from 960 s to 1260 s; it is killed at 1100 s, in the middle
    report = tmp_path / "report"
    argv = ["lab", "run", str(TOPOLOGY), "--json", "--quiet", "--state-dir", str(tmp_path), "--report", str(report)]
    code = main([*argv, "--chaos", "kill:ip-fault@1100"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0, [c for c in result["outcome"]["checks"] if not c["ok"]]
    assert result["outcome"]["closed_loop"] and result["run"]["end_reason"] == "idle"
    (event,) = result["chaos"]
    assert (event["kind"], event["agent"], event["at"], event["error"]) == ("kill", "ip-fault", 1100.0, None)
    assert event["killed_pid"] != event["restarted_pid"]
    assert event["unfinished_tasks"] == ["ran-fault.diagnose.SITE-06"]
    # the resumed diagnosis takes its 300 s again from the restart: restoration comes later than without chaos
    cost = event["time_to_restore_s"]
    assert cost["without"] == 1260.0 and cost["with"] == 1400.0 and cost["cost_s"] == 140.0
    diagnosis = next(t for t in result["tasks"] if t["task_id"] == "ran-fault.diagnose.SITE-06")
    assert diagnosis["status"] == "finished"
    # the assigner reconnected and resubscribed; the end came by the replayed notification
    after = [m for m in result["messages"] if m["from"] == "ran-fault" and m["to"] == "ip-fault" and m["t"] > 1100]
    assert [m["operation"] for m in after][:2] == ["get", "create-subscription"]
    ended = [
        m
        for m in result["messages"]
        if m["operation"] == "notification" and m["task_id"] == "ran-fault.diagnose.SITE-06"
    ]
    assert [m["status"] for m in ended] == ["created", "processing", "finished"]  # each once, replay or not
    html = Path(result["report"]).read_text()
    assert "Chaos: faults of the lab itself" in html and "ran-fault.diagnose.SITE-06" in html
    log = (tmp_path / "agents" / "ip-fault" / "agent.log").read_text()
    assert log.count("serving ip-fault on") == 2  # the same state directory (and log), served twice


def test_chaos_is_parsed_and_checked_against_the_topology(capsys: pytest.CaptureFixture[str]) -> None:
    topology = load_topology(TOPOLOGY)
    assert parse_chaos("kill:ip-fault@1100", topology) == ChaosSpec("kill", "ip-fault", 1100.0)
    for bad in ("kill:ip-fault", "stop:ip-fault@10", "kill:nobody@10", "kill:ip-fault@-5"):
        with pytest.raises(ConfigError):
            parse_chaos(bad, topology)
    assert main(["lab", "run", str(TOPOLOGY), "--chaos", "kill:nobody@10"]) == 2
    assert "no agent 'nobody'" in capsys.readouterr().err
    assert main(["lab", "run", str(TOPOLOGY), "--chaos", "kill:ip-fault@10", "--in-process", "--quiet"]) == 2
    assert "--in-process" in capsys.readouterr().err


@pytest.mark.slow
def test_a_killed_agent_on_an_a2a_link_is_followed_again_and_the_loop_closes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # cross-domain-fault: service-fault assigns the diagnosis to ip-fault over A2A (transport: a2a) at 450 s,
    # ip-fault works on it until 750 s; it is killed at 600 s, while the assigner's A2A stream is open
    topology = TOPOLOGIES / "cross-domain-fault.yaml"
    argv = [
        "lab",
        "run",
        str(topology),
        "--json",
        "--quiet",
        "--state-dir",
        str(tmp_path),
        "--chaos",
        "kill:ip-fault@600",
    ]
    code = main(argv)
    result = json.loads(capsys.readouterr().out)
    assert code == 0, [c for c in result["outcome"]["checks"] if not c["ok"]]
    assert result["outcome"]["closed_loop"] and not result["run"]["activity_errors"]
    (event,) = result["chaos"]
    assert event["unfinished_tasks"] == ["service-fault.diagnose.LINK-C2"] and event["error"] is None
    # the stream broke with the process; the assigner subscribed to the task again (A2A SubscribeToTask)
    # once the restarted agent served, and its hand-off waited for the resumed task's real end
    # (its NETCONF sessions reconnect too, in real time: the two may come in either order)
    after = [m for m in result["messages"] if (m["from"], m["to"]) == ("service-fault", "ip-fault") and m["t"] >= 600]
    resubscribed = [m for m in after if m["operation"] == "SubscribeToTask"]
    assert resubscribed and resubscribed[0]["task_id"] == "service-fault.diagnose.LINK-C2", after
    assert not [m for m in after if m["commuType"] == "taskAssign"]  # followed again, never assigned twice
    diagnosis = next(t for t in result["tasks"] if t["task_id"] == "service-fault.diagnose.LINK-C2")
    assert diagnosis["status"] == "finished"
    cost = event["time_to_restore_s"]
    assert cost["with"] > cost["without"] and cost["cost_s"] > 0  # the diagnosis started over at the restart
