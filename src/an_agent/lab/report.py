"""``--report DIR``: one self-contained HTML file per run (no scripts, no external resources).

It shows the outcome and the closed-loop checks, the KPIs over simulated time next to the baseline
without collaboration (inline SVG step charts), a service intent's targets against the area's KPIs
with its checks (`an_agent.lab.report_intent`), trouble tickets sent to field engineers with their
copilot dialogue, a sequence diagram of every NETCONF exchange between the agents (inline SVG), the
agents' notes, and every task with its structured payload and result. The diagram and the notes can be
narrowed to one trace, a fault's or a ticket's (`an_agent.tracing`), by radio buttons and CSS alone.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from an_agent.agents.engineer import ENGINEER
from an_agent.agents.exchange import NOTIFICATIONS
from an_agent.lab.chaos import chaos_html
from an_agent.lab.report_intent import intent_section
from an_agent.lab.result import LabResult
from an_agent.lab.svgchart import Line, step_chart
from an_agent.lab.text import clock_of, duration

MAX_DIAGRAM_MESSAGES = 800
_COLOURS = {
    "edit-config": "#1f6feb",
    "task-negotiate": "#d97706",
    "get": "#6b7280",
    "create-subscription": "#7c3aed",
    "notification": "#16a34a",
    "TaskStatusUpdateEvent": "#16a34a",
    "SendStreamingMessage": "#0891b2",
    "GetTask": "#6b7280",
    "GET agent-card": "#6b7280",
    "get-schema-template": "#be185d",
}


def write_report(result: LabResult, directory: Path) -> Path:
    """Write ``<topology>.html`` into ``directory`` (created if needed); returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{result.topology.name}.html"
    path.write_text(render(result), encoding="utf-8")
    return path


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def render(result: LabResult) -> str:
    topo = result.topology
    out = result.outcome
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>an-agent lab: {_e(topo.name)}</title>",
        f"<style>{_CSS}{_trace_rules(result)}</style></head><body>",
        f"<h1>Lab run: {_e(topo.name)}</h1>",
        f"<p class='lead'>{_e(topo.description)}</p>",
        f"<p>{topo.sites} sites, {topo.cells} cells, {topo.links} transport links, "
        f"{len(result.agents)} agents; seed {topo.seed}; simulated start {_e(topo.start_time)}; "
        f"{_e(duration(result.run.simulated_seconds))} simulated in {result.run.wall_seconds:.1f} s.</p>",
        _summary(result),
        "<h2>Closed-loop checks</h2>",
        "<ul class='checks'>"
        + "".join(
            f"<li class='{'ok' if c.ok else 'fail'}'><b>{'&#10003;' if c.ok else '&#10007;'} {_e(c.name)}"
            f"</b>: {_e(c.detail)}</li>"
            for c in out.checks
        )
        + "</ul>",
        "<h2>KPIs over time</h2>",
        "<p>Solid: with the agents. Dashed: baseline without collaboration (manual, sequential handling, no "
        "compensation, no energy-saving change).</p>",
        "<div class='charts'>",
        _chart(result, "users_without_coverage", "Users without coverage"),
        _chart(result, "cells_in_service", "Cells in service"),
        _chart(result, "energy_kw", "Energy use (kW)"),
        "</div>",
        intent_section(result),
        _field_tickets(result),
        chaos_html(result.chaos),
        "<h2>Agent interactions</h2>",
        "<p>Every NETCONF operation between agents (hover for the task and detail); red dots are what an agent "
        "decided or did.</p>",
        _trace_filter(result),
        "<div class='traced'>",
        _legend(),
        _sequence(result),
        "<h2>Agents</h2>",
        _agents(result),
        "<h2>What the agents noted</h2>",
        "<table><tr><th>time</th><th>agent</th><th>kind</th><th>note</th></tr>"
        + "".join(
            f"<tr data-trace='{_e(_trace(n))}'><td>{clock_of(result, n['t'])}</td><td>{_e(n['agent'])}</td>"
            f"<td>{_e(n['kind'])}</td><td>{_e(n['text'])}</td></tr>"
            for n in result.notes
        )
        + "</table>",
        "<h2>Tasks</h2>",
        _tasks(result),
        "</div></body></html>",
    ]
    return "\n".join(parts)


