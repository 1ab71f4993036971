"""The soak's checkers: each a small class with a ``name``, judging `Evidence` into a `Verdict` that carries
the first counter-example (the journal excerpt that shows it) when it fails.

They run along the way (``evidence.final`` False: only what must already hold) and at the end. Each can
fail: ``tests/lab/soak/test_checkers.py`` alters a real run's evidence with a known defect of its kind.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import median
from typing import Any, Protocol

from an_agent.lab.soak.evidence import Evidence

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


@dataclass
class Verdict:
    """A checker's judgement: ``ok``, what it looked at (``detail``), and when it fails the first
    counter-example: what is wrong (``problem``) and the journal entries that show it (``excerpt``)."""

    name: str
    ok: bool
    detail: str
    problem: str | None = None
    excerpt: list[dict[str, Any]] = field(default_factory=list)
    failures: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "ok": self.ok, "detail": self.detail}
        if not self.ok:
            out["counter_example"] = {"problem": self.problem, "journal": self.excerpt}
            out["failures"] = self.failures
        return out


class Checker(Protocol):
    name: str

    def check(self, evidence: Evidence) -> Verdict: ...


def _verdict(name: str, detail: str, problems: list[tuple[str, list[dict[str, Any]]]]) -> Verdict:
    if not problems:
        return Verdict(name, True, detail)
    problem, excerpt = problems[0]
    return Verdict(name, False, detail, problem, excerpt, len(problems))


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
        return _verdict(
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
        return _verdict(self.name, f"{len(first)} task ids, {len(evidence.faults)} faults' repairs", problems)

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
    it took out (they keep its sites down until they close too). The bound: ``repair_minutes`` x 1.15 +
    `LOOP_SLACK_S`."""

    name = "every fault's loop closes in time"

    def check(self, evidence: Evidence) -> Verdict:
        problems = []
        ends = sorted(float(c.get("end", c.get("at", 0.0))) for c in evidence.chaos)
        for fault in evidence.faults:
            bound = float(fault.get("repair_minutes", 90.0)) * 60.0 * FIELD_JITTER + LOOP_SLACK_S
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
        return _verdict(self.name, f"{closed_count} of {len(evidence.faults)} faults closed", problems)

    @staticmethod
    def _excerpt(evidence: Evidence, fault: dict[str, Any]) -> list[dict[str, Any]]:
        target = str(fault["target"])
        return [n for n in evidence.notes if target in n.get("text", "") and n.get("time", 0) >= fault["injected_at"]][
            :12
        ]


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
    reaches it unless it was itself restarted meanwhile."""

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
        for key, got in received.items():
            statuses = [str(e.get("status")) for e in got]
            repeat = next((i for i in range(1, len(statuses)) if statuses[i] == statuses[i - 1]), None)
            if repeat is not None:
                problems.append(
                    (f"{key[0]} got {statuses[repeat]} of {key[2]} from {key[1]} twice", got[repeat - 1 : repeat + 1])
                )
                continue
            sequence = logged.get(key)
            if sequence is None or key[1] not in evidence.logs:
                continue  # the publisher is not ours, or the task is not in its log (it logs no such task)
            if not _contiguous(statuses, sequence):
                problems.append(
                    (
                        f"{key[0]} got {statuses} of {key[2]} from {key[1]}, which logged {sequence}: a gap "
                        "or another order",
                        got,
                    )
                )
        if evidence.final:
            problems += self._ends_missing(evidence, logged, received, restarts)
        return _verdict(
            self.name, f"{len(received)} subscriber/task streams checked against the publishers' logs", problems
        )

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


def _contiguous(got: Sequence[str], log: Sequence[str]) -> bool:
    """``got`` is a contiguous run of ``log`` (no gap, same order)."""
    n = len(got)
    return n == 0 or any(list(log[i : i + n]) == list(got) for i in range(len(log) - n + 1))


class SqliteIntact:
    """Every agent's SQLite databases pass ``PRAGMA integrity_check`` after every kill and at the end."""

    name = "SQLite state intact after every kill"

    def check(self, evidence: Evidence) -> Verdict:
        problems = []
        checked = 0
        for c in evidence.chaos:
            for db, result in (c.get("integrity") or {}).items():
                checked += 1
                if result != "ok":
                    problems.append(
                        (
                            f"{c.get('target')}'s {db} after {c['kind']} at +{c['at'] - evidence.start:g} s: {result}",
                            [c],
                        )
                    )
        for agent, results in evidence.integrity.items():
            for db, result in results.items():
                checked += 1
                if result != "ok":
                    problems.append((f"{agent}'s {db} at the end: {result}", []))
        return _verdict(self.name, f"{checked} integrity checks", problems)


