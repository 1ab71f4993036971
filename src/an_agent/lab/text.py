"""Human-readable views of a lab result: the timeline and the outcome (``an-agent lab run`` without --json)."""

from __future__ import annotations

from typing import Any

from an_agent.clock import from_rfc3339, to_rfc3339
from an_agent.lab.chaos import chaos_lines
from an_agent.lab.result import LabResult


def duration(seconds: float | None) -> str:
    """``2h01m``, ``7m30s``, ``45s``; ``-`` when unknown."""
    if seconds is None:
        return "-"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def clock_of(result: LabResult, t: float | None) -> str:
    """The simulated wall-clock time (HH:MM:SS) of an offset from the run's start."""
    if t is None:
        return "--:--:--"
    start = from_rfc3339(result.topology.start_time)
    return to_rfc3339(start + t)[11:19]


def timeline(result: LabResult, trace: str | None = None) -> list[str]:
    """Every NETCONF exchange between agents, with the agents' notes interleaved (marked ``*``); with
    ``trace`` (a trace id or its start) only those of that trace (`an_agent.tracing`). A fault's and a
    ticket's note ends with its trace id, the handle to filter by."""
    rows: list[tuple[float, int, str]] = []

    def kept(row: dict[str, Any]) -> bool:
        found = row.get("trace_id") or (row.get("details") or {}).get("trace_id") or ""
        return trace is None or str(found).startswith(trace)

    for m in filter(kept, result.messages):
        op = m["operation"] if m["operation"] == m["commuType"] else f"{m['operation']} {m['commuType']}"
        detail = m["summary"] if m["ok"] else f"ERROR {m['error']}"
        rows.append(
            (
                m["t"],
                m["order"],
                f"{clock_of(result, m['t'])}  {m['from']:>15} -> {m['to']:<15} {op:<40} "
                f"{m['task_id'] or '-':<42} {detail}",
            )
        )
    for n in filter(kept, result.notes):
        origin = n["kind"] in ("fault", "ticket") and (n.get("details") or {}).get("trace_id")
        rows.append(
            (
                n["t"],
                n["order"],
                f"{clock_of(result, n['t'])}  * {n['agent']}: {n['kind'].replace('_', ' ')}: {n['text']}"
                + (f" [trace {origin}]" if origin else ""),
            )
        )
    head = f"{'time':8}  {'from':>15} -> {'to':<15} {'NETCONF operation (commuType)':<40} {'task':<42} status / detail"
    return [head, *(text for _, _, text in sorted(rows, key=lambda r: (r[0], r[1])))]


def outcome(result: LabResult) -> list[str]:
    out = result.outcome
    kpis = result.kpis
    base = result.baseline
    run = result.run
    checks = out.checks
    passed = sum(1 for c in checks if c.ok)
    lines = [
        f"OUTCOME of {result.topology.name}: closed loop "
        + ("COMPLETE" if out.closed_loop else "NOT complete")
        + f" ({passed}/{len(checks)} checks)"
    ]
    for fault in out.faults:
        lines.append(
            f"  fault {fault.type} on {fault.target} at {clock_of(result, fault.injected)}"
            + (f": {len(fault.affected_sites)} site(s) out of service" if fault.affected_sites else "")
        )
        cause = fault.root_cause
        if cause:
            lines.append(f"    root cause: {cause.text}")
            lines.append(
                f"      diagnosed by {cause.diagnosed_by}, decided by {cause.decided_by} at "
                f"{clock_of(result, cause.t)} ({duration(cause.time_to_diagnose_s)} after the fault)"
            )
        else:
            lines.append(
                "    root cause: NOT FOUND"
                + (f" (agents concluded: {'; '.join(fault.other_conclusions)})" if fault.other_conclusions else "")
            )
        lines.append(
            f"    repaired by {fault.repaired_by or '-'} ({fault.repair_kind or '-'}) at "
            f"{clock_of(result, fault.repaired)}; restored at {clock_of(result, fault.restored)}; "
            f"time to restore {duration(fault.time_to_restore_s)}"
        )
    if out.actions:
        lines.append("  actions:")
        for action in out.actions:
            lines.append(f"    {clock_of(result, action['t'])} {action['agent']}: {action['text']}")
    before, during, after = kpis["before"], kpis["during"], kpis["after"]
    lines += [
        "  KPIs                          before      during (worst)  after",
        f"    cells in service            {before['cells_in_service']:>6}/{before['cells_total']:<4} "
        f"{during['min_cells_in_service']:>10g}      {after['cells_in_service']:>6}",
        f"    users without coverage      {before['users_without_coverage']:>11g} "
        f"{during['max_users_without_coverage']:>10g}      {after['users_without_coverage']:>6g}",
        f"    energy use (kW)             {before['energy_kw']:>11g} {during['max_energy_kw']:>10g}      "
        f"{after['energy_kw']:>6g}",
        "  with agents vs. without collaboration (baseline: manual, sequential, no compensation)",
        f"    time to restore             {duration(out.time_to_restore_s):>11} "
        f"{duration(base['time_to_restore_s']):>10}",
        f"    user-minutes w/o coverage   {kpis['user_minutes_without_coverage']:>11,.0f} "
        f"{base['user_minutes_without_coverage']:>10,.0f}",
        f"    energy (kWh)                {kpis['energy_kwh']:>11,.1f} {base['energy_kwh']:>10,.1f}",
        f"  NETCONF between agents: {run.netconf_operations} operations ({run.netconf_requests} requests, "
        f"{run.netconf_notifications} notifications)",
    ]
    senders = [(a.name, a.operations) for a in result.agents] + list(result.external_clients.items())
    for name, ops in senders:
        by = ", ".join(f"{k} {v}" for k, v in ops.by_operation.items()) or "-"
        lines.append(
            f"    {name:<18} sent {ops.requests_sent:>4} ({by}); received "
            f"{ops.requests_received} requests, {ops.notifications_received} notifications"
        )
    lines.append(
        f"  run: {duration(run.simulated_seconds)} simulated in {run.wall_seconds:.1f} s wall time "
        f"(ended: {run.end_reason})"
    )
    lines += chaos_lines(result.chaos)
    lines.append("  checks:")
    for check in checks:
        lines.append(f"    [{'ok' if check.ok else 'FAIL'}] {check.name}: {check.detail}")
    return lines
