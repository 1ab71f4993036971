"""The soak's checkers of the agents' health: SQLite intact after every kill, resources flat, every lab
fault recovered and the run ended idle (`an_agent.lab.soak.verdict`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import median
from typing import Any

from an_agent.lab.soak.evidence import Evidence
from an_agent.lab.soak.verdict import Verdict, verdict


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
        return verdict(self.name, f"{checked} integrity checks", problems)


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
"""RSS +25 % + 32 MiB, open descriptors +24, threads +16, SQLite files +16 MiB (the stated bounds)."""
MIN_LIFE = 0.4
"""A process is judged when it lived at least this share of the run (a restarted one starts afresh)."""


class ResourcesFlat:
    """Per agent process that lived long enough (`MIN_LIFE`), its RSS, open descriptors and threads at
    the end (median of its samples in the last 10 % of the run) stay within `BOUNDS` of the most they were
    in the first half of its life after the first 10 % of the run: an agent grows once, at its first use
    (measured: +10 to +18 threads and descriptors, its sessions to its peers and theirs to it, then
    flat), and that is not a leak; what grows again later is. Per agent, its SQLite files from the first
    10 % to the last 10 % of the run, across restarts (they outlive the process)."""

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
            half = first + (samples[-1]["wall"] - first) / 2
            early = [s for s in samples if first <= s["wall"] <= half]
            late = [s for s in samples if s["wall"] >= samples[-1]["wall"] - 0.1 * span]
            for bound in (b for b in self.bounds if b.field != "sqlite_bytes"):
                problems += _grew(f"{agent} (pid {pid})", bound, early, late, max)
        sqlite = [b for b in self.bounds if b.field == "sqlite_bytes"]
        for agent, samples in sorted(per_agent.items()):
            early = [s for s in samples if 0.1 * span <= s["wall"] < 0.2 * span]
            late = [s for s in samples if s["wall"] >= 0.9 * span]
            for bound in sqlite:
                problems += _grew(agent, bound, early, late)
        return verdict(
            self.name,
            f"{judged} agent processes (RSS, descriptors, threads), {len(per_agent)} agents' SQLite",
            problems,
        )


def _grew(
    who: str,
    bound: Bound,
    early: list[dict[str, Any]],
    late: list[dict[str, Any]],
    baseline: Callable[[list[float]], float] = median,
) -> list[tuple[str, list[dict[str, Any]]]]:
    if not early or not late:
        return []
    before, after = baseline([s[bound.field] for s in early]), median(s[bound.field] for s in late)
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
        return verdict(self.name, f"{len(evidence.chaos)} lab faults; run ended {evidence.end_reason or '-'}", problems)
