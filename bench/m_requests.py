"""Benchmark 1: one request type, sequentially on one session and in parallel on several.

`sequential` sends the request back to back on one session and returns each
round trip and the CPU time every server process spent meanwhile (read from
/proc before and after, so the client's own CPU is not in it). `throughput`
runs one session per worker process (so the client is not held back by one
interpreter lock) for a fixed time and counts completed requests.
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from bench import procs
from bench.target import Target
from bench.wire import BenchError, Credentials, Session


@dataclass
class SequentialRun:
    """Round trips (s) and the CPU seconds each server process used while they ran."""

    latencies: list[float]
    cpu_by_pid: dict[int, float]

    def cpu_per_request(self, pids: list[int] | None = None) -> float:
        """Server CPU seconds per request, over `pids` (default: every server process)."""
        chosen = self.cpu_by_pid if pids is None else {p: c for p, c in self.cpu_by_pid.items() if p in pids}
        return sum(chosen.values()) / len(self.latencies)


def sequential(target: Target, body: str, min_requests: int, min_seconds: float, warmup: int = 20) -> SequentialRun:
    """Send `body` at least `min_requests` times and for at least `min_seconds` on one session."""
    with target.connect() as session:
        for _ in range(warmup):
            session.request(body)
        pids = target.pids()  # after connecting: includes the per-session processes of sshd
        before = {pid: procs.cpu_seconds([pid]) for pid in pids}
        latencies: list[float] = []
        until = time.perf_counter() + min_seconds
        while len(latencies) < min_requests or time.perf_counter() < until:
            start = time.perf_counter()
            session.request(body)
            latencies.append(time.perf_counter() - start)
        after = {pid: procs.cpu_seconds([pid]) for pid in pids}
    return SequentialRun(latencies, {pid: after[pid] - before[pid] for pid in pids})


class WorkerPool:
    """`sessions` client processes for `throughput`, started once so that their start-up is not measured."""

    def __init__(self, sessions: int) -> None:
        context = multiprocessing.get_context("spawn")  # no fork: the parent runs paramiko threads
        self.sessions = sessions
        self._manager = context.Manager()
        self._pool = ProcessPoolExecutor(max_workers=sessions, mp_context=context)
        for future in [self._pool.submit(_warm) for _ in range(sessions)]:
            future.result()

    def throughput(self, target: Target, body: str, seconds: float) -> float:
        """Completed requests per second with one session per worker sending `body` back to back."""
        # Workers connect first; all start together once every one of them (and we) reach the barrier.
        barrier = self._manager.Barrier(self.sessions + 1, timeout=120.0)
        futures = [
            self._pool.submit(_run_worker, target.host, target.port, target.credentials, body, barrier, seconds)
            for _ in range(self.sessions)
        ]
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            for future in futures:
                future.result()  # raises the worker's own error, if one failed
            raise BenchError("throughput workers did not all connect") from None
        return sum(f.result() for f in futures) / seconds

    def close(self) -> None:
        self._pool.shutdown()
        self._manager.shutdown()


def _warm() -> None:
    time.sleep(0.3)  # keeps this worker busy so that the pool starts all of them


def _run_worker(host: str, port: int, creds: Credentials, body: str, barrier: threading.Barrier, seconds: float) -> int:
    try:
        session = Session.connect(host, port, creds)
    except BaseException:
        barrier.abort()
        raise
    with session:
        session.request(body)
        barrier.wait()
        done = 0
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            session.request(body)
            done += 1
    return done
