"""A soak checker's judgement (`Verdict`) and what a checker is (`Checker`): `an_agent.lab.soak.checkers`
(what the agents did) and `an_agent.lab.soak.health` (what the agents' processes and files stayed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from an_agent.lab.soak.evidence import Evidence

Problem = tuple[str, list[dict[str, Any]]]
"""What is wrong, and the journal entries (or records) that show it."""


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


def verdict(name: str, detail: str, problems: list[tuple[str, list[dict[str, Any]]]]) -> Verdict:
    if not problems:
        return Verdict(name, True, detail)
    problem, excerpt = problems[0]
    return Verdict(name, False, detail, problem, excerpt, len(problems))
