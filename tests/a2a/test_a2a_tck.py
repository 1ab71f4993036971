"""The official A2A TCK (third_party/a2a-tck, its own virtualenv .venv-tck from `make tck-setup`) against
``an-agent serve --a2a-port P`` as a new user starts it: HTTPS with the certificate it generates, Basic
admin/admin. Categories mandatory, capabilities, quality and features, over JSON-RPC and HTTP+JSON, each
run by the TCK's own runner (``run_tck.run_test_category``) with its JSON report.

Every failed or erroring TCK test must be listed in tck_expected_failures.yaml (with the A2A v1.0 text that
shows the TCK is wrong, or that it tests what the card says we do not offer), and every listed test must
still fail: the test fails both ways, so the list cannot rot. Skips are reported, not judged.
docs/reference/a2a-tck.md says how to run it by hand.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
TCK = ROOT / "third_party" / "a2a-tck"
TCK_PYTHON = ROOT / ".venv-tck" / "bin" / "python"
EXPECTED = Path(__file__).with_name("tck_expected_failures.yaml")
TRANSPORTS = ("jsonrpc", "rest")
CATEGORIES = ("mandatory", "capabilities", "quality", "features")
FAILED = frozenset({"failed", "error"})
AGENT = ["--profile", str(ROOT / "src" / "an_agent" / "data" / "example-profile.json"), "--schemas", "off"]
"""The shipped example profile, text taken as the task's prompt (docs/reference/a2a-tck.md says why not the quick tour)."""

# The TCK's own runner builds the pytest command of a category (paths, markers, options); we only ask it for
# the JSON report it writes under reports/ in its folder.
RUNNER = """
import sys, run_tck
sys.exit(run_tck.run_test_category(sys.argv[1], sys.argv[2], json_report=sys.argv[4], transports=sys.argv[3],
                                   transport_strategy="agent_preferred", enable_equivalence_testing=True))
"""


@dataclass(frozen=True)
class Agent:
    url: str
    certificate: Path


@contextmanager
def serve(state: Path) -> Iterator[Agent]:
    """``an-agent serve`` (`AGENT`) on free ports, stopped with SIGTERM as Ctrl-C would."""
    state.mkdir()
    log = state / "agent.log"
    command = [sys.executable, "-m", "an_agent.cli", "serve", "--port", "0", "--a2a-port", "0", *AGENT]
    with log.open("wb") as out:
        proc = subprocess.Popen([*command, "--state-dir", str(state / "state")], stdout=out, stderr=out)
    try:
        deadline = time.monotonic() + 60
        while not (started := re.search(r"A2A on (https://\S+)/ \(certificate (\S+),", log.read_text())):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.2)
        yield Agent(started[1], Path(started[2]))
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _environment(agent: Agent) -> dict[str, str]:
    """Ours minus pytest's, Python's and the TCK's own settings (a caller's A2A_*, TCK_*, SUT_* would change
    the run); the TCK's header hook adds the login and the version
    (spec 3.6.1: a request without A2A-Version is taken as 0.3, which a 1.0 agent refuses); the generated
    certificate is the CA of the TCK's requests client (its httpx REST client verifies nothing)."""
    own = ("PYTEST", "PYTHON", "VIRTUAL_ENV", "A2A_", "TCK_", "SUT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(own)}
    login = base64.b64encode(b"admin:admin").decode()
    env.update(
        A2A_AUTH_HEADERS=json.dumps({"Authorization": f"Basic {login}", "A2A-Version": "1.0"}),
        SSL_CERT_FILE=str(agent.certificate),
        REQUESTS_CA_BUNDLE=str(agent.certificate),
        TCK_LOG_LEVEL="WARNING",
        TCK_STREAMING_TIMEOUT="10",  # the TCK's knob for slow machines (2 s by default): a bound, not a wait
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


def _expected() -> dict[tuple[str, str, str], dict[str, Any]]:
    """(transport, category, test id) -> its entry in tck_expected_failures.yaml."""
    entries = yaml.safe_load(EXPECTED.read_text())["expected_failures"]
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for entry in entries:
        assert entry["category"] in CATEGORIES and all(entry.get(k) for k in ("spec", "quote", "why")), entry
        for transport in entry["transports"]:
            assert transport in TRANSPORTS, entry
            key = (transport, entry["category"], entry["test"])
            assert key not in out, f"listed twice: {key}"
            out[key] = entry
    return out


def run_tck(agent: Agent, folder: Path, transport: str) -> dict[tuple[str, str, str], str]:
    """Every (transport, category, test id) the TCK ran over ``transport``, and its outcome (passed, failed,
    error, skipped...)."""
    outcomes: dict[tuple[str, str, str], str] = {}
    env = _environment(agent)
    for category in CATEGORIES:
        report = f"{category}_{transport}.json"
        done = subprocess.run(
            [str(TCK_PYTHON), "-c", RUNNER, category, agent.url, transport, report],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        path = folder / "reports" / report
        assert path.exists(), f"{category} over {transport}: no report\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        for test in json.loads(path.read_text())["tests"]:
            outcomes[(transport, category, test["nodeid"])] = test["outcome"]
    return outcomes


def summary(outcomes: dict[tuple[str, str, str], str], expected: set[tuple[str, str, str]]) -> str:
    """One line per transport and category: passed / failed / expected-failed / skipped (and others)."""
    lines = []
    for transport in TRANSPORTS:
        for category in CATEGORIES:
            counts: Counter[str] = Counter()
            for key, outcome in outcomes.items():
                if key[:2] == (transport, category):
                    counts["expected-failed" if outcome in FAILED and key in expected else outcome] += 1
            counts["failed"] += counts.pop("error", 0)
            lines.append(
                f"{transport:8} {category:13} passed {counts.pop('passed', 0):3}  failed {counts.pop('failed', 0):3}  "
                f"expected-failed {counts.pop('expected-failed', 0):3}  skipped {counts.pop('skipped', 0):3}"
                + "".join(f"  {k} {v}" for k, v in sorted(counts.items()))
            )
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_the_a2a_tck_fails_only_on_the_listed_tests(tmp_path: Path) -> None:
    assert TCK_PYTHON.exists(), "the TCK's virtualenv is missing: run 'make tck-setup'"
    folder = tmp_path / "a2a-tck"
    shutil.copytree(TCK, folder)  # the TCK writes reports/ and caches into its own folder
    expected = _expected()
    outcomes: dict[tuple[str, str, str], str] = {}
    for transport in TRANSPORTS:  # an agent of its own for each: the TCK's list tests count every task
        with serve(tmp_path / transport) as agent:
            outcomes.update(run_tck(agent, folder, transport))
    table = summary(outcomes, set(expected))
    print(f"\nA2A TCK against an-agent serve:\n{table}")
    unexpected = sorted(
        " ".join(key) + f": {outcome}" for key, outcome in outcomes.items() if outcome in FAILED and key not in expected
    )
    fixed = sorted(
        " ".join(key) + f": {outcomes.get(key, 'not run')}" for key in expected if outcomes.get(key) not in FAILED
    )
    skipped = sorted(" ".join(key) for key, outcome in outcomes.items() if outcome == "skipped")
    print("skipped:\n  " + "\n  ".join(skipped))
    assert not unexpected and not fixed, (
        f"{table}\n\nfailed, not in {EXPECTED.name} (a defect of ours, or a TCK test to list with the spec "
        "text that shows it wrong):\n  "
        + "\n  ".join(unexpected)
        + f"\n\nlisted in {EXPECTED.name} but did not fail (remove them):\n  "
        + "\n  ".join(fixed)
    )
