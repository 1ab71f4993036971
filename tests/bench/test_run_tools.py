"""bench.run --only and bench.reader_loop: the tools used to iterate on one number."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from bench.reader_loop import cpu_per_request
from bench.run import PHASES, _fleet_of_100, _phases

from an_agent.model import AgentProfile
from an_agent.nc.face import NetconfFace
from an_agent.server import AgentServer, ServerConfig
from bench import data, procs


def test_only_takes_known_benchmarks_and_refuses_others() -> None:
    assert _phases("requests, notifications") == ("requests", "notifications")
    assert set(PHASES) >= {"requests", "notifications", "evolution"}
    with pytest.raises(argparse.ArgumentTypeError, match="unknown benchmark fanout"):
        _phases("requests,fanout")
    with pytest.raises(argparse.ArgumentTypeError):
        _phases(" , ")


def test_reader_loop_answers_every_request_from_the_memo_after_the_first(tmp_path: Path) -> None:
    config = ServerConfig(
        state_dir=tmp_path / "state",
        port=0,
        users={"admin": "admin"},
        schemas="off",
        profile=AgentProfile.from_json(data.profile_json()),
    )
    with AgentServer(config) as server:
        face = server._listener.handler
        assert isinstance(face, NetconfFace)
        assert cpu_per_request(server, data.GET_PROFILE, 200, 1) >= 0.0
        assert (face.replies.misses, face.replies.hits) == (1, 199)


@pytest.mark.slow
@pytest.mark.parametrize("client", ["openssh", "paramiko"])
def test_the_floor_emitter_notifies_every_subscriber_of_each_assignment(client: str) -> None:
    """bench.notify_floor's do-nothing server: one notification per subscriber and assignment, on both paths.

    With either SSH client of the subscribers (OpenSSH's ssh logs in by password on the paramiko path).
    """
    from bench.notify_floor import EMITTER, NEEDLES

    from bench import m_notify, ours

    with ours.AgentProcess(data.profile_json(), sshd=True, entry=EMITTER) as floor:
        for name, target in (("floor", floor), ("floor-sshd", floor.sshd_target())):
            base = (900_000 if name == "floor" else 910_000) + (0 if client == "openssh" else 50_000)
            latencies = m_notify.notification_latency(
                target, 3, [base, base + 1], NEEDLES[name], timeout=60.0, client=client
            )
            assert len(latencies) == 6 and all(x > 0 for x in latencies)


def test_a_fleet_is_projected_from_private_pages_and_shared_pages_once() -> None:
    # Two children of one interpreter: their libraries are shared pages, the 64 MiB each writes are
    # private; the projection must charge the 64 MiB per agent and the libraries once, whatever PSS says.
    script = "import sys, time; b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096]); print(1, flush=True); time.sleep(30)"
    children = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE) for _ in range(2)]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline() == b"1\n"
        pids = [child.pid for child in children]
        private, shared = procs.private_and_shared_bytes(pids)
        assert private >= 2 * (64 << 20)
        assert 0 < shared < private
        result = {"pss_bytes": procs.pss_bytes(pids), "private_bytes": private, "shared_max_bytes": shared}
        projected = _fleet_of_100(result, 2)
        assert projected is not None
        assert projected * (1 << 20) == pytest.approx(private / 2 * 100 + shared)
        assert projected >= 100 * 64
    finally:
        for child in children:
            child.kill()
            child.wait()
