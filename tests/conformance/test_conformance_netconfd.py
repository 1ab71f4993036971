"""`an-agent conformance` against a server we did not write: yuma123 netconfd serving our irtf-agent.

netconfd (behind its own sshd, key login; `bench/reference.py` sets it up and tears it down) holds the
module's data but has no agent behind it: the data-model checks must say what it serves, the
behaviour checks must fail with precise reasons, and nothing may crash.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `bench` is a top-level package of the repository, not installed
    sys.path.insert(0, str(ROOT))

from bench.reference import NetconfdReference  # noqa: E402

from an_agent.conformance import Options, Outcome, Report, Target, run  # noqa: E402
from bench import data  # noqa: E402

pytestmark = [pytest.mark.interop, pytest.mark.slow]  # ~12 s: netconfd and its sshd, an 8 s wait for notifications
MODULES = ROOT / "src" / "an_agent" / "yang" / "modules"
TIMEOUT = 8.0  # also how long the kit waits for notifications netconfd never sends; 3 s was too short for a
# <get> on a loaded machine (netconfd answers through sshd and a process per session)


@pytest.fixture(scope="module")
def report() -> Iterator[Report]:
    with NetconfdReference(MODULES, ["irtf-agent"], data.profile_xml()) as ref:
        credentials = ref.credentials
        target = Target(netconf=(ref.host, ref.port), user=credentials.username, key=credentials.key_file)
        yield run(target, Options(allow_writes=True, timeout=TIMEOUT))


def _finding(report: Report, check_id: str) -> tuple[Outcome, str]:
    found = {f.check.id: f for f in report.findings}[check_id]
    return found.outcome, found.reason


def test_nothing_crashes_and_every_check_has_a_reason(report: Report) -> None:
    assert report.findings
    for f in report.findings:
        assert f.reason, f.check.id
        assert "conformance kit failed" not in f.reason and "without judging" not in f.reason, f.reason
    assert report.must_failed  # netconfd is no agent


def test_the_data_model_checks_say_what_it_serves(report: Report) -> None:
    for check_id in ("netconf.hello-base", "netconf.get-schema", "netconf.modules-compile", "wang.module"):
        assert _finding(report, check_id)[0] is Outcome.PASS, _finding(report, check_id)
    outcome, reason = _finding(report, "wang.model")
    assert outcome is Outcome.PASS
    assert "list tasks/task" in reason and "rpc task-negotiate" in reason
    assert "agent is config true here" in reason  # the reference copy makes the profile configuration
    outcome, reason = _finding(report, "wang.profile-read-only")
    assert outcome is Outcome.FAIL and "it is configuration" in reason
    assert _finding(report, "wang.profile-mandatory")[0] is Outcome.PASS
    # netconfd's own faults, found by the basic checks
    outcome, reason = _finding(report, "netconf.get-schema-unknown")
    assert outcome is Outcome.FAIL and "operation-failed" in reason


def test_the_behaviour_checks_fail_with_precise_reasons(report: Report) -> None:
    assert _finding(report, "wang.task-create")[0] is Outcome.PASS  # netconfd stores the entry
    outcome, reason = _finding(report, "wang.task-notifications")
    assert outcome is Outcome.FAIL and reason == f"statuses (none): no further notification within {TIMEOUT:g} s"
    outcome, reason = _finding(report, "wang.task-result")
    assert outcome is Outcome.FAIL and "<get> shows task-status (none)" in reason
    outcome, reason = _finding(report, "wang.negotiate-feasibility")
    assert outcome is Outcome.FAIL and "no output" in reason
    outcome, reason = _finding(report, "wang.task-sync")
    assert outcome is Outcome.FAIL and "without task-status" in reason
    # the pattern of content is in the module: netconfd enforces it, naming the leaf
    outcome, reason = _finding(report, "wang.task-invalid")
    assert outcome is Outcome.PASS and reason.endswith("content")
    assert all(f.outcome is Outcome.SKIP for f in report.findings if f.check.section == "zhou")
    outcome, reason = _finding(report, "cleanup.deleted")
    assert outcome is Outcome.PASS, reason
