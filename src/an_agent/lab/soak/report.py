"""The soak's report: one JSON object (``lab soak --json``), a text summary, and a self-contained HTML page.

Contents (the contract of ``--json``, format ``an-agent-soak/1``): ``ok``; the options and ``seed``;
``schedule`` (every event as drawn from the seed: simulated seconds after the start, kind, target,
duration); ``injected`` (the faults played, by kind, network and lab; ``drawn``: how many the schedule
had, played until the duration was over); ``recovery`` (time to restore a network fault,
simulated seconds, and time for a killed agent to serve again, wall seconds: p50, p99, max);
``loops`` (closed, total); ``checkers`` (name, ok, detail, and ``counter_example`` when it failed:
``problem`` and the ``journal`` excerpt); ``along_the_way`` (each checker's first failure during the
run); ``chaos`` (each lab fault as played); ``resources`` (per agent: first and last sample); ``run``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any

from an_agent.lab.soak.evidence import Evidence
from an_agent.lab.soak.run import SoakResult

FORMAT = "an-agent-soak/1"


def percentiles(values: list[float]) -> dict[str, float | None]:
    """p50, p99 and max of ``values`` (nearest rank); None for each when there are none."""
    if not values:
        return {"count": 0, "p50": None, "p99": None, "max": None}
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))], 3)

    return {"count": len(ordered), "p50": at(0.5), "p99": at(0.99), "max": round(ordered[-1], 3)}


def soak_json(result: SoakResult) -> dict[str, Any]:
    """The ``--json`` object (module docstring)."""
    evidence = result.evidence
    start = evidence.start
    network = Counter(str(f["type"]) for f in evidence.faults)
    lab = Counter(str(c["kind"]) for c in evidence.chaos)
    tickets = sum(1 for n in evidence.notes if n.get("agent") == "bss" and n.get("kind") == "ticket")
    restore = [f["restored_at"] - f["injected_at"] for f in evidence.faults if f.get("restored_at") is not None]
    restarts = [c["restart_wall_s"] for c in evidence.chaos if c.get("restart_wall_s") is not None]
    per_agent: dict[str, list[dict[str, Any]]] = {}
    for sample in evidence.samples:
        per_agent.setdefault(sample["agent"], []).append(sample)
    options = result.options
    return {
        "format": FORMAT,
        "ok": result.ok,
        "topology": result.topology,
        "seed": options.seed,
        "options": {
            "duration_s": options.duration,
            "chaos": "random" if options.chaos else "none",
            "rate_per_min": options.rate,
            "netns": options.netns,
            "pace": options.pace,
        },
        "schedule": [e.to_dict() for e in result.schedule],
        "injected": {
            "total": sum(network.values()) + sum(lab.values()),
            "network": sum(network.values()),
            "lab": sum(lab.values()),
            "by_kind": dict(sorted((network + lab).items())),
            "tickets": tickets,
            "drawn": sum(1 for e in result.schedule if e.is_fault),
        },
        "recovery": {
            "network_fault_restore_sim_s": percentiles(restore),
            "agent_restart_wall_s": percentiles(restarts),
        },
        "loops": {"closed": len(restore), "total": len(evidence.faults)},
        "checkers": [v.to_dict() for v in result.verdicts],
        "along_the_way": result.along_the_way,
        "chaos": [{**c, "at": round(c["at"] - start, 1), "end": round(c["end"] - start, 1)} for c in evidence.chaos],
        "resources": {
            agent: {"first": samples[0], "last": samples[-1], "samples": len(samples)}
            for agent, samples in sorted(per_agent.items())
        },
        "run": {
            "end_reason": result.end_reason,
            "wall_seconds": result.wall_seconds,
            "simulated_seconds": round(evidence.end - start, 1),
            "journal_notes": len(evidence.notes),
            "exchanges": len(evidence.exchanges),
            "tasks": sum(len(t) for t in evidence.tasks.values()),
            "leftovers": result.leftovers,
        },
    }


def soak_text(report: dict[str, Any]) -> str:
    """A few lines for a person: verdict, faults, recovery, each checker."""
    injected, recovery = report["injected"], report["recovery"]
    lines = [
        f"soak of {report['topology']}, seed {report['seed']}: {'every checker held' if report['ok'] else 'FAILED'}",
        f"  faults injected: {injected['total']} ({injected['network']} network, {injected['lab']} lab; "
        + ", ".join(f"{k} {v}" for k, v in injected["by_kind"].items())
        + f"), tickets {injected['tickets']}",
        f"  loops closed: {report['loops']['closed']} of {report['loops']['total']}; time to restore (simulated s) "
        f"p50 {recovery['network_fault_restore_sim_s']['p50']} p99 {recovery['network_fault_restore_sim_s']['p99']}; "
        f"agent restart (wall s) p50 {recovery['agent_restart_wall_s']['p50']} "
        f"p99 {recovery['agent_restart_wall_s']['p99']}",
        f"  run: {report['run']['wall_seconds']} s wall, {report['run']['simulated_seconds']} s simulated, "
        f"ended {report['run']['end_reason']}",
    ]
    for checker in report["checkers"]:
        lines.append(f"  [{'ok' if checker['ok'] else 'FAIL'}] {checker['name']}: {checker['detail']}")
        if not checker["ok"]:
            lines.append(f"        first counter-example: {checker['counter_example']['problem']}")
    for leftover in report["run"]["leftovers"]:
        lines.append(f"  left over: {leftover}")
    return "\n".join(lines)


def write_html(
    report: dict[str, Any], directory: Path, evidence: Evidence | None = None, logs: Path | None = None
) -> Path:
    """Write ``soak.html`` and ``soak.json`` into ``directory`` (0700, files 0600); the HTML path.

    With ``evidence``, also ``evidence.json``: the whole journal, durable state, fault records, change log
    and samples the checkers judged (to read a counter-example in its context); with ``logs``, a copy of
    the agents' logs in ``logs/``.
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if logs is not None and logs.is_dir():
        (directory / "logs").mkdir(mode=0o700, exist_ok=True)
        for log in sorted(logs.glob("*.log")):
            _write(directory / "logs" / log.name, log.read_text(encoding="utf-8", errors="replace"))
    if evidence is not None:
        _write(directory / "evidence.json", json.dumps(dataclasses.asdict(evidence), indent=0))

    def table(head: list[str], rows: list[list[Any]]) -> str:
        cells = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
        return "<table><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + f"</tr>{cells}</table>"

    checkers = []
    for c in report["checkers"]:
        example = ""
        if not c["ok"]:
            excerpt = json.dumps(c["counter_example"]["journal"], indent=1)[:6000]
            example = f"{c['counter_example']['problem']}<pre>{escape(excerpt)}</pre>"
        checkers.append([c["name"], "held" if c["ok"] else "FAILED", c["detail"], example])
    checker_rows = "".join(
        f"<tr><td>{escape(n)}</td><td>{escape(v)}</td><td>{escape(d)}</td><td>{e}</td></tr>" for n, v, d, e in checkers
    )
    recovery = report["recovery"]
    body = (
        f"<h1>Soak of {escape(report['topology'])}, seed {report['seed']}: "
        f"{'every checker held' if report['ok'] else 'FAILED'}</h1>"
        f"<p>{escape(soak_text(report).splitlines()[1])}</p>"
        "<h2>Checkers</h2><table><tr><th>checker</th><th>verdict</th><th>detail</th><th>first counter-example</th></tr>"
        f"{checker_rows}</table>"
        "<h2>Recovery</h2>"
        + table(
            ["what", "count", "p50", "p99", "max"],
            [
                ["network fault restored (simulated s)", *recovery["network_fault_restore_sim_s"].values()],
                ["killed agent serving again (wall s)", *recovery["agent_restart_wall_s"].values()],
            ],
        )
        + "<h2>Injected by kind</h2>"
        + table(["kind", "count"], [[k, v] for k, v in report["injected"]["by_kind"].items()])
        + "<h2>Lab faults as played</h2>"
        + table(
            ["at (s)", "end (s)", "kind", "target", "detail", "integrity", "error"],
            [
                [
                    c["at"],
                    c["end"],
                    c["kind"],
                    c["target"],
                    c.get("detail", ""),
                    c.get("integrity", ""),
                    c.get("error") or "",
                ]
                for c in report["chaos"]
            ],
        )
        + "<h2>Resources (first and last sample per agent)</h2>"
        + table(
            ["agent", "RSS KiB", "fds", "threads", "SQLite bytes"],
            [
                [
                    a,
                    f"{r['first']['rss_kb']} -> {r['last']['rss_kb']}",
                    f"{r['first']['fds']} -> {r['last']['fds']}",
                    f"{r['first']['threads']} -> {r['last']['threads']}",
                    f"{r['first']['sqlite_bytes']} -> {r['last']['sqlite_bytes']}",
                ]
                for a, r in report["resources"].items()
            ],
        )
        + "<h2>Schedule as drawn from the seed</h2>"
        + table(
            ["at (simulated s)", "kind", "target", "duration"],
            [[e["at"], e["kind"], e["target"], e["duration"]] for e in report["schedule"]],
        )
    )
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>an-agent soak</title><style>"
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin-bottom:1.5em}"
        "td,th{border:1px solid #ccc;padding:2px 6px;font-size:90%;vertical-align:top}pre{white-space:pre-wrap}"
        f"</style></head><body>{body}</body></html>"
    )
    html = directory / "soak.html"
    _write(html, page)
    _write(directory / "soak.json", json.dumps(report, indent=1))
    return html


def _write(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
