"""pyang --strict, pyang --lint and yanglint on the shipped modules (yang/tools.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from an_agent.errors import YangError
from an_agent.yang import MODULES_DIR
from an_agent.yang.tools import CheckReport, check, lint_findings, tree

EXPECT = Path(__file__).parent / "expect" / "lint.out"


@pytest.fixture(scope="module")
def report() -> CheckReport:
    return check()


def test_pyang_strict_reports_no_errors(report: CheckReport) -> None:
    assert [f.expect_line() for f in report.findings if f.tool == "pyang"] == []


def test_yanglint_reports_nothing(report: CheckReport) -> None:
    assert [f.message for f in report.findings if f.tool == "yanglint"] == []
    assert re.fullmatch(r"\d+\.\d+\.\d+", report.tools["yanglint"])


def test_every_shipped_module_is_checked(report: CheckReport) -> None:
    assert report.modules == sorted(p.name for p in MODULES_DIR.glob("*.yang"))
    assert {"irtf-agent@2025-06-01.yang", "agent-message@2025-06-01.yang"} <= set(report.modules)


def test_lint_findings_are_the_expected_ones() -> None:
    """Like pyang's test_bad/expect: a new lint finding must be fixed or added to expect/lint.out."""
    got = [f.expect_line() for f in lint_findings()]
    assert got == EXPECT.read_text(encoding="utf-8").splitlines()


def test_all_lint_findings_are_kept_on_purpose(report: CheckReport) -> None:
    assert report.ok
    assert report.other == [] and report.errors == []
    assert all(f.reason for f in report.kept)
    camel = {f.message.split()[0] for f in report.kept if f.module.startswith(("irtf-agent", "agent-message"))}
    assert {"commuType", "task-sendFrom", "dataParam", "FEASIBILITY"} <= camel


def test_report_serialises_for_table_and_json(report: CheckReport) -> None:
    doc = json.loads(json.dumps(report.to_dict()))
    assert doc["ok"] is True
    assert len(doc["findings"]) == len(report.findings) == len(report.rows())
    assert all(len(row) == len(CheckReport.HEADERS) for row in report.rows())
    assert doc["findings"][0].keys() >= {"tool", "module", "line", "severity", "classification", "reason", "message"}


def test_report_as_text(report: CheckReport) -> None:
    lines = report.to_text().splitlines()
    assert lines[0].split() == list(CheckReport.HEADERS)
    assert len(lines) == 1 + len(report.findings) + 2
    assert lines[-1].startswith(report.summary())
    assert any("commuType is not hyphenated" in line and "kept" in line for line in lines)


def test_check_finds_errors_in_a_broken_module(tmp_path: Path) -> None:
    for module in MODULES_DIR.glob("*.yang"):
        shutil.copy(module, tmp_path)
    broken = tmp_path / "irtf-agent@2025-06-01.yang"
    text = broken.read_text(encoding="utf-8")
    # One of the draft's own mistakes: a leafref to a node that does not exist.
    broken.write_text(text.replace('path "/agtask:context/agtask:id";', 'path "/agtask:contexts/agtask:id";'))
    bad = check(tmp_path)
    assert not bad.ok
    assert any(f.tool == "pyang" and f.module == broken.name and f.severity == "error" for f in bad.errors)
    assert any(f.tool == "yanglint" and f.severity == "error" for f in bad.errors)


def test_check_without_yanglint_says_how_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(YangError, match="apt-get install libyang2-tools"):
        check()


def test_tree_shows_the_draft_model() -> None:
    text = tree()
    for line in (
        "+--ro agent",
        "+--rw task* [task-id]",
        "+--ro task-status?           agtmsg:task-status",
        "+--rw msg-data*              -> /data-params/id",
        "+--rw agtrace:traceparent?   traceparent",  # an-agent-trace's augment (the columns widen for it)
        "+--rw response-info!",
        "+---x task-negotiate",
        "+---n condition-notifications",
        "+--ro netconf-state",
    ):
        assert line in text, line


def test_tree_of_one_module() -> None:
    text = tree(names=["irtf-agent"])
    assert text.startswith("module: irtf-agent")
    assert "netconf-state" not in text
    with pytest.raises(YangError, match="no-such-module"):
        tree(names=["no-such-module"])