@dataclass(frozen=True)
class Bound:
    """How much one resource of an agent process may grow from after the first 10 % of the run to the end."""

    field: str
    absolute: float
    relative: float = 0.0

    def limit(self, baseline: float) -> float:
        return baseline * (1.0 + self.relative) + self.absolute


BOUNDS = (
    Bound("rss_kb", 32 * 1024, 0.25),
    Bound("fds", 24),
    Bound("threads", 16),
    Bound("sqlite_bytes", 16 * 1024 * 1024),
)
"""RSS +25 % + 32 MiB, open descriptors +24, threads +16, SQLite files +16 MiB (the stated bounds). An agent
that has done nothing yet at 10 % of the run grows by its first use (measured: +10 descriptors and +11
threads, its sessions to its peers and theirs to it, then flat); a leak of one per fault grows past them."""
MIN_LIFE = 0.4
"""A process is judged when it lived at least this share of the run (a restarted one starts afresh)."""


class ResourcesFlat:
    """Per agent process that lived long enough (`MIN_LIFE`), its RSS, open descriptors and threads at
    the end (median of its last samples, the last 10 % of the run) stay within `BOUNDS` of what they were
    after the first 10 % of the run (median of the next 10 %); per agent, its SQLite files likewise
    across restarts (they outlive the process)."""

    name = "resources flat"

    def __init__(self, bounds: Sequence[Bound] = BOUNDS) -> None:
        self.bounds = tuple(bounds)

    def check(self, evidence: Evidence) -> Verdict:
        if not evidence.final:
            return Verdict(self.name, True, "judged at the end")
        span = evidence.wall or max((s["wall"] for s in evidence.samples), default=0.0)
        lives: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
        per_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in evidence.samples:
            lives[(s["agent"], s["pid"])].append(s)
            per_agent[s["agent"]].append(s)
        problems: list[tuple[str, list[dict[str, Any]]]] = []
        judged = 0
        for (agent, pid), samples in sorted(lives.items()):
            first = max(samples[0]["wall"], 0.1 * span)
            if samples[-1]["wall"] - samples[0]["wall"] < MIN_LIFE * span:
                continue
            judged += 1
            early = [s for s in samples if first <= s["wall"] < first + 0.1 * span]
            late = [s for s in samples if s["wall"] >= samples[-1]["wall"] - 0.1 * span]
            for bound in (b for b in self.bounds if b.field != "sqlite_bytes"):
                problems += _grew(f"{agent} (pid {pid})", bound, early, late)
        sqlite = [b for b in self.bounds if b.field == "sqlite_bytes"]
        for agent, samples in sorted(per_agent.items()):
            early = [s for s in samples if 0.1 * span <= s["wall"] < 0.2 * span]
            late = [s for s in samples if s["wall"] >= 0.9 * span]
            for bound in sqlite:
                problems += _grew(agent, bound, early, late)
        return _verdict(
            self.name,
            f"{judged} agent processes (RSS, descriptors, threads), {len(per_agent)} agents' SQLite",
            problems,
        )


def _grew(
    who: str, bound: Bound, early: list[dict[str, Any]], late: list[dict[str, Any]]
) -> list[tuple[str, list[dict[str, Any]]]]:
    if not early or not late:
        return []
    before, after = median(s[bound.field] for s in early), median(s[bound.field] for s in late)
    if after <= bound.limit(before):
        return []
    return [
        (
            f"{who}: {bound.field} grew from {before:g} to {after:g} (bound {bound.limit(before):g})",
            [early[0], late[-1]],
        )
    ]


class RunEnded:
    """The lab recovered from every lab fault (no error playing one, a killed agent served again) and ran
    to its end with nothing left to do (``idle``: not stopped by its deadline, not stalled)."""

    name = "every lab fault recovered, the run ended idle"

    def check(self, evidence: Evidence) -> Verdict:
        problems = [(f"{c['kind']} of {c['target']}: {c['error']}", [c]) for c in evidence.chaos if c.get("error")]
        if evidence.final and evidence.end_reason != "idle":
            problems.append((f"the run ended {evidence.end_reason or 'early'} with work left", evidence.notes[-12:]))
        return _verdict(
            self.name, f"{len(evidence.chaos)} lab faults; run ended {evidence.end_reason or '-'}", problems
        )


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
