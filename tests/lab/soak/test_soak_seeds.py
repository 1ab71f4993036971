"""Ten seeds of five minutes each hold every checker (issue 29): ``an-agent lab soak`` run from the outside,
as a person or CI runs it, three at a time (separate labs on separate free ports and state directories) so
that the ten take about 25 minutes of CI instead of 55. Select with ``-m soak``; docs/soak.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

TOPOLOGY = Path(__file__).resolve().parents[3] / "topologies" / "cross-domain-fault.yaml"
SEEDS = range(1, 11)
AT_ONCE = int(os.environ.get("AN_AGENT_SOAK_AT_ONCE", "3"))
"""How many soaks run side by side (three on CI's two cores: a loaded lab plays fewer events, never longer)."""
DURATION = os.environ.get("AN_AGENT_SOAK_DURATION", "5m")


def soak(seed: int, state_dir: Path) -> tuple[int, dict[str, Any] | None, str]:
    argv = [sys.executable, "-m", "an_agent.cli", "lab", "soak", str(TOPOLOGY), "--duration", DURATION]
    argv += ["--seed", str(seed), "--json", "--quiet", "--state-dir", str(state_dir)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=1800, check=False)
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = None
    return done.returncode, report, done.stderr[-3000:]


@pytest.mark.slow
@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_ten_seeds_of_five_minutes_hold_every_checker(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        runs = dict(zip(SEEDS, pool.map(lambda seed: soak(seed, tmp_path / f"seed-{seed}"), SEEDS), strict=True))
    failed: dict[int, Any] = {}
    for seed, (code, report, stderr) in runs.items():
        if report is None:
            failed[seed] = f"exit {code}, no report: {stderr}"
            continue
        assert report["seed"] == seed and report["injected"]["total"] > 0
        if code != 0 or not report["ok"]:
            failed[seed] = [c for c in report["checkers"] if not c["ok"]]
    assert not failed, json.dumps(failed, indent=1)[:20000]
