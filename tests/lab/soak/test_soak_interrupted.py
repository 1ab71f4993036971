"""A soak stopped by hand (Ctrl-C, or SIGTERM from a CI timeout) keeps its report: the agents are stopped,
the run is judged as far as it got, the report is written, and the exit code says it was interrupted."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

TOPOLOGY = Path(__file__).resolve().parents[3] / "topologies" / "cross-domain-fault.yaml"


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interrupted_soak_reports_what_it_judged(tmp_path: Path, signum: int, code: int) -> None:
    argv = [sys.executable, "-m", "an_agent.cli", "lab", "soak", str(TOPOLOGY), "--duration", "10m", "--seed", "3"]
    argv += ["--chaos", "none", "--json", "--state-dir", str(tmp_path / "state"), "--report", str(tmp_path / "r")]
    soak = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert soak.stderr is not None
        for line in soak.stderr:  # the faults are being played
            if "soaking for" in line:
                break
        time.sleep(3)
        soak.send_signal(signum)
        out, _ = soak.communicate(timeout=300)
    finally:
        if soak.poll() is None:
            soak.kill()
            soak.wait()
    assert soak.returncode in (code, -signum), soak.returncode  # -signum: ended by re-raising the signal
    report = json.loads(out)
    assert report["run"]["end_reason"].startswith("interrupted")
    assert report["checkers"] and not report["ok"]
    assert (tmp_path / "r" / "soak.json").is_file() and (tmp_path / "r" / "soak.html").is_file()
