"""Benchmarks 2 and 4: session set-up time, and how many sessions a server holds at once.

Set-up is timed from before the TCP connect to the received server hello
(SSH handshake, authentication, subsystem and hello included), one session
at a time, each closed before the next. Concurrency opens sessions one after
another and keeps them open, then checks that a sample still answers and
reads the server's memory (PSS of all its processes) against the baseline.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from bench import procs
from bench.target import Target
from bench.wire import BenchError, Session


def setup_times(target: Target, count: int) -> list[float]:
    """Seconds from connect to hello for `count` sessions opened and closed one by one."""
    times: list[float] = []
    for _ in range(count):
        start = time.perf_counter()
        session = target.connect()
        times.append(time.perf_counter() - start)
        session.close()
    return times


@dataclass
class ConcurrencyRun:
    """How many sessions were open at once, and what they cost the server."""

    tried: int
    held: int
    baseline_bytes: int
    loaded_bytes: int
    seconds: float
    probed: int
    answered: int
    error: str = ""
    checkpoints: list[tuple[int, int]] = field(default_factory=list)  # (sessions open, server PSS bytes)

    @property
    def bytes_per_session(self) -> float:
        return (self.loaded_bytes - self.baseline_bytes) / self.held if self.held else float("nan")


def hold_sessions(target: Target, count: int, probe: str, checkpoint_every: int = 100) -> ConcurrencyRun:
    """Open up to `count` sessions and keep them; stop at the first failure. All are closed on return."""
    baseline = procs.pss_bytes(target.pids())
    sessions: list[Session] = []
    error = ""
    checkpoints: list[tuple[int, int]] = []
    start = time.perf_counter()
    try:
        for i in range(count):
            try:
                sessions.append(target.connect(timeout=60.0))
            except BenchError as exc:
                error = f"session {i + 1} failed: {exc}"
                break
            if len(sessions) % checkpoint_every == 0:
                checkpoints.append((len(sessions), procs.pss_bytes(target.pids())))
        elapsed = time.perf_counter() - start
        time.sleep(0.5)  # let the server settle before reading its memory
        loaded = procs.pss_bytes(target.pids())
        # Every session must still work, not merely be open: probe a spread of them.
        step = max(1, len(sessions) // 20)
        sample = sessions[::step]
        answered = 0
        for session in sample:
            try:
                session.request(probe)
                answered += 1
            except BenchError as exc:
                error = error or f"an open session stopped answering: {exc}"
        return ConcurrencyRun(
            count, len(sessions), baseline, loaded, elapsed, len(sample), answered, error, checkpoints
        )
    finally:
        for session in sessions:
            session.close()
