"""The result of a lab run: agents, messages, tasks, outcome, KPIs, baseline (`an_agent.lab.result`).

`build_result` reads everything from what really happened: the exchanges the agents' NETCONF clients
made, the tasks read back from every agent over NETCONF, the network's fault records and KPI samples,
and the agents' notes. `checks` are the closed-loop conditions a run must meet:

- every injected fault has a root cause noted by an agent with the same fault type and element;
- every fault is repaired and its sites/cells are back in service;
- nothing is left changed in the network: no compensation, no energy-saving adjustment;
- every task ended finished, or failed with a reason;
- the run ended because nothing was left to do (not at max_duration), without activity errors;
- after stop: no agent port still open, no lab thread still alive;
- under a service intent: each expectation fulfilled, as measured and as the intent agent reported
  (`an_agent.lab.intent_outcome`).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from an_agent.agents.engineer import ENGINEER
from an_agent.agents.environment import Layer
from an_agent.agents.guidance import region_of
from an_agent.clock import to_rfc3339
from an_agent.lab.baseline import run_baseline
from an_agent.lab.intent_outcome import intent_checks, intent_view
from an_agent.lab.kpis import KpiSeries
from an_agent.lab.network import FaultRecord
from an_agent.lab.result import (
    AgentSummary,
    Check,
    FaultOutcome,
    LabResult,
    Operations,
    Outcome,
    RootCause,
    RunInfo,
    TopologySummary,
)
from an_agent.lab.runner import Lab
from an_agent.lab.spec import Role
from an_agent.model import Task, TaskStatus, parse_prompt

ACTION_KINDS = (
    "compensation_applied",
    "compensation_cancelled",
    "compensation_expired",
    "energy_saving_suspended",
    "energy_saving_reduced",
    "energy_saving_resumed",
    "decision",
    "repair",
    "trouble_ticket",
    "ticket_received",
    "ticket_joined",
    "ticket_closed",
    "boundary",
    "sub_tasks",
    "restored",
    "intent_decomposed",
    "intent_negotiated",
    "intent_restored",
    "intent_report",
)


def build_result(lab: Lab, tasks: dict[str, list[Task]], leftovers: list[str], open_ports: list[str]) -> LabResult:
    topology = lab.topology
    start = topology.start_time
    notes = lab.journal.notes()
    exchanges = lab.journal.exchanges()
    counts = lab.journal.operation_counts()
    series = KpiSeries(lab.network.samples())
    faults = lab.network.faults()
    end = max([start, *(t for t, _ in series.samples), *(n.time for n in notes)])

    base_series, base_faults = run_baseline(topology)
    first_fault = min((f.injected_at for f in faults), default=start)
    base_end = max([end, *(f["restored_at"] or end for f in base_faults)])
    horizon = max(end, base_end)

    def rel(t: float | None) -> float | None:
        return None if t is None else round(t - start, 3)

    payload_of: dict[str, Any] = {}
    for exchange in exchanges:
        if exchange.commu_type == "taskAssign" and exchange.task_id and exchange.payload is not None:
            payload_of[exchange.task_id] = exchange.payload

    fault_rows = [_fault_row(f, notes, rel) for f in faults]
    task_rows = []
    for agent in sorted(tasks):
        for task in tasks[agent]:
            task_rows.append(_task_row(agent, task, payload_of.get(task.task_id)))
    restore_times = [row.time_to_restore_s for row in fault_rows]
    base_restore = [
        (f["restored_at"] - f["injected_at"]) if f["restored_at"] is not None else None for f in base_faults
    ]
    checks = _checks(lab, fault_rows, task_rows, leftovers, open_ports)
    kpis = {
        "before": series.at(first_fault - 1e-6).to_dict(),
        "during": {
            "min_cells_in_service": series.extreme("cells_in_service", first_fault, end, highest=False),
            "max_users_without_coverage": round(series.extreme("users_without_coverage", first_fault, end), 1),
            "max_energy_kw": round(series.extreme("energy_kw", first_fault, end), 2),
        },
        "after": series.at(end).to_dict(),
        "user_minutes_without_coverage": round(series.integral("users_without_coverage", start, horizon) / 60, 1),
        "energy_kwh": round(series.integral("energy_kw", start, horizon) / 3600, 2),
        "series": [{"t": rel(t), **k.to_dict()} for t, k in series.samples],
    }
    intent = intent_view(topology, lab.network, notes)
    if intent:
        kpis["intent"] = intent
    baseline = {
        "time_to_restore_s": _max(base_restore),
        "per_fault": [
            {"type": f["type"], "target": f["target"], "time_to_restore_s": r}
            for f, r in zip(base_faults, base_restore, strict=True)
        ],
        "user_minutes_without_coverage": round(base_series.integral("users_without_coverage", start, horizon) / 60, 1),
        "energy_kwh": round(base_series.integral("energy_kw", start, horizon) / 3600, 2),
        "series": [{"t": rel(t), **k.to_dict()} for t, k in base_series.samples],
        "assumptions": {k: v for k, v in topology.baseline.__dict__.items()},
    }
    agents = []
    for spec in topology.agents:
        running = lab.agents.get(spec.name)
        agents.append(
            AgentSummary(
                name=spec.name,
                role=spec.role,
                regions=list(spec.regions),
                address=f"{lab.host_of(spec.name)}:{running.port}" if running else None,
                operations=_counts(counts.get(spec.name)),
            )
        )
    external = {name: _counts(c) for name, c in counts.items() if name not in {a.name for a in topology.agents}}
    requests = sum(1 for e in exchanges if not e.is_notification)
    return LabResult(
        topology=TopologySummary(
            name=topology.name,
            description=topology.description,
            seed=topology.seed,
            source=str(topology.source) if topology.source else None,
            start_time=to_rfc3339(start),
            sites=len(topology.network.sites),
            cells=sum(len(s.cells) for s in topology.network.sites),
            links=len(topology.network.links),
        ),
        agents=agents,
        external_clients=external,
        messages=[{**e.to_dict(), "t": rel(e.time)} for e in exchanges],
        notes=[{**n.to_dict(), "t": rel(n.time)} for n in notes],
        tasks=task_rows,
        outcome=Outcome(
            closed_loop=all(c.ok for c in checks),
            checks=checks,
            faults=fault_rows,
            actions=[{**n.to_dict(), "t": rel(n.time)} for n in notes if n.kind in ACTION_KINDS],
            network_changes=dict(Counter(c.by for c in lab.network.changes())),
            time_to_restore_s=_max(restore_times),
        ),
        kpis=kpis,
        baseline=baseline,
        run=RunInfo(
            end_reason=lab.end_reason,
            simulated_seconds=round(end - start, 3),
            wall_seconds=round(lab.wall_seconds, 3),
            instants=lab.kernel.stats.instants,
            netconf_requests=requests,
            netconf_notifications=len(exchanges) - requests,
            netconf_operations=len(exchanges),
            activity_errors=list(lab.kernel.stats.errors),
        ),
    )


def _max(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(max(known), 3) if known and len(known) == len(values) else None


def _counts(entry: dict[str, Any] | None) -> Operations:
    if entry is None:
        return Operations()
    return Operations(
        requests_sent=entry["requests_sent"],
        requests_received=entry["requests_received"],
        notifications_received=entry["notifications_received"],
        by_operation=dict(entry["by_operation"]),
    )


def _fault_row(record: FaultRecord, notes: list[Any], rel: Any) -> FaultOutcome:
    spec = record.spec
    found = [
        n
        for n in notes
        if n.kind == "root_cause"
        and n.details.get("element") == spec.target
        and n.details.get("fault_type") == spec.type
        and n.time >= record.injected_at
    ]
    other = [n for n in notes if n.kind == "root_cause" and n.time >= record.injected_at and n not in found]
    first = found[0] if found else None
    return FaultOutcome(
        type=spec.type,
        target=spec.target,
        injected=rel(record.injected_at),
        affected_sites=list(record.affected_sites),
        affected_cells=len(record.affected_cells),
        root_cause_found=first is not None,
        root_cause=None
        if first is None
        else RootCause(
            text=first.text,
            decided_by=first.agent,
            diagnosed_by=first.details.get("diagnosed_by"),
            t=rel(first.time),
            time_to_diagnose_s=round(first.time - record.injected_at, 3),
        ),
        other_conclusions=[n.text for n in other if n.details.get("element") != spec.target][:3],
        repaired=rel(record.repaired_at),
        repaired_by=record.repaired_by,
        repair_kind=record.repair_kind,
        restored=rel(record.restored_at),
        time_to_restore_s=None if record.restored_at is None else round(record.restored_at - record.injected_at, 3),
    )


def _task_row(agent: str, task: Task, payload: Any) -> dict[str, Any]:
    result_data: Any = None
    if task.result is not None and task.result.data:
        try:
            result_data = json.loads(task.result.data)
        except json.JSONDecodeError:
            result_data = task.result.data
    sections = parse_prompt(task.content or "")
    return {
        "agent": agent,
        "task_id": task.task_id,
        "from": task.send_from,
        "description": sections.task_description,
        "target": sections.target_object,
        "status": str(task.status) if task.status else None,
        "reason": task.result.reason if task.result else None,
        "payload": payload,
        "result": result_data,
        "updated": to_rfc3339(task.result.updated_time) if task.result and task.result.updated_time else None,
    }


def _field_checks(lab: Lab, faults: list[FaultOutcome], check: Any) -> None:
    """With a service-layer FME copilot that takes tickets: the engineer did every field repair, guided.

    Per fault repaired in the field: a ticket for its element reached a service-layer copilot, the
    engineer asked it questions that it answered, the engineer made the repair, and the ticket closed.
    """
    topology = lab.topology
    copilots = {a.name for a in topology.agents if a.role == Role.FME_COPILOT and a.layer == Layer.SERVICE}
    if not any(copilots & set(receivers) for receivers in topology.talks_to.values()):
        return  # nobody may send a ticket to a service-layer copilot: field maintenance takes them
    notes = lab.journal.notes()
    problems = []
    for fault in faults:
        if fault.repair_kind != "field":
            continue
        received = [n for n in notes if n.kind == "ticket_received" and n.details.get("device") == fault.target]
        if not received:
            problems.append(f"{fault.target}: no ticket reached an FME copilot")
            continue
        number = received[0].details.get("ticket_id")
        replies = [n for n in notes if n.kind == "copilot_reply" and n.details.get("device") == fault.target]
        closed = [n for n in notes if n.kind == "ticket_closed" and n.details.get("ticket_id") == number]
        if not replies:
            problems.append(f"{fault.target}: the engineer got no answer from the copilot")
        if fault.repaired_by != ENGINEER:
            problems.append(f"{fault.target}: repaired by {fault.repaired_by}, not the field engineer")
        if not closed:
            problems.append(f"{fault.target}: ticket {number} not closed")
    check(
        "field repairs guided by the FME copilots",
        not problems,
        "every field repair: ticket to the copilot, questions answered, repaired by the engineer, ticket closed"
        if not problems
        else "; ".join(problems[:4]),
    )


def _ticket_checks(lab: Lab, faults: list[FaultOutcome], check: Any) -> None:
    """With OSS trouble-ticket agents: each complaint was split into sub-tickets by the agent of the fault's domain.

    Checked per fault whose region has a trouble-ticket agent and that a complaint led to (a sub-ticketing
    note about its sites); the sub-tickets must come from a trouble-ticket agent of that region.
    """
    topology = lab.topology
    oss = {a.name: a.regions for a in topology.agents if a.role == Role.TROUBLE_TICKET}
    if not oss or not any(e.ticket is not None for e in topology.events):
        return
    notes = [n for n in lab.journal.notes() if n.kind == "sub_tasks"]
    problems = []
    for fault in faults:
        region = region_of(lab.network, fault.target)
        if not any(not regions or region in regions for regions in oss.values()):
            continue
        splits = [n for n in notes if n.details.get("region") == region]
        if not splits:
            problems.append(f"{fault.target}: no sub-tickets in {region}")
        elif any(n.agent not in oss for n in splits):
            problems.append(f"{fault.target}: sub-tickets by {splits[0].agent}, not an OSS trouble-ticket agent")
    check(
        "complaints split into sub-tickets by the OSS agent of the fault's domain",
        not problems,
        "every complaint: localised, handed to the domain's trouble-ticket agent, split for transport and mobile"
        if not problems
        else "; ".join(problems[:4]),
    )


def _checks(
    lab: Lab, faults: list[FaultOutcome], tasks: list[dict[str, Any]], leftovers: list[str], open_ports: list[str]
) -> list[Check]:
    checks: list[Check] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append(Check(name, ok, detail))

    missing = [f"{f.type} on {f.target}" for f in faults if not f.root_cause_found]
    check(
        "root cause matches the injected fault",
        not missing and bool(faults),
        "every fault diagnosed" if not missing else f"not found: {', '.join(missing)}",
    )
    unrestored = [f.target for f in faults if f.restored is None]
    check(
        "service restored",
        not unrestored,
        "every fault repaired and its sites back in service"
        if not unrestored
        else f"not restored: {', '.join(unrestored)}",
    )
    residual = lab.network.residual_changes()
    check(
        "compensations and energy-saving changes undone",
        not residual,
        "network back to its planned configuration" if not residual else "; ".join(residual[:6]),
    )
    changed, refused = lab.network.radio_limits()
    if changed or refused:
        check(
            "cells within their limits",
            not refused,
            f"{len(changed)} cells changed, each within its power and tilt limits"
            if not refused
            else "refused: " + "; ".join(refused[:4]),
        )
    bad = [
        t
        for t in tasks
        if t["status"] not in (TaskStatus.FINISHED, TaskStatus.FAILED)
        or (t["status"] == TaskStatus.FAILED and not t["reason"])
    ]
    failed = [t for t in tasks if t["status"] == TaskStatus.FAILED]
    check(
        "tasks ended finished, or failed with a reason",
        not bad,
        f"{len(tasks) - len(failed)} finished, {len(failed)} failed with reasons"
        if not bad
        else "; ".join(f"{t['agent']}/{t['task_id']}: {t['status']}" for t in bad[:6]),
    )
    _field_checks(lab, faults, check)
    _ticket_checks(lab, faults, check)
    checks.extend(intent_checks(lab.topology, lab.network, lab.journal.notes()))
    errors = lab.kernel.stats.errors
    check(
        "closed loop completed",
        lab.end_reason == "idle" and not errors,
        "nothing left to do at the end"
        if lab.end_reason == "idle" and not errors
        else f"ended by {lab.end_reason}" + (f"; errors: {'; '.join(errors[:3])}" if errors else ""),
    )
    check(
        "nothing left running",
        not leftovers and not open_ports,
        "every server, session and activity stopped"
        if not leftovers and not open_ports
        else f"threads: {', '.join(leftovers) or '-'}; open ports: {', '.join(open_ports) or '-'}",
    )
    return checks
