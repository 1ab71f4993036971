"""The soak's checkers of what the agents did (`an_agent.lab.soak.health` has those of their health): each
a small class with a ``name``, judging `Evidence` into a `Verdict` that carries
the first counter-example (the journal excerpt that shows it) when it fails.

They run along the way (``evidence.final`` False: only what must already hold) and at the end. Each can
fail: ``tests/lab/soak/test_soak_checkers.py`` alters a real run's evidence with a known defect of its kind.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from an_agent.agents.guidance import PROCEDURE_MINUTES, TICKET_FAULT
from an_agent.lab.soak.evidence import Evidence
from an_agent.lab.soak.health import ResourcesFlat, RunEnded, SqliteIntact
from an_agent.lab.soak.verdict import Checker, Verdict, verdict

ASSIGN_OPERATIONS = {"edit-config", "SendStreamingMessage", "SendMessage"}
NOTIFICATIONS = {"notification", "TaskStatusUpdateEvent"}
_RANK = {"created": 0, "finished": 2, "failed": 2, "canceled": 2}
"""How far a task is: created, under way (1, any other status), ended."""
LOOP_SLACK_S = 1800.0
"""Simulated seconds a fault's loop may take beyond its longest field repair (detection, diagnosis, hand-offs)."""
FIELD_JITTER = 1.15
"""A field repair takes up to its nominal minutes + 15 % (`an_agent.lab.network.field_repair_seconds`)."""
REPAIR_ACTIONS = {"reset", "port_reset", "reconfigure", "trouble_ticket", "field_visit"}
"""Change-log actions that try to repair an element (``field_visit``: field work that found no fault)."""


def rank(status: str | None) -> int:
    return -1 if status is None else _RANK.get(status, 1)


def _assignments(evidence: Evidence) -> list[dict[str, Any]]:
    """Acknowledged task creations: an assigner's taskAssign that the executor answered ok."""
    return [
        e
        for e in evidence.exchanges
        if e.get("commuType") == "taskAssign"
        and e.get("operation") in ASSIGN_OPERATIONS
        and e.get("ok")
        and e.get("task_id")
    ]


def _received(evidence: Evidence) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    """Notifications as each subscriber recorded them: ``(subscriber, publisher, task_id)`` -> exchanges in order."""
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in sorted(evidence.exchanges, key=lambda x: x.get("order", 0)):
        if e.get("operation") in NOTIFICATIONS and e.get("task_id"):
            out[(e["to"], e["from"], e["task_id"])].append(e)
    return out


class NoLostTask:
    """Every task an assigner saw created exists at its executor, with a status at least as advanced as the
    last the assigner was told of (after any restart of either)."""

    name = "no acknowledged task lost"

    def check(self, evidence: Evidence) -> Verdict:
        received = _received(evidence)
        problems = []
        assigned = _assignments(evidence)
        for e in assigned:
            executor, task_id = e["to"], e["task_id"]
            if executor not in evidence.tasks:
                continue  # not an agent of the lab (an outsider): its state is not ours to read
            told = [n for n in received.get((e["from"], executor, task_id), [])]
            seen = max((rank(n.get("status")) for n in told), default=0)
            have = evidence.tasks[executor].get(task_id)
            if have is None:
                problems.append(
                    (
                        f"task {task_id} assigned by {e['from']} to {executor} (acknowledged) is missing at {executor}",
                        [e, *told],
                    )
                )
            elif rank(have) < seen:
                problems.append(
                    (
                        f"task {task_id} at {executor} is {have}, but {e['from']} was told {told[-1].get('status')}",
                        [e, *told],
                    )
                )
        return verdict(
            self.name, f"{len(assigned)} acknowledged assignments checked against the executors' databases", problems
        )


