"""A run's report, and its forms: text for a terminal, JSON for scripts, JUnit XML for CI, HTML for a vendor.

JUnit: one ``<testsuite>`` per section, one ``<testcase>`` per check; a failed MUST is a ``<failure
type="MUST">``, a failed SHOULD a ``<failure type="SHOULD">`` (a CI job that tolerates SHOULDs filters
on the type), a skip is ``<skipped>``. HTML: one file with its style inline and no script, nothing
fetched, so it can be mailed as it is.
"""

from __future__ import annotations

import html
from collections import Counter
from dataclasses import dataclass
from typing import Any

from lxml import etree

from an_agent.conformance.checks import SECTIONS, Finding, Level, Outcome
from an_agent.conformance.target import Options, Target

FORMAT = "an-agent-conformance/1"
"""Version of the JSON report's shape (``format`` member)."""


@dataclass(frozen=True)
class Report:
    """The findings of one run against one target."""

    target: Target
    options: Options
    findings: list[Finding]
    started: str
    """RFC 3339 time the run started."""
    seconds: float

    @property
    def must_failed(self) -> list[Finding]:
        return [f for f in self.findings if f.outcome is Outcome.FAIL and f.check.level is Level.MUST]

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(str(f.outcome) for f in self.findings)
        return {o: c.get(o, 0) for o in ("pass", "fail", "skip")}

    @property
    def verdict(self) -> str:
        return "conformant" if not self.must_failed else "not conformant"

    def describe_target(self) -> str:
        parts = []
        if self.target.netconf is not None:
            parts.append(f"NETCONF {self.target.netconf[0]}:{self.target.netconf[1]}")
        if self.target.a2a is not None:
            parts.append(f"A2A {self.target.a2a}")
        return ", ".join(parts) or "(nothing)"

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (``format`` `FORMAT`)."""
        return {
            "format": FORMAT,
            "target": {
                "netconf": None
                if self.target.netconf is None
                else f"{self.target.netconf[0]}:{self.target.netconf[1]}",
                "a2a": self.target.a2a,
            },
            "started": self.started,
            "seconds": round(self.seconds, 3),
            "allow_writes": self.options.allow_writes,
            "sections": [
                s for s in SECTIONS if s in self.options.sections or (s == "cleanup" and self.options.allow_writes)
            ],
            "verdict": self.verdict,
            "counts": self.counts,
            "must_failed": [f.check.id for f in self.must_failed],
            "checks": [f.to_dict() for f in self.findings],
        }

    # -- text --------------------------------------------------------------------------------
    def to_text(self) -> str:
        lines = [f"an-agent conformance: {self.describe_target()}"]
        for section, title in SECTIONS.items():
            mine = [f for f in self.findings if f.check.section == section]
            if not mine:
                continue
            lines.append("")
            lines.append(f"{title}")
            for f in mine:
                lines.append(f"  {str(f.outcome).upper():4}  {f.check.level:6}  {f.check.id:34} {f.check.title}")
                if f.outcome is not Outcome.PASS or f.reason:
                    lines.append(f"        {f.reason}")
        c = self.counts
        lines.append("")
        lines.append(
            f"{c['pass']} passed, {c['fail']} failed ({len(self.must_failed)} MUST), {c['skip']} skipped "
            f"in {self.seconds:.1f} s: {self.verdict}"
        )
        return "\n".join(lines) + "\n"

    # -- JUnit -------------------------------------------------------------------------------
    def to_junit(self) -> bytes:
        suites = etree.Element("testsuites", name="an-agent conformance", time=f"{self.seconds:.3f}")
        for section, title in SECTIONS.items():
            mine = [f for f in self.findings if f.check.section == section]
            if not mine:
                continue
            counts = Counter(f.outcome for f in mine)
            suite = etree.SubElement(
                suites,
                "testsuite",
                name=f"{section}: {title}",
                tests=str(len(mine)),
                failures=str(counts[Outcome.FAIL]),
                skipped=str(counts[Outcome.SKIP]),
                errors="0",
                timestamp=self.started,
            )
            for f in mine:
                case = etree.SubElement(
                    suite, "testcase", classname=f"conformance.{section}", name=f"{f.check.id} [{f.check.level}]"
                )
                if f.outcome is Outcome.FAIL:
                    failure = etree.SubElement(case, "failure", message=f.reason, type=str(f.check.level))
                    failure.text = _details_text(f)
                elif f.outcome is Outcome.SKIP:
                    etree.SubElement(case, "skipped", message=f.reason)
                else:
                    etree.SubElement(case, "system-out").text = f"{f.check.reference}: {f.reason}"
        out: bytes = etree.tostring(suites, xml_declaration=True, encoding="UTF-8", pretty_print=True)
        return out

    # -- HTML --------------------------------------------------------------------------------
    def to_html(self) -> str:
        e = html.escape
        c = self.counts
        rows = []
        for section, title in SECTIONS.items():
            mine = [f for f in self.findings if f.check.section == section]
            if not mine:
                continue
            rows.append(f'<tr class="section"><th colspan="5">{e(title)}</th></tr>')
            for f in mine:
                details = "".join(
                    f"<dt>{label}</dt><dd><pre>{e(value)}</pre></dd>"
                    for label, value in (("sent", f.sent), ("came back", f.received), ("expected", f.expected))
                    if value
                )
                more = f"<details><summary>exchange</summary><dl>{details}</dl></details>" if details else ""
                rows.append(
                    f'<tr class="{f.outcome}"><td class="outcome">{str(f.outcome).upper()}</td>'
                    f"<td>{f.check.level}</td><td><code>{e(f.check.id)}</code></td>"
                    f"<td>{e(f.check.title)}<div class='reason'>{e(f.reason)}</div>{more}</td>"
                    f"<td>{e(f.check.reference)}</td></tr>"
                )
        verdict_class = "pass" if not self.must_failed else "fail"
        return _HTML.format(
            target=e(self.describe_target()),
            started=e(self.started),
            seconds=f"{self.seconds:.1f}",
            writes="yes" if self.options.allow_writes else "no (read-only checks only)",
            verdict=e(self.verdict),
            verdict_class=verdict_class,
            passed=c["pass"],
            failed=c["fail"],
            must=len(self.must_failed),
            skipped=c["skip"],
            rows="\n".join(rows),
        )


def _details_text(f: Finding) -> str:
    parts = [f"{f.check.title} ({f.check.reference}, {f.check.level})", f"reason: {f.reason}"]
    for label, value in (("sent", f.sent), ("came back", f.received), ("expected", f.expected)):
        if value:
            parts.append(f"{label}: {value}")
    return "\n".join(parts)


_HTML = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Conformance report: {target}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; width: 100%; }}
td, th {{ border-bottom: 1px solid #ddd; padding: .4em .6em; text-align: left; vertical-align: top; }}
tr.section th {{ background: #eef; font-size: 1.05em; }}
td.outcome {{ font-weight: bold; }}
tr.pass td.outcome {{ color: #1a7f37; }} tr.fail td.outcome {{ color: #cf222e; }} tr.skip td.outcome {{ color: #777; }}
.reason {{ color: #555; margin-top: .3em; }}
pre {{ white-space: pre-wrap; word-break: break-all; background: #f6f8fa; padding: .4em; margin: 0; }}
.verdict.pass {{ color: #1a7f37; }} .verdict.fail {{ color: #cf222e; }}
</style></head><body>
<h1>Conformance report</h1>
<p><b>Target:</b> {target}<br><b>Started:</b> {started} ({seconds} s)<br>
<b>Interaction checks (writes):</b> {writes}</p>
<p class="verdict {verdict_class}"><b>{verdict}</b>:
{passed} passed, {failed} failed ({must} MUST), {skipped} skipped.</p>
<p>Each check names the document and section it comes from. MUST: a failure means the agent does not
conform; SHOULD: a recommendation it does not follow. Made with <code>an-agent conformance</code>.</p>
<table><thead><tr><th>Outcome</th><th>Level</th><th>Check</th><th>What and why</th><th>Source</th></tr></thead>
<tbody>
{rows}
</tbody></table>
</body></html>
"""
