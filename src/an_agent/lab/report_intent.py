"""The HTML report's service-intent section: the expectations, their checks, targets against KPIs over time.

Per intent (``kpis.intent`` of the result, `an_agent.lab.intent_outcome`): a table of the expectations
(verb, priority, targets, what the lab measured, what the intent agent reported) with the outcome's
intent checks, and one inline SVG chart per KPI an expectation targets: the area's KPI over simulated
time, the target as a horizontal line (a relaxed target drawn over the time it was in force), and
vertical marks where the intent agent noted a miss, a negotiation, a restoration or its report.
"""

from __future__ import annotations

import html
from typing import Any

from an_agent.lab.result import LabResult
from an_agent.lab.svgchart import Level, Line, step_chart
from an_agent.lab.text import clock_of

KPI_TITLES = {
    "coverage_percent": "Coverage of the area (%)",
    "users_without_service": "Users without service",
    "energy_kwh_per_day": "Energy (kWh/day at the current draw)",
}
MARKED = ("intent_missed", "intent_met", "intent_negotiated", "intent_conflict", "intent_restored")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def intent_section(result: LabResult) -> str:
    """The section for every intent of the run (empty without one)."""
    views: list[dict[str, Any]] = result.kpis.get("intent", [])
    return "\n".join(_one(result, view) for view in views)


def _one(result: LabResult, view: dict[str, Any]) -> str:
    agent, intent_id = view["agent"], view["intent_id"]
    checks = [c for c in result.outcome.checks if c.name.startswith(f"intent {intent_id} ")]
    rows = []
    for e in view["expectations"]:
        measured = "; ".join(
            f"{_e(t['name'])} {_e(t['judged_value'])} (worst {_e(t['worst'])}, missed {_e(t['breach_minutes'])} min)"
            for t in e["measured"]["targets"]
        )
        targets = ", ".join(f"{_e(t['name'])} {_e(t['condition'])} {_e(t['value'])}" for t in e["targets"])
        ok = e["measured"]["fulfilled"]
        rows.append(
            f"<tr class='{'ok' if ok else 'fail'}'><td>{_e(e['expectation_id'])}</td><td>{_e(e['verb'])}</td>"
            f"<td>{_e(e['priority'])}</td><td>{targets}</td><td>{'fulfilled' if ok else 'NOT fulfilled'}: "
            f"{measured}</td><td>{_e(e['reported'] or 'no report')}</td></tr>"
        )
    check_items = "".join(
        f"<li class='{'ok' if c.ok else 'fail'}'><b>{'&#10003;' if c.ok else '&#10007;'} {_e(c.name)}</b>: "
        f"{_e(c.detail)}</li>"
        for c in checks
    )
    return (
        f"<h2>Service intent {_e(intent_id)} ({_e(agent)}, area {_e(view['area'])})</h2>"
        f"<p>Observed from {clock_of(result, view['window'][0])} to {clock_of(result, view['window'][1])}. "
        "Red dashed: the target (and a relaxed target while it was in force); purple: what the intent agent "
        "noted (hover).</p>"
        "<table class='intent'><tr><th>expectation</th><th>verb</th><th>priority</th><th>targets</th>"
        "<th>measured by the lab</th><th>reported by the intent agent</th></tr>" + "".join(rows) + "</table>"
        f"<ul class='checks'>{check_items}</ul><div class='charts'>" + _charts(result, view) + "</div>"
    )


def _charts(result: LabResult, view: dict[str, Any]) -> str:
    agent = view["agent"]
    notes = [n for n in result.notes if n["agent"] == agent]
    marks = [(float(n["t"]), n["text"]) for n in notes if n["kind"] in MARKED]
    t_end = max([view["window"][1], *(float(p["t"]) for p in view["series"])])
    relaxed = _relaxations(notes, t_end)
    charts = []
    for e in view["expectations"]:
        for target in e["targets"]:
            name = target["name"]
            levels = [Level(float(target["value"]), f"{e['expectation_id']} target {target['value']:g}")]
            for value, start, end in relaxed.get(e["expectation_id"], []):
                levels.append(Level(value, f"relaxed to {value:g}", "#f97316", start, end))
            points = [(float(p["t"]), float(p[name])) for p in view["series"]]
            line = Line(points, label=f"{name} of {view['area']}")
            title = f"{e['expectation_id']}: {KPI_TITLES.get(name, name)}"
            charts.append(
                step_chart(title, [line], t_end, lambda t: clock_of(result, t), levels, marks, from_zero=False)
            )
    return "".join(charts)


def _relaxations(notes: list[dict[str, Any]], t_end: float) -> dict[str, list[tuple[float, float, float]]]:
    """Expectation -> (relaxed value, from, until) for each negotiated relaxation in the agent's notes."""
    out: dict[str, list[tuple[float, float, float]]] = {}
    for note in notes:
        if note["kind"] != "intent_negotiated":
            continue
        eid = note["details"]["expectation_id"]
        end = next(
            (
                float(n["t"])
                for n in notes
                if n["kind"] == "intent_restored" and n["details"]["expectation_id"] == eid and n["t"] >= note["t"]
            ),
            t_end,
        )
        out.setdefault(eid, []).append((float(note["details"]["value"]), float(note["t"]), end))
    return out
