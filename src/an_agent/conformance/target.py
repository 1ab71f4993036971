"""The target of a conformance run, how to run, and what a run leaves to clean up."""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from an_agent.conformance.checks import SELECTABLE

PROBE_SENDER = "an-agent-conformance"
"""``task-sendFrom`` of the tasks the kit creates (and the A2A/NETCONF client name it gives)."""


@dataclass(frozen=True)
class Target:
    """Where the agent is: its NETCONF address and/or A2A URL, and how to log in."""

    netconf: tuple[str, int] | None = None
    a2a: str | None = None
    user: str = "admin"
    password: str | None = None
    """SSH password, and HTTP Basic on the A2A face (None: the A2A face is called without credentials)."""
    key: Path | None = None
    """SSH private key for NETCONF (instead of the password)."""
    a2a_trust: Path | None = None
    """PEM the A2A face's HTTPS certificate is verified against (else the system's CAs)."""


@dataclass(frozen=True)
class Options:
    """How to run: which sections, whether to write, how long any one step may take."""

    sections: frozenset[str] = frozenset(SELECTABLE)
    allow_writes: bool = False
    timeout: float = 30.0
    """The longest any one step may take: a connect, a request, a wait for a notification or a task's end."""

    @property
    def deadline(self) -> float:
        """Seconds the whole run may take, whatever happens (a safety net behind the per-step timeouts)."""
        return max(60.0, 40 * self.timeout)


@dataclass
class Ledger:
    """What the run created on the target, to delete at the end (thread-safe)."""

    prefix: str = field(default_factory=lambda: f"conformance-{secrets.token_hex(4)}")
    tasks: list[str] = field(default_factory=list)
    data_params: list[str] = field(default_factory=list)
    _count: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def new_id(self, what: str) -> str:
        """A fresh id no other run uses (``conformance-<random>-<what>-<n>``)."""
        with self._lock:
            self._count += 1
            return f"{self.prefix}-{what}-{self._count}"

    def task(self, task_id: str) -> None:
        with self._lock:
            if task_id not in self.tasks:
                self.tasks.append(task_id)

    def data_param(self, param_id: str) -> None:
        with self._lock:
            if param_id not in self.data_params:
                self.data_params.append(param_id)

    @property
    def empty(self) -> bool:
        with self._lock:
            return not self.tasks and not self.data_params


class Watch:
    """What a face runner is doing now and since when: the watchdog's view of it (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._step: tuple[str, float] | None = None

    @contextmanager
    def step(self, label: str) -> Iterator[None]:
        """Mark a step that talks to the target (``label`` says what, for the reason if it hangs)."""
        with self._lock:
            self._step = (label, time.monotonic())
        try:
            yield
        finally:
            with self._lock:
                self._step = None

    def overdue(self, limit: float) -> str | None:
        """The label of the current step when it has run longer than ``limit`` seconds, else None."""
        with self._lock:
            if self._step is None:
                return None
            label, since = self._step
        return label if time.monotonic() - since > limit else None