def _summary(result: LabResult) -> str:
    out, kpis, base = result.outcome, result.kpis, result.baseline
    state = "complete" if out.closed_loop else "NOT complete"
    rows = []
    for fault in out.faults:
        cause = fault.root_cause
        rows.append(
            f"<tr><td>{_e(fault.type)} on {_e(fault.target)}</td><td>{clock_of(result, fault.injected)}</td>"
            f"<td>{len(fault.affected_sites)}</td>"
            f"<td>{_e(cause.text) if cause else '<b>not found</b>'}</td>"
            f"<td>{_e(cause.decided_by) if cause else '-'}</td>"
            f"<td>{_e(fault.repaired_by or '-')} ({_e(fault.repair_kind or '-')})</td>"
            f"<td>{_e(duration(fault.time_to_restore_s))}</td></tr>"
        )
    return (
        f"<div class='summary {'ok' if out.closed_loop else 'fail'}'>Closed loop {state}.</div>"
        "<table><tr><th>fault</th><th>at</th><th>sites out</th><th>root cause found</th><th>decided by</th>"
        "<th>repaired by</th><th>time to restore</th></tr>" + "".join(rows) + "</table>"
        "<table class='compare'><tr><th></th><th>with agents</th><th>without collaboration</th></tr>"
        f"<tr><td>time to restore</td><td>{_e(duration(out.time_to_restore_s))}</td>"
        f"<td>{_e(duration(base['time_to_restore_s']))}</td></tr>"
        f"<tr><td>user-minutes without coverage</td><td>{kpis['user_minutes_without_coverage']:,.0f}</td>"
        f"<td>{base['user_minutes_without_coverage']:,.0f}</td></tr>"
        f"<tr><td>energy (kWh)</td><td>{kpis['energy_kwh']:,.1f}</td><td>{base['energy_kwh']:,.1f}</td></tr>"
        f"<tr><td>NETCONF operations between agents</td><td>{result.run.netconf_operations}</td><td>-</td></tr>"
        "</table>"
    )


def _chart(result: LabResult, field: str, title: str) -> str:
    series = [(p["t"], float(p[field])) for p in result.kpis["series"]]
    baseline = [(p["t"], float(p[field])) for p in result.baseline["series"]]
    if not series:
        return ""
    t_end = max([series[-1][0], baseline[-1][0] if baseline else 0.0, result.run.simulated_seconds]) or 1.0
    lines = [Line(baseline, "#9ca3af", "6 4", "baseline"), Line(series, label="with the agents")]
    return step_chart(title, lines, t_end, lambda t: clock_of(result, t))


def _legend() -> str:
    return (
        "<p class='legend'>"
        + " ".join(f"<span style='color:{c}'>&#9632; {_e(op)}</span>" for op, c in _COLOURS.items())
        + "</p>"
    )


