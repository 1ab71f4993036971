"""``an-agent conformance``: a client-only check of a running agent, any implementation.

It talks to the agent only through its public faces, as a peer would: NETCONF (RFC 6241 over SSH)
and A2A v1 (HTTP JSON-RPC), and reports, check by check, what the drafts and RFCs ask and what the
agent did. `run` returns a `Report`; `catalogue` lists every check (the docs' table is generated
from it). The registry fills as the section modules are imported: by `run` and `catalogue`, which import
them on first use so that importing this package stays cheap (use `catalogue`, not the registry).

Sections: ``netconf`` (NETCONF and YANG basics), ``wang`` (draft-wang-nmrg-magent-im data model and
interaction), ``zhou`` (draft-zhou-structured-data-schema-interaction), ``a2a`` (A2A and the
input/output-schemas extension), and ``cleanup`` (what the run created is gone), which runs whenever
the run may write (``Options.allow_writes``).
"""

from __future__ import annotations

import re

from an_agent.conformance.checks import CHECKS, SECTIONS, SELECTABLE, Check, Finding, Level, Outcome
from an_agent.conformance.report import FORMAT, Report
from an_agent.conformance.target import Options, Target

__all__ = [
    "FORMAT",
    "SECTIONS",
    "SELECTABLE",
    "Check",
    "Finding",
    "Level",
    "Options",
    "Outcome",
    "Report",
    "Target",
    "catalogue",
    "catalogue_markdown",
    "run",
]


def run(target: Target, options: Options) -> Report:
    """Run the checks against ``target`` (`an_agent.conformance.runner.run`)."""
    # Imported here: the sections bring ncclient, libyang and a2a-sdk, which the CLI's start-up
    # (every command registers its options) must not pay for.
    from an_agent.conformance.runner import run as run_checks

    return run_checks(target, options)


def catalogue() -> list[Check]:
    """Every check, sections in report order."""
    from an_agent.conformance import runner  # noqa: F401 - importing the sections declares their checks

    order = list(SECTIONS)
    return sorted(CHECKS.values(), key=lambda c: order.index(c.section))


def catalogue_markdown() -> str:
    """The table of checks for docs/conformance.md (generated, so it cannot drift from the code)."""
    lines = []
    for section, title in SECTIONS.items():
        lines += [f"### `{section}`: {title}", "", "| Check | Level | Source | What is checked |", "|---|---|---|---|"]
        for c in catalogue():
            if c.section == section:
                writes = " *(with `--allow-writes`)*" if c.writes else ""
                title = re.sub(r"(<[^>]+>)", r"`\1`", c.title)  # XML element names as code, not HTML
                lines.append(f"| `{c.id}` | {c.level} | {c.reference} | {title}{writes} |")
        lines.append("")
    return "\n".join(lines)
