"""What a conformance check is, what it found, and the one registry of every check.

A `Check` is declared once, at import of its section module, with `check(...)`: an id
(``<section>.<name>``), the document and section it comes from, its level (MUST or SHOULD) and a
title saying what is checked. The registry (`CHECKS`) is what the docs' list of checks is generated
from, so the list cannot drift from the code.

A `Finding` is one check's outcome on one target: pass, fail or skip, with the reason and, where
there was an exchange, what was sent, what came back and what was expected. `Findings` collects them
while a run goes on; every check of a selected section ends with exactly one finding (a check that
never ran, because its face went silent or the run's deadline passed, fails with the reason).
"""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field
from typing import Any

SECTIONS: dict[str, str] = {
    "netconf": "NETCONF and YANG basics",
    "wang": "draft-wang data model and interaction",
    "zhou": "draft-zhou schema interaction",
    "a2a": "A2A and the input/output-schemas extension",
    "cleanup": "Nothing left behind",
}
"""Section id -> title, in report order. ``cleanup`` runs whenever checks made tasks (--allow-writes)."""

SELECTABLE = ("netconf", "wang", "zhou", "a2a")
"""The sections ``--only`` may name."""

_EXCERPT = 1500  # characters of a sent/received document kept in a finding


class Level(enum.StrEnum):
    """How binding the requirement a check tests is (RFC 2119 words of its source)."""

    MUST = "MUST"
    SHOULD = "SHOULD"


class Outcome(enum.StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


class Face(enum.StrEnum):
    """Which of the target's faces a check talks to."""

    NETCONF = "netconf"
    A2A = "a2a"


@dataclass(frozen=True)
class Check:
    """One check: ``id`` is ``<section>.<name>``; ``source`` the document, ``clause`` its section."""

    id: str
    title: str
    source: str
    clause: str
    level: Level
    face: Face
    writes: bool = False
    """Only run with --allow-writes (it creates, changes or deletes something on the target)."""

    @property
    def section(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def reference(self) -> str:
        """``RFC 6241 section 8.1``; a clause not starting with a number is written as it is."""
        if self.clause[:1].isdigit():
            return f"{self.source} section {self.clause}"
        return f"{self.source} {self.clause}".strip()


CHECKS: dict[str, Check] = {}
"""Every check, by id, in declaration order (sections in `SECTIONS` order once all are imported)."""


def check(id: str, title: str, source: str, clause: str, level: Level, face: Face, *, writes: bool = False) -> Check:
    """Declare a check (at import of its section module); ids are unique."""
    if id in CHECKS:
        raise ValueError(f"check {id} declared twice")
    if id.split(".", 1)[0] not in SECTIONS:
        raise ValueError(f"check {id}: unknown section")
    declared = Check(id, title, source, clause, level, face, writes)
    CHECKS[id] = declared
    return declared


def excerpt(value: Any) -> str | None:
    """A document as a finding keeps it: text, at most ~1500 characters."""
    if value is None:
        return None
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + f" ... ({len(text) - _EXCERPT} more characters)"


@dataclass(frozen=True)
class Finding:
    """The outcome of one check on the target."""

    check: Check
    outcome: Outcome
    reason: str
    sent: str | None = None
    received: str | None = None
    expected: str | None = None

    def to_dict(self) -> dict[str, Any]:
        c = self.check
        out: dict[str, Any] = {
            "id": c.id,
            "section": c.section,
            "title": c.title,
            "source": c.source,
            "clause": c.clause,
            "level": str(c.level),
            "outcome": str(self.outcome),
            "reason": self.reason,
        }
        for name in ("sent", "received", "expected"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


@dataclass
class Findings:
    """The findings of one run, filled by the section runners (thread-safe; the first word on a check wins).

    A face that is given up on (`close`) takes no more findings: its runner may still be stuck in a
    library call, and what it says afterwards must not change the report.
    """

    selected: list[Check]
    _found: dict[str, Finding] = field(default_factory=dict)
    _closed_faces: set[Face] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(
        self,
        check: Check,
        outcome: Outcome,
        reason: str,
        *,
        sent: Any = None,
        received: Any = None,
        expected: Any = None,
    ) -> None:
        finding = Finding(check, outcome, reason, excerpt(sent), excerpt(received), excerpt(expected))
        with self._lock:
            if check.id in self._found or (check.face in self._closed_faces and check.section != "cleanup"):
                return
            if check not in self.selected:
                return
            self._found[check.id] = finding

    def passed(self, check: Check, reason: str, **exchange: Any) -> None:
        self.add(check, Outcome.PASS, reason, **exchange)

    def failed(self, check: Check, reason: str, **exchange: Any) -> None:
        self.add(check, Outcome.FAIL, reason, **exchange)

    def skipped(self, check: Check, reason: str) -> None:
        self.add(check, Outcome.SKIP, reason)

    def judge(self, check: Check, ok: bool, reason: str, **exchange: Any) -> bool:
        """Pass or fail ``check`` with ``reason``; returns ``ok``."""
        self.add(check, Outcome.PASS if ok else Outcome.FAIL, reason, **exchange)
        return ok

    def has(self, check: Check) -> bool:
        with self._lock:
            return check.id in self._found

    def pending(self, face: Face | None = None, section: str | None = None) -> list[Check]:
        """Selected checks with no finding yet (of one face or section)."""
        with self._lock:
            return [
                c
                for c in self.selected
                if c.id not in self._found
                and (face is None or c.face is face)
                and (section is None or c.section == section)
            ]

    def fail_pending(self, reason: str, face: Face | None = None, section: str | None = None) -> None:
        """Every check still without a finding fails with ``reason`` (a face lost, the deadline passed)."""
        for c in self.pending(face, section):
            self.failed(c, reason)

    def skip_pending(self, reason: str, face: Face | None = None, section: str | None = None) -> None:
        for c in self.pending(face, section):
            self.skipped(c, reason)

    def close(self, face: Face, reason: str) -> None:
        """Give up on ``face``: its pending checks fail with ``reason`` and it records nothing more.

        The ``cleanup`` section is left alone: it runs afterwards on a session of its own.
        """
        for c in self.pending(face):
            if c.section != "cleanup":
                self.failed(c, reason)
        with self._lock:
            self._closed_faces.add(face)

    def all(self) -> list[Finding]:
        """One finding per selected check, in registry order."""
        with self._lock:
            return [self._found[c.id] for c in self.selected if c.id in self._found]