def _sequence(result: LabResult) -> str:
    """Lifelines per agent; an arrow per NETCONF exchange, a dot with text per agent note, in time order."""
    rows: list[tuple[float, int, str, dict[str, Any]]] = [(m["t"], m["order"], "message", m) for m in result.messages]
    rows += [(n["t"], n["order"], "note", n) for n in result.notes if n["agent"] != "scenario"]
    rows.sort(key=lambda r: (r[0], r[1]))
    shown = rows[:MAX_DIAGRAM_MESSAGES]
    names = [a.name for a in result.agents]
    for _, _, kind, item in shown:
        for who in (item["from"], item["to"]) if kind == "message" else (item["agent"],):
            if who not in names:
                names.append(who)
    col, row, left, top = 150, 20, 70, 46
    width = left + col * len(names) + 420  # room for the notes of the last lifeline
    height = top + row * (len(shown) + 1)
    xs = {name: left + col * i + col // 2 for i, name in enumerate(names)}
    svg = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' class='seq'>",
        "<defs><marker id='arrow' viewBox='0 0 10 10' refX='10' refY='5' markerWidth='7' markerHeight='7' "
        "orient='auto-start-reverse'><path d='M 0 0 L 10 5 L 0 10 z' fill='context-stroke'/></marker></defs>",
    ]
    for name, x in xs.items():
        svg.append(
            f"<text x='{x}' y='18' text-anchor='middle' class='actor'>{_e(name)}</text>"
            f"<line x1='{x}' y1='26' x2='{x}' y2='{height - 4}' stroke='#cbd5e1' stroke-dasharray='4 3'/>"
        )
    for i, (t, _, kind, item) in enumerate(shown):
        y = top + row * i
        svg.append(f"<text x='4' y='{y + 4}' class='time'>{clock_of(result, t)}</text>")
        if kind == "note":
            x = xs[item["agent"]]
            text = item["text"] if len(item["text"]) <= 90 else item["text"][:89] + "\u2026"
            svg.append(
                f"<g data-trace='{_e(_trace(item))}'><title>{_e(item['agent'])}: {_e(item['text'])}</title>"
                f"<circle cx='{x}' cy='{y}' r='4' fill='#b91c1c'/>"
                f"<text x='{x + 8}' y='{y + 4}' class='note'>{_e(text)}</text></g>"
            )
            continue
        m = item
        x1, x2 = xs[m["from"]], xs[m["to"]]
        colour = _COLOURS.get(m["operation"], "#111")
        notified = m["operation"] in NOTIFICATIONS
        dash = " stroke-dasharray='5 3'" if notified else ""
        label = m["commuType"] if notified else f"{m['operation']} {m['commuType']}"
        if m["status"] and (notified or m["operation"] == "task-negotiate"):
            label += f" [{m['status']}]"
        detail = f"{m['from']} -> {m['to']}: {m['operation']} {m['commuType']} {m['task_id'] or ''}\n{m['summary']}"
        svg.append(
            f"<g data-trace='{_e(_trace(m))}'><title>{_e(detail)}</title>"
            f"<line x1='{x1}' y1='{y}' x2='{x2}' y2='{y}' stroke='{colour}' stroke-width='1.6'{dash} "
            f"marker-end='url(#arrow)'/>"
            f"<text x='{(x1 + x2) / 2}' y='{y - 3}' text-anchor='middle' class='msg'>{_e(label)}</text></g>"
        )
    svg.append("</svg>")
    more = len(rows) - len(shown)
    note = f"<p>{more} later entries are not drawn; the JSON output has them all.</p>" if more > 0 else ""
    return "<div class='scroll'>" + "".join(svg) + "</div>" + note


def _trace(row: dict[str, Any]) -> str:
    """The trace id of a message or note row ("" when it has none)."""
    return str(row.get("trace_id") or (row.get("details") or {}).get("trace_id") or "")


def _origins(result: LabResult) -> dict[str, str]:
    """The run's traces: each fault's and outside request's trace id, with its note."""
    origins = {_trace(n): f"{n['agent']}: {n['text']}" for n in result.notes if n["kind"] in ("fault", "ticket")}
    return {trace: label for trace, label in origins.items() if trace}


def _trace_filter(result: LabResult) -> str:
    """A choice of the run's traces that narrows what follows in ``div.traced`` (the interactions and the
    notes) to one trace: radio buttons, and a CSS rule per trace (`_trace_rules`); no script."""
    origins = _origins(result)
    if not origins:
        return ""
    controls = [
        "<p class='trace-filter'>Show one trace (a fault or request and every task it caused, as 'an-agent trace' "
        "follows it):</p><input type='radio' name='trace' id='trace-all' checked><label for='trace-all'>all</label>"
    ]
    controls += [
        f"<input type='radio' name='trace' id='trace-{index}'><label for='trace-{index}' title='{_e(trace)}'>"
        f"{_e(label[:80])}</label>"
        for index, (trace, label) in enumerate(origins.items())
    ]
    return "".join(controls)


def _trace_rules(result: LabResult) -> str:
    """The CSS of `_trace_filter`: with trace N chosen, whatever belongs to another trace is hidden."""
    return "\n".join(
        f"#trace-{index}:checked ~ .traced [data-trace]:not([data-trace='{trace}']) {{ display: none; }}"
        for index, trace in enumerate(_origins(result))  # hex digits: nothing to escape
    )


FIELD_NOTE_KINDS = (
    "ticket_received",
    "ticket_joined",
    "copilot_question",
    "copilot_reply",
    "field_work",
    "field_step",
    "ticket_closed",
)
"""The notes of draft section 2.1 steps 6-8: the ticket, the engineer's dialogue with the copilot, the repair."""


