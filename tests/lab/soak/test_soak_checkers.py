"""Each soak checker can fail: a real run's evidence holds every checker, and the same evidence with one
known defect of each checked kind (a deleted task row, a duplicate assignment, a dropped or repeated
notification, a repair applied twice, a loop left open, a damaged database, a leaking descriptor) makes
exactly that checker fail, with the counter-example that shows it."""

from __future__ import annotations

import contextlib
import copy
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from an_agent.lab.runner import Lab
from an_agent.lab.soak.checkers import LoopsClose, NoDuplicate, NoLostTask, NotificationsComplete, run_checkers
from an_agent.lab.soak.evidence import Evidence, read_durable
from an_agent.lab.soak.health import ResourcesFlat, RunEnded, SqliteIntact
from an_agent.lab.soak.resources import ResourceSampler, sqlite_integrity
from an_agent.lab.soak.run import collect_evidence
from an_agent.lab.topology import load_topology

TOPOLOGY = Path(__file__).resolve().parents[3] / "topologies" / "cross-domain-fault.yaml"


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[Evidence, Path]:
    """The shipped scenario played to its end (agents in this process), and its agents' state directory."""
    state = tmp_path_factory.mktemp("soak-checkers")
    with Lab(load_topology(TOPOLOGY), state, in_process=True) as lab:
        lab.start()
        lab.schedule_scenario()
        end_reason = lab.play()
    evidence = collect_evidence(lab, final=True)
    evidence.end_reason = end_reason
    for agent in lab.local_agents:
        evidence.tasks[agent.name], evidence.logs[agent.name] = read_durable(lab.agent_dir(agent.name))
        evidence.integrity[agent.name] = sqlite_integrity(lab.agent_dir(agent.name))
    return evidence, state / "agents"


@pytest.fixture
def evidence(real: tuple[Evidence, Path]) -> Evidence:
    return copy.deepcopy(real[0])


def failing(evidence: Evidence) -> dict[str, Any]:
    """The verdicts that failed, by checker name."""
    return {v.name: v for v in run_checkers(evidence) if not v.ok}