class NoDuplicate:
    """No task id acknowledged twice (two decisions under one id, or one decision assigned twice), no
    assignment refused because its id was taken, and no repair applied twice to one fault."""

    name = "no duplicate assignment or repair"

    def check(self, evidence: Evidence) -> Verdict:
        problems: list[tuple[str, list[dict[str, Any]]]] = []
        first: dict[tuple[str, str], dict[str, Any]] = {}
        for e in _assignments(evidence):
            key = (e["to"], e["task_id"])
            if key in first:
                problems.append((f"task {e['task_id']} created twice at {e['to']}", [first[key], e]))
            else:
                first[key] = e
        for e in evidence.exchanges:
            error = str(e.get("error") or "")
            if e.get("commuType") == "taskAssign" and not e.get("ok") and ("exist" in error or "data-exists" in error):
                problems.append((f"task id {e.get('task_id')} reused for a new assignment to {e.get('to')}", [e]))
        problems += self._repairs(evidence)
        return verdict(self.name, f"{len(first)} task ids, {len(evidence.faults)} faults' repairs", problems)

    def _repairs(self, evidence: Evidence) -> list[tuple[str, list[dict[str, Any]]]]:
        problems = []
        windows: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for fault in evidence.faults:
            until = fault.get("repaired_at")
            windows[fault["target"]].append((fault["injected_at"], evidence.end if until is None else until))
        done: dict[tuple[str, float, str], dict[str, Any]] = {}
        for change in evidence.changes:
            if change.get("action") not in REPAIR_ACTIONS or change.get("by") == "scenario":
                continue
            element, t = change["element"], change["time"]
            window = next(((a, b) for a, b in windows.get(element, []) if a <= t <= b), None)
            if window is None or change["action"] == "field_visit":
                problems.append(
                    (
                        f"{change['action']} of {element} by {change['by']} with no fault open on it "
                        "(repaired already)",
                        [change],
                    )
                )
                continue
            key = (element, window[0], change["action"])
            if key in done:
                problems.append(
                    (f"{change['action']} applied twice to the same fault of {element}", [done[key], change])
                )
            else:
                done[key] = change
        return problems


class LoopsClose:
    """Every fault's loop closes (its sites and cells back in service) within a bound after the last fault
    that touched it healed: its own injection, any lab fault, and any other network fault on the elements
    it took out (they keep its sites down until they close too). The bound: its field repair time
    (`_field_minutes`) x 1.15 + `LOOP_SLACK_S`."""

    name = "every fault's loop closes in time"

    def check(self, evidence: Evidence) -> Verdict:
        problems = []
        ends = sorted(float(c.get("end", c.get("at", 0.0))) for c in evidence.chaos)
        for fault in evidence.faults:
            bound = _field_minutes(fault) * 60.0 * FIELD_JITTER + LOOP_SLACK_S
            closed = fault.get("restored_at")
            upto = evidence.end if closed is None else float(closed)
            touched = [fault["injected_at"], *(t for t in ends if t <= upto)]
            touched += [t for t in _overlapping(fault, evidence.faults) if t <= upto]
            took = upto - max(touched)
            where = f"{fault['type']} on {fault['target']} (injected +{fault['injected_at'] - evidence.start:g} s)"
            if closed is None and (evidence.final or took > bound):
                problems.append(
                    (
                        f"{where} not closed {took:g} s after the last fault that touched it",
                        self._excerpt(evidence, fault),
                    )
                )
            elif closed is not None and took > bound:
                problems.append(
                    (
                        f"{where} closed {took:g} s after the last fault that touched it (bound {bound:g} s)",
                        self._excerpt(evidence, fault),
                    )
                )
        closed_count = sum(1 for f in evidence.faults if f.get("restored_at") is not None)
        return verdict(self.name, f"{closed_count} of {len(evidence.faults)} faults closed", problems)

    @staticmethod
    def _excerpt(evidence: Evidence, fault: dict[str, Any]) -> list[dict[str, Any]]:
        target = str(fault["target"])
        return [n for n in evidence.notes if target in n.get("text", "") and n.get("time", 0) >= fault["injected_at"]][
            :12
        ]


def _field_minutes(fault: dict[str, Any]) -> float:
    """How long a field repair of ``fault`` takes: its nominal minutes, or the guided procedure's when that
    is longer (a fibre splice is 75 minutes of steps, whatever the nominal time drawn for the cut)."""
    procedure = PROCEDURE_MINUTES.get(TICKET_FAULT.get(str(fault["type"]), "unknown"), 0)
    return max(float(fault.get("repair_minutes", 90.0)), float(procedure))


def _overlapping(fault: dict[str, Any], faults: Sequence[dict[str, Any]]) -> list[float]:
    """When the other faults on the elements ``fault`` took out (or that took its target out) healed
    (were repaired: from then on ``fault``'s own loop has to close)."""
    mine = {fault["target"], *fault.get("affected_sites", []), *fault.get("affected_cells", [])}
    out = []
    for other in faults:
        if other is fault or other.get("repaired_at") is None:
            continue
        theirs = {other["target"], *other.get("affected_sites", []), *other.get("affected_cells", [])}
        if mine & theirs:
            out.append(float(other["repaired_at"]))
    return out