def _field_tickets(result: LabResult) -> str:
    """The trouble tickets sent to field engineers, and the dialogue and work that closed them (empty: none)."""
    tickets = [n for n in result.notes if n["kind"] == "ticket_received"]
    if not tickets:
        return ""
    parts = ["<h2>Trouble tickets and the FME copilot dialogue</h2>"]
    for ticket in tickets:
        payload = ticket["details"].get("ticket", {})
        rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in payload.items())
        parts.append(
            f"<h3>Ticket {_e(payload.get('ticket_id', ''))} ({_e(ticket['agent'])}, "
            f"{clock_of(result, ticket['t'])})</h3><table>{rows}</table>"
        )
    lines = []
    for note in result.notes:
        if note["kind"] not in FIELD_NOTE_KINDS or note["kind"] == "ticket_received":
            continue
        who = {"copilot_question": "engineer", "copilot_reply": note["agent"]}.get(note["kind"], note["agent"])
        who = "engineer" if who == ENGINEER else who
        text = note["details"].get("question", note["text"]) if note["kind"] == "copilot_question" else note["text"]
        lines.append(
            f"<tr class='{_e(note['kind'])}'><td>{clock_of(result, note['t'])}</td><td>{_e(who)}</td>"
            f"<td>{_e(text)}</td></tr>"
        )
    parts.append(
        "<table class='dialogue'><tr><th>time</th><th>who</th><th>said or did</th></tr>" + "".join(lines) + "</table>"
    )
    return "\n".join(parts)


def _agents(result: LabResult) -> str:
    rows = []
    for agent in result.agents:
        ops = agent.operations
        by = ", ".join(f"{k} {v}" for k, v in ops.by_operation.items()) or "-"
        rows.append(
            f"<tr><td>{_e(agent.name)}</td><td>{_e(agent.role)}</td>"
            f"<td>{_e(', '.join(agent.regions) or 'all')}</td><td>{_e(agent.address)}</td>"
            f"<td>{ops.requests_sent} ({_e(by)})</td><td>{ops.requests_received}</td>"
            f"<td>{ops.notifications_received}</td></tr>"
        )
    return (
        "<table><tr><th>agent</th><th>role</th><th>regions</th><th>address</th><th>NETCONF requests sent</th>"
        "<th>requests received</th><th>notifications received</th></tr>" + "".join(rows) + "</table>"
    )


def _tasks(result: LabResult) -> str:
    rows = []
    for task in result.tasks:
        details = ""
        if task["payload"] is not None:
            details += (
                f"<details><summary>payload</summary><pre>{_e(json.dumps(task['payload'], indent=2))}</pre></details>"
            )
        if task["result"] is not None:
            details += (
                f"<details><summary>result</summary><pre>{_e(json.dumps(task['result'], indent=2))}</pre></details>"
            )
        rows.append(
            f"<tr class='{_e(task['status'])}'><td>{_e(task['agent'])}</td><td>{_e(task['task_id'])}</td>"
            f"<td>{_e(task['from'])}</td><td>{_e(task['status'])}</td><td>{_e(task['description'])}</td>"
            f"<td>{_e(task['reason'] or '')}{details}</td></tr>"
        )
    return (
        "<table class='tasks'><tr><th>executed by</th><th>task</th><th>assigned by</th><th>status</th>"
        "<th>description</th><th>result</th></tr>" + "".join(rows) + "</table>"
    )


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#111;max-width:1400px}
h1{margin-bottom:4px}h2{margin-top:32px;border-bottom:1px solid #ddd}
.lead{color:#444}
table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6}
.summary{font-size:18px;font-weight:600;padding:8px 12px;border-radius:6px;display:inline-block}
.summary.ok{background:#dcfce7}.summary.fail{background:#fee2e2}
.checks li.ok{color:#166534}.checks li.fail{color:#991b1b}
.charts{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;border:1px solid #eee;padding:4px}
svg text{font-size:11px;fill:#333}svg .title{font-size:13px;font-weight:600}svg .level{font-size:10px}
.seq .actor{font-size:12px;font-weight:600}.seq .msg{font-size:10px}.seq .time{font-size:10px;fill:#666}
.seq .note{font-size:10px;font-style:italic;fill:#b91c1c}
.scroll{overflow:auto;max-height:900px;border:1px solid #eee}
.legend span{margin-right:12px;font-size:13px}
pre{white-space:pre-wrap;font-size:12px;background:#f8fafc;padding:6px;margin:4px 0}
tr.failed td{background:#fff7ed}
.dialogue tr.copilot_question td{background:#eff6ff}.dialogue tr.copilot_reply td{background:#f0fdf4}
"""
