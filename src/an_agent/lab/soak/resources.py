"""What each agent process uses, sampled over a soak: RSS, open descriptors, threads, SQLite file sizes.

`ResourceSampler` reads ``/proc/PID/status`` and ``/proc/PID/fd`` of every agent process and the sizes of
the databases in its state directory every ``interval`` wall seconds, on a thread of its own. A restarted
agent is a new process: its samples start a new *life* (`Sample.pid`), and growth is judged per life.
`sqlite_integrity` runs SQLite's ``PRAGMA integrity_check`` on an agent's databases (read-only).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

DATABASES = ("agent.db", "evolution.db")
"""An agent's SQLite files in its state directory (`an_agent.store`)."""


@dataclass(frozen=True)
class Sample:
    """One agent process at one moment (``wall``: seconds since the soak started)."""

    wall: float
    agent: str
    pid: int
    rss_kb: int
    fds: int
    threads: int
    sqlite_bytes: int
    """The agent's databases with their WAL files."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def sample_process(agent: str, pid: int, state_dir: Path, wall: float) -> Sample | None:
    """`Sample` of process ``pid`` now; None when it is gone."""
    rss = threads = -1
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, ValueError):
        return None
    if rss < 0 or threads < 0:
        return None  # a zombie: no memory left to measure
    return Sample(round(wall, 1), agent, pid, rss, fds, threads, sqlite_bytes(state_dir))


def sqlite_bytes(state_dir: Path) -> int:
    """The size of an agent's databases and their write-ahead logs (0 for those missing)."""
    total = 0
    for name in DATABASES:
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                total += (state_dir / f"{name}{suffix}").stat().st_size
    return total


def sqlite_integrity(state_dir: Path) -> dict[str, str]:
    """``PRAGMA integrity_check`` of each database of an agent (read-only): ``{file: "ok" | what is wrong}``.

    A database that cannot be opened is reported as such (a missing one too: an agent has both).
    """
    out: dict[str, str] = {}
    for name in DATABASES:
        path = state_dir / name
        if not path.exists():
            out[name] = "missing"
            continue
        try:
            with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)) as db:
                rows = db.execute("PRAGMA integrity_check").fetchall()
        except sqlite3.Error as exc:
            out[name] = f"cannot check: {exc}"
            continue
        out[name] = "ok" if rows == [("ok",)] else "; ".join(str(r[0]) for r in rows[:5])
    return out


class ResourceSampler:
    """Samples every agent of ``pids()`` each ``interval`` wall seconds until `stop` (module docstring)."""

    def __init__(
        self, pids: Callable[[], Mapping[str, int]], state_dir_of: Callable[[str], Path], interval: float = 5.0
    ) -> None:
        self._pids = pids
        self._state_dir_of = state_dir_of
        self.interval = interval
        self.samples: list[Sample] = []
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="soak-resources", daemon=True)

    def start(self) -> ResourceSampler:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def elapsed(self) -> float:
        """Wall seconds since `start`."""
        return round(time.monotonic() - self._started, 1)

    def sample_now(self) -> None:
        wall = time.monotonic() - self._started
        for agent, pid in sorted(self._pids().items()):
            sample = sample_process(agent, pid, self._state_dir_of(agent), wall)
            if sample is not None:
                self.samples.append(sample)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample_now()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(self.interval + 5.0)