class NotificationsComplete:
    """Each subscriber's notifications of a task arrive in the order the publisher logged them, with no
    repeat (replay after a reconnection drops what was seen) and no gap; the end of every task it assigned
    reaches it unless it was itself restarted meanwhile.

    Judged per life of the subscriber's process: a restarted subscriber is a new process that subscribes
    from its start, so what was published while it was dead is not its stream's gap, as its missing end
    is not (found by lab soak: a cross-domain agent killed a simulated second after assigning a ticket
    had the ticket's ``created`` from its first life and ``finished`` from its second)."""

    name = "notifications complete and in order"

    def check(self, evidence: Evidence) -> Verdict:
        problems: list[tuple[str, list[dict[str, Any]]]] = []
        logged: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for publisher, rows in evidence.logs.items():
            for row in rows:
                logged[(row["send_to"], publisher, row["task_id"])].append(row["status"])
        received = _received(evidence)
        restarts = defaultdict(list)
        for c in evidence.chaos:
            if c.get("restarted"):
                for agent in c.get("agents", [c.get("target")]):
                    restarts[agent].append(float(c["at"]))
        for key, whole in received.items():
            for got in _lives(whole, restarts.get(key[0], [])):
                problems += self._judge(key, got, logged)
        if evidence.final:
            problems += self._ends_missing(evidence, logged, received, restarts)
        return verdict(
            self.name, f"{len(received)} subscriber/task streams checked against the publishers' logs", problems
        )

    @staticmethod
    def _judge(
        key: tuple[str, str, str], got: list[dict[str, Any]], logged: dict[tuple[str, str, str], list[str]]
    ) -> list[tuple[str, list[dict[str, Any]]]]:
        """The problem of one life's stream: a repeat, or not a contiguous run of the publisher's log."""
        statuses = [str(e.get("status")) for e in got]
        repeat = next((i for i in range(1, len(statuses)) if statuses[i] == statuses[i - 1]), None)
        if repeat is not None:
            return [(f"{key[0]} got {statuses[repeat]} of {key[2]} from {key[1]} twice", got[repeat - 1 : repeat + 1])]
        sequence = logged.get(key)
        if sequence is None or _contiguous(statuses, sequence):
            return []  # (None: the publisher is not ours, or the task is not in its log)
        return [
            (f"{key[0]} got {statuses} of {key[2]} from {key[1]}, which logged {sequence}: a gap or another order", got)
        ]

    @staticmethod
    def _ends_missing(
        evidence: Evidence,
        logged: dict[tuple[str, str, str], list[str]],
        received: dict[tuple[str, str, str], list[dict[str, Any]]],
        restarts: dict[str, list[float]],
    ) -> list[tuple[str, list[dict[str, Any]]]]:
        problems = []
        for e in _assignments(evidence):
            key = (e["from"], e["to"], e["task_id"])
            log = logged.get(key, [])
            if not log or rank(log[-1]) < 2 or any(t >= e["time"] for t in restarts.get(e["from"], [])):
                continue
            got = [str(n.get("status")) for n in received.get(key, [])]
            if log[-1] not in got:
                problems.append(
                    (
                        f"{e['from']} never got the end ({log[-1]}) of {e['task_id']} from {e['to']}",
                        [e, *received.get(key, [])],
                    )
                )
        return problems


def _lives(got: list[dict[str, Any]], restarts: Sequence[float]) -> list[list[dict[str, Any]]]:
    """``got`` (one subscriber's notifications of one task, in order) cut at the subscriber's restarts."""
    lives: list[list[dict[str, Any]]] = [[]]
    cuts = sorted(restarts)
    for e in got:
        while cuts and float(e["time"]) >= cuts[0]:
            cuts.pop(0)
            if lives[-1]:
                lives.append([])
        lives[-1].append(e)
    return [life for life in lives if life]


def _contiguous(got: Sequence[str], log: Sequence[str]) -> bool:
    """``got`` is a contiguous run of ``log`` (no gap, same order)."""
    n = len(got)
    return n == 0 or any(list(log[i : i + n]) == list(got) for i in range(len(log) - n + 1))


def default_checkers() -> list[Checker]:
    return [
        NoLostTask(),
        NoDuplicate(),
        LoopsClose(),
        NotificationsComplete(),
        SqliteIntact(),
        ResourcesFlat(),
        RunEnded(),
    ]


def run_checkers(evidence: Evidence, checkers: Sequence[Checker] | None = None) -> list[Verdict]:
    """Every checker's verdict on ``evidence``."""
    return [c.check(evidence) for c in (checkers if checkers is not None else default_checkers())]
