"""`an-agent conformance` (the CLI) against an A2A agent written with a2a-sdk alone, in a process of its own.

The agent (`outsider_a2a_agent.py`, which imports nothing of ours) has a schema with an invalid
``examples`` entry and a skill naming an undeclared schema: both must be reported, the second as a
failed MUST (exit code 1). The run also writes its JUnit and HTML reports, readable by the owner only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree

from an_agent.cli import main

AGENT = Path(__file__).with_name("outsider_a2a_agent.py")


@pytest.fixture(scope="module")
def outsider() -> Iterator[str]:
    process = subprocess.Popen([sys.executable, str(AGENT)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()  # printed once it is about to serve
        assert url.startswith("http://127.0.0.1:"), url
        yield url
    finally:
        process.terminate()
        process.wait(10)


def test_both_card_faults_are_reported_with_exit_code_1(
    outsider: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    junit, report_html = tmp_path / "conformance.xml", tmp_path / "conformance.html"
    argv = ["conformance", "--a2a", outsider, "--only", "a2a", "--allow-writes", "--timeout", "10", "--json"]
    code = main([*argv, "--junit", str(junit), "--html", str(report_html)])
    report = json.loads(capsys.readouterr().out)

    assert code == 1
    checks = {c["id"]: c for c in report["checks"]}
    assert checks["a2a.ext-examples"]["outcome"] == "fail"
    assert checks["a2a.ext-examples"]["level"] == "SHOULD"
    assert "order examples[1] at quantity: 'three' is not of type 'integer'" in checks["a2a.ext-examples"]["reason"]
    assert checks["a2a.ext-modes"]["outcome"] == "fail"
    assert "skill ship inputModes: application/json;schema=shipment" in checks["a2a.ext-modes"]["reason"]
    assert report["must_failed"] == ["a2a.ext-modes"]
    # what it does well passes: card, extension declared, the valid example makes a task
    for check_id in ("a2a.card", "a2a.card-fields", "a2a.ext-declared", "a2a.ext-schemas", "a2a.ext-task"):
        assert checks[check_id]["outcome"] == "pass", checks[check_id]
    # it takes invalid data as a task (a SHOULD of the extension), and A2A cannot delete what was made
    assert (
        checks["a2a.ext-invalid"]["outcome"] == "fail" and "answered with task" in checks["a2a.ext-invalid"]["reason"]
    )
    assert (
        checks["cleanup.deleted"]["outcome"] == "skip"
        and "A2A has no way to delete" in checks["cleanup.deleted"]["reason"]
    )
    assert {c["section"] for c in report["checks"]} == {"a2a", "cleanup"}

    for written in (junit, report_html):
        assert written.stat().st_mode & 0o777 == 0o600
    suites = etree.parse(str(junit)).getroot()
    failures = {case.get("name"): case.find("failure") for case in suites.iter("testcase")}
    assert failures["a2a.ext-modes [MUST]"] is not None and failures["a2a.ext-modes [MUST]"].get("type") == "MUST"
    assert failures["a2a.ext-examples [SHOULD]"].get("type") == "SHOULD"  # type: ignore[union-attr]
    page = report_html.read_text()
    assert "not conformant" in page and "application/json;schema=shipment" in page
    assert not any(fetch in page for fetch in ("<script", "<link", "src=", "url(")), "the page fetches nothing"