def assignment(evidence: Evidence, where: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return next(
        e for e in evidence.exchanges if e["commuType"] == "taskAssign" and e["operation"] == "edit-config" and where(e)
    )


def test_a_real_run_holds_every_checker(evidence: Evidence) -> None:
    assert failing(evidence) == {}
    assert len([e for e in evidence.exchanges if e["commuType"] == "taskAssign"]) >= 10


def test_a_deleted_task_row_is_a_lost_task(real: tuple[Evidence, Path]) -> None:
    evidence, agents = copy.deepcopy(real[0]), real[1]
    sent = assignment(evidence, lambda e: e["to"] == "fme-copilot")
    database = agents / "fme-copilot" / "agent.db"
    backup = database.read_bytes()
    try:
        with contextlib.closing(sqlite3.connect(database)) as db, db:
            db.execute("DELETE FROM task_state WHERE task_id = ?", (sent["task_id"],))
        evidence.tasks["fme-copilot"], _ = read_durable(agents / "fme-copilot")
    finally:
        database.write_bytes(backup)
    verdict = failing(evidence)[NoLostTask.name]
    assert (
        f"task {sent['task_id']} assigned by {sent['from']} to fme-copilot (acknowledged) is missing" in verdict.problem
    )
    assert verdict.excerpt[0] == sent


def test_a_task_behind_what_its_assigner_was_told_is_lost_progress(evidence: Evidence) -> None:
    sent = assignment(evidence, lambda e: e["to"] == "network-copilot")
    evidence.tasks["network-copilot"][sent["task_id"]] = "created"
    verdict = failing(evidence)[NoLostTask.name]
    assert "is created, but fme-copilot was told finished" in verdict.problem


def test_a_duplicate_assignment_is_reported(evidence: Evidence) -> None:
    sent = assignment(evidence, lambda e: e["to"] == "service-fault")
    evidence.exchanges.append({**sent, "order": sent["order"] + 10_000})
    verdict = failing(evidence)[NoDuplicate.name]
    assert verdict.problem == f"task {sent['task_id']} created twice at service-fault"
    assert len(verdict.excerpt) == 2


def test_a_task_id_taken_by_another_decision_is_reported(evidence: Evidence) -> None:
    sent = assignment(evidence, lambda e: e["to"] == "service-fault")
    error = f"data-exists (application) at /irtf-agent:tasks/task[task-id='{sent['task_id']}']: task already exists"
    evidence.exchanges.append({**sent, "ok": False, "error": error})
    assert "reused for a new assignment" in failing(evidence)[NoDuplicate.name].problem


def test_a_repair_applied_twice_is_reported(evidence: Evidence) -> None:
    ticket = next(c for c in evidence.changes if c["action"] == "trouble_ticket")
    evidence.changes.append(dict(ticket))
    verdict = failing(evidence)[NoDuplicate.name]
    assert verdict.problem == f"trouble_ticket applied twice to the same fault of {ticket['element']}"


def test_a_dropped_notification_is_a_gap(evidence: Evidence) -> None:
    dropped = next(e for e in evidence.exchanges if e["operation"] == "notification" and e["status"] == "processing")
    evidence.exchanges.remove(dropped)
    verdict = failing(evidence)[NotificationsComplete.name]
    assert f"of {dropped['task_id']} from {dropped['from']}" in verdict.problem and "a gap" in verdict.problem


def test_a_dropped_end_of_task_is_reported(evidence: Evidence) -> None:
    dropped = next(e for e in evidence.exchanges if e["operation"] == "notification" and e["status"] == "finished")
    evidence.exchanges.remove(dropped)
    problems = failing(evidence)[NotificationsComplete.name]
    assert problems.failures >= 1


def test_a_repeated_notification_is_reported(evidence: Evidence) -> None:
    repeated = next(e for e in evidence.exchanges if e["operation"] == "notification" and e["status"] == "processing")
    evidence.exchanges.insert(evidence.exchanges.index(repeated), dict(repeated))
    assert "twice" in failing(evidence)[NotificationsComplete.name].problem


def test_a_loop_left_open_is_reported(evidence: Evidence) -> None:
    evidence.faults[0]["restored_at"] = None
    verdict = failing(evidence)[LoopsClose.name]
    assert verdict.problem.startswith("link_cut on LINK-C2") and "not closed" in verdict.problem
    assert verdict.excerpt[0]["kind"] == "fault"


def test_a_loop_closed_too_late_is_reported(evidence: Evidence) -> None:
    fault = evidence.faults[0]
    fault["restored_at"] = fault["injected_at"] + 10 * 3600
    assert "bound" in failing(evidence)[LoopsClose.name].problem


def test_a_field_repair_may_take_its_guided_procedure_beyond_a_short_nominal_time(evidence: Evidence) -> None:
    fault = evidence.faults[0]  # a fibre cut: 75 minutes of guided steps
    fault["repair_minutes"] = 30
    fault["restored_at"] = fault["injected_at"] + 75 * 60 * 1.15 + 1700
    assert LoopsClose.name not in failing(evidence)
    fault["restored_at"] += 200
    assert "bound" in failing(evidence)[LoopsClose.name].problem


def test_a_damaged_database_is_reported(real: tuple[Evidence, Path], tmp_path: Path) -> None:
    evidence = copy.deepcopy(real[0])
    copy_dir = tmp_path / "ip-fault"
    copy_dir.mkdir()
    source = real[1] / "ip-fault"
    for name in ("agent.db", "evolution.db"):
        with contextlib.closing(sqlite3.connect(source / name)) as db:
            db.execute(f"VACUUM INTO '{copy_dir / name}'")
    with contextlib.closing(sqlite3.connect(copy_dir / "agent.db")) as db, db:
        db.execute("PRAGMA writable_schema=ON")  # an index that no longer matches its table
        db.execute("UPDATE sqlite_master SET sql = replace(sql, 'event_time', 'seq') WHERE name = 'notification_time'")
    evidence.chaos.append(
        {"kind": "kill", "target": "ip-fault", "at": evidence.start + 60, "end": evidence.start + 60,
         "integrity": sqlite_integrity(copy_dir)}
    )  # fmt: skip
    verdict = failing(evidence)[SqliteIntact.name]
    assert verdict.problem.startswith("ip-fault's agent.db after kill at +60 s:")


def test_a_leaking_descriptor_is_reported(evidence: Evidence) -> None:
    # a descriptor more every 20 ms for longer than it is watched: it grows all along, not once
    leak = "import time\nfiles = []\nfor _ in range(400):\n    files.append(open('/dev/null'))\n    time.sleep(0.02)\n"
    process = subprocess.Popen([sys.executable, "-c", leak])
    sampler = ResourceSampler(lambda: {"leaky": process.pid}, lambda name: Path("/nonexistent"), interval=0.1)
    try:
        sampler.start()
        time.sleep(4.0)
    finally:
        sampler.stop()
        process.kill()
        process.wait()
    evidence.samples = [s.to_dict() for s in sampler.samples]
    evidence.wall = sampler.elapsed()
    verdict = failing(evidence)[ResourcesFlat.name]
    assert verdict.problem.startswith(f"leaky (pid {process.pid}): fds grew from")


def test_a_run_that_did_not_end_idle_is_reported(evidence: Evidence) -> None:
    evidence.end_reason = "deadline"
    assert failing(evidence)[RunEnded.name].problem == "the run ended deadline with work left"


def test_a_gap_across_a_restart_of_the_subscriber_is_its_restart(evidence: Evidence) -> None:
    """A restarted subscriber is a new process, subscribed from its start: what was published while it was
    dead is no gap of its stream (as its missing end is not). A restart of another agent excuses nothing."""
    notes = [e for e in evidence.exchanges if e["operation"] == "notification"]

    def later(e: dict[str, Any]) -> float | None:  # the time of the next notification of e's stream, if later
        key = (e["to"], e["from"], e["task_id"])
        rest = [n["time"] for n in notes if (n["to"], n["from"], n["task_id"]) == key and n["order"] > e["order"]]
        return min(rest) if rest and min(rest) > e["time"] else None

    dropped, after = next((e, t) for e in notes if e["status"] != "created" and (t := later(e)) is not None)
    evidence.exchanges.remove(dropped)
    # the subscriber killed after the dropped one was published, and back before the next
    restart = {"kind": "kill", "target": dropped["to"], "at": (dropped["time"] + after) / 2, "restarted": True}
    elsewhere = {**restart, "target": next(a for a in evidence.logs if a not in (dropped["to"], dropped["from"]))}
    evidence.chaos.append(elsewhere)
    assert "a gap" in failing(evidence)[NotificationsComplete.name].problem
    evidence.chaos.append(restart)
    assert NotificationsComplete.name not in failing(evidence)
