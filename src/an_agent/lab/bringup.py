"""Bringing a lab's agent processes up, bounded by progress rather than by a fixed time.

A big lab on a small machine takes as long as it takes: what must not happen is waiting for ever on an
agent that will not come, or giving up on one that is merely slow while the others keep arriving. Each
agent goes through three steps, seen from the lab process: *started* (its process exists), *joined* (it
said ``hello`` on the control channel: it has loaded the topology and authenticated), *serving* (it said
``ready``: its NETCONF server listens). `wait_serving` waits as long as some agent takes a step at least
every `STALL` seconds, and fails at once when an agent process exits. Its `LabStartError` names each
agent still missing, the step it was waiting for and for how long.

While it waits it writes `PROGRESS_FILE` (JSON, 0600) in the lab's run directory: how many agents serve,
which are missing and what they wait for. ``an-agent lab up`` reads it (`an_agent.lab.daemon`): it waits
for the background lab as long as that file, the lab's log or its agents' databases change
(`progress_marks`; ``STALL`` seconds without), and quotes it when it gives up.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any, Protocol

from an_agent.errors import LabStartError
from an_agent.lab.export import write_private

STALL = 60.0
"""Real seconds without any agent taking a step after which bring-up gives up."""
PROGRESS_FILE = "bring-up.json"
SHOWN = 10
"""Missing agents named in a message (the others are counted)."""


class Arrivals(Protocol):
    """What the lab's control channel saw of its agents (`an_agent.lab.conductor.Conductor`)."""

    def arrivals(self, names: Collection[str]) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
        """Of ``names``: when each that joined did (monotonic), and what each serving one said."""
        ...

    def wait_arrival(self, timeout: float) -> None:
        """Return when an agent joins or serves, or after ``timeout`` seconds."""
        ...


def wait_serving(
    arrivals: Arrivals,
    started: Mapping[str, float],
    dead: Callable[[], str | None],
    progress_file: Path | None = None,
    stall: float = STALL,
) -> dict[str, dict[str, Any]]:
    """Wait until every agent of ``started`` (name -> when its process started, monotonic) serves; returns
    what each said (its ports). `LabStartError` when ``dead`` reports an agent process that ended, or when no
    agent took a step (module docstring) for ``stall`` seconds."""
    names = set(started)
    last_step = time.monotonic()
    steps = -1
    while True:
        joined, ready = arrivals.arrivals(names)
        now = time.monotonic()
        if len(joined) + len(ready) != steps:
            steps, last_step = len(joined) + len(ready), now
            if progress_file is not None:
                write_progress(progress_file, started, joined, ready)
        if names <= set(ready):
            return ready
        ended = dead()
        if ended:
            raise LabStartError(f"{ended}\n{describe(started, joined, ready, now)}")
        if now - last_step >= stall:
            raise LabStartError(
                f"lab bring-up made no progress for {stall:g} s: {describe(started, joined, ready, now)}"
            )
        arrivals.wait_arrival(min(1.0, stall - (now - last_step)))


def missing(
    started: Mapping[str, float], joined: Mapping[str, float], ready: Mapping[str, Any], now: float
) -> list[tuple[str, str, float]]:
    """Each agent not serving yet: its name, what it waits for, and for how many seconds (longest first)."""
    out = []
    for name, since in started.items():
        if name in ready:
            continue
        if name in joined:
            out.append((name, "to serve NETCONF (it joined the lab)", now - joined[name]))
        else:
            out.append((name, "to join the lab's control channel (its process started)", now - since))
    return sorted(out, key=lambda item: (-item[2], item[0]))


def describe(started: Mapping[str, float], joined: Mapping[str, float], ready: Mapping[str, Any], now: float) -> str:
    """``N of M agents serve; waiting for NAME to ... for S s; ...`` (at most `SHOWN` agents named)."""
    waiting = missing(started, joined, ready, now)
    parts = [f"{name} {what} for {seconds:.0f} s" for name, what, seconds in waiting[:SHOWN]]
    more = f"; and {len(waiting) - SHOWN} more" if len(waiting) > SHOWN else ""
    return f"{len(ready)} of {len(started)} agents serve; waiting for " + "; ".join(parts) + more


def write_progress(
    path: Path, started: Mapping[str, float], joined: Mapping[str, float], ready: Mapping[str, Any]
) -> None:
    """`PROGRESS_FILE`: ``serving``, ``agents``, ``waiting`` (``name``, ``for``, ``seconds``), ``at``."""
    now = time.monotonic()
    waiting = missing(started, joined, ready, now)
    doc = {
        "serving": len(ready),
        "agents": len(started),
        "waiting": [{"name": n, "for": what, "seconds": round(s, 1)} for n, what, s in waiting[: SHOWN * 2]],
        "at": time.time(),
    }
    write_private(path, json.dumps(doc, indent=1))


def progress_marks(run_dir: Path) -> tuple[float, int, int]:
    """What changes while a lab in ``run_dir`` comes up: `PROGRESS_FILE`'s mtime, the size of its log
    (``lab.log``) and the number of agents that opened their databases (also with every agent in one process)."""
    try:
        mtime = (run_dir / PROGRESS_FILE).stat().st_mtime
    except OSError:
        mtime = 0.0
    try:
        size = (run_dir / "lab.log").stat().st_size
    except OSError:
        size = 0
    return mtime, size, sum(1 for _ in run_dir.glob("agents/*/agent.db"))


def read_progress(run_dir: Path) -> tuple[float, str | None]:
    """When the lab in ``run_dir`` last made progress (the mtime of `PROGRESS_FILE`, 0 without one) and a
    one-line account of it (None without one)."""
    path = run_dir / PROGRESS_FILE
    try:
        mtime = path.stat().st_mtime
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return 0.0, None
    waiting = "; ".join(f"{w['name']} {w['for']} for {w['seconds']:.0f} s" for w in doc.get("waiting", [])[:SHOWN])
    return mtime, f"{doc.get('serving')} of {doc.get('agents')} agents serve" + (
        f"; waiting for {waiting}" if waiting else ""
    )
