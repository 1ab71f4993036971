"""an_agent.stages (opt-in stage stamps) and bench.notify_stages (benchmark 3's stages inside the agent)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from bench import data, m_notify


def test_stamps_go_to_a_private_file_only_when_asked(tmp_path: Path) -> None:
    stamps = tmp_path / "stamps.tsv"
    script = "from an_agent import stages\nassert stages.ON\nstages.mark('first')\nstages.mark('second')\n"
    env = {**os.environ, "AN_AGENT_STAGES": str(stamps)}
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=60)
    lines = [line.split("\t") for line in stamps.read_text().splitlines()]
    assert [stage for _, _, stage in lines] == ["first", "second"]
    assert float(lines[0][0]) <= float(lines[1][0])
    assert stat.S_IMODE(stamps.stat().st_mode) == 0o600
    off = {k: v for k, v in os.environ.items() if k != "AN_AGENT_STAGES"}
    out = subprocess.run(
        [sys.executable, "-c", "from an_agent import stages; print(stages.ON)"],
        check=True,
        env=off,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "False"


def test_stages_of_an_assignment_are_read_from_its_own_request_and_event() -> None:
    from bench.notify_stages import Stamp, event_stages

    sent = 100.0
    stamps = [
        Stamp(99.0, "reader-1", "read"),  # before the send: another request
        Stamp(100.0005, "reader-1", "replied"),  # the previous request's reply, stamped after this send
        Stamp(100.001, "reader-1", "read"),
        Stamp(100.002, "reader-1", "authorized"),
        Stamp(100.003, "reader-1", "committed"),
        Stamp(100.0035, "task_1", "committed"),  # another thread's edit is not this request's
        Stamp(100.004, "reader-1", "logged:7"),
        Stamp(100.005, "reader-1", "written:7"),
        Stamp(100.006, "reader-1", "written:7"),
        Stamp(100.007, "reader-1", "published:created:7"),
        Stamp(100.009, "reader-1", "replied"),
    ]
    got = event_stages(m_notify.Assignment(1, sent, [100.008, 100.010]), stamps)
    assert got["read"] == pytest.approx(1.0)
    assert got["committed"] == pytest.approx(3.0)
    assert got["created logged"] == pytest.approx(4.0)
    assert (got["created first written"], got["created last written"]) == (pytest.approx(5.0), pytest.approx(6.0))
    assert got["created writes"] == 2
    assert got["replied"] == pytest.approx(9.0)
    assert (got["arrival p50"], got["arrival last"]) == (pytest.approx(8.0), pytest.approx(10.0))


@pytest.mark.slow
def test_stage_tracer_sees_every_stage_on_both_paths() -> None:
    from bench.notify_stages import measure

    result = measure(3, [2], ["paramiko", "sshd"])
    for key in ("paramiko 2", "sshd 2"):
        assert result["rows"][key]["created writes"] == 2
        for event in result["raw"][key]:
            # Every event has its request's stages, in causal order. A write's stamp is taken when the
            # write returns, so the client may hold the bytes first: arrivals are compared with "logged".
            stages = [event[s] for s in ("read", "authorized", "committed", "created logged", "replied")]
            assert stages[:4] == sorted(stages[:4]), event
            assert event["created logged"] <= event["created first written"] <= event["created last written"]
            assert event["read"] > 0 and event["created logged"] <= event["arrival p50"] <= event["arrival last"]


def test_the_openssh_client_is_one_of_the_choices() -> None:
    assert m_notify.DEFAULT_CLIENT in m_notify.CLIENTS == ("openssh", "paramiko")
    assert data.task_id(3) in data.tasks_xml(1, 3)
