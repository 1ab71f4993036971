"""Faults of the lab itself (``lab run --chaos``): an agent's process killed mid-scenario and restarted.

``kill:AGENT@SECONDS`` (simulated seconds after the start): at that instant the lab sends SIGKILL to the
agent's process, stops counting it (its busy state, its network events, the hand-offs it was waiting
for: that process's memory is gone) and starts it again on the same state directory and port. The
agent's server resumes its unfinished tasks from its database; its peers' sessions broke, and they
connect again on their next use, resubscribing with replay of what the agent logged meanwhile.
Simulated time stands still while the agent restarts (the chaos event is a lab activity).

Each event is reported (`ChaosEvent`): when, which process was killed and which started, how long the
restart took in real seconds, and the agent's tasks that were unfinished when it died.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from an_agent.errors import ConfigError
from an_agent.lab.spec import Topology

_KILL = re.compile(r"^kill:(?P<agent>[^@\s]+)@(?P<at>\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class ChaosSpec:
    """One fault of the lab to play: ``kind`` (``kill``) of ``agent`` at ``at`` simulated seconds."""

    kind: str
    agent: str
    at: float


def parse_chaos(text: str, topology: Topology) -> ChaosSpec:
    """``kill:AGENT@SECONDS``; `ConfigError` for another form or an agent the topology lacks."""
    match = _KILL.match(text.strip())
    if match is None:
        raise ConfigError(f"--chaos expects kill:AGENT@SECONDS (simulated seconds after the start), got {text!r}")
    agent = match["agent"]
    if agent not in {a.name for a in topology.agents}:
        raise ConfigError(f"--chaos {text}: no agent {agent!r} in topology {topology.name}")
    return ChaosSpec("kill", agent, float(match["at"]))


@dataclass
class ChaosEvent:
    """What one chaos event did (``chaos`` in ``lab run --json``)."""

    kind: str
    agent: str
    at: float
    """Simulated seconds after the start."""
    killed_pid: int | None = None
    restarted_pid: int | None = None
    restart_wall_s: float | None = None
    """Real seconds from the kill until the agent served again."""
    unfinished_tasks: list[str] = field(default_factory=list)
    """The agent's tasks that had not ended when it was killed (they resume after the restart)."""
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class Restarter(Protocol):
    """The lab's agents as processes (`an_agent.lab.fleet.ProcessFleet`)."""

    def kill_and_restart(self, name: str) -> tuple[int, int]:
        """SIGKILL agent ``name``'s process and start it again; returns (killed pid, new pid)."""
        ...

    def unfinished_tasks(self, name: str) -> list[str]:
        """The ids of agent ``name``'s tasks that have not ended."""
        ...


class ChaosPlayer:
    """Plays one `ChaosSpec` when the lab's kernel reaches it (a timer of the kernel)."""

    def __init__(self, spec: ChaosSpec, fleet: Restarter) -> None:
        self.spec = spec
        self.fleet = fleet
        self.event = ChaosEvent(spec.kind, spec.agent, spec.at)

    def __call__(self) -> None:
        started = time.monotonic()
        try:
            self.event.unfinished_tasks = self.fleet.unfinished_tasks(self.spec.agent)
            self.event.killed_pid, self.event.restarted_pid = self.fleet.kill_and_restart(self.spec.agent)
        except Exception as exc:  # reported in the result; the run goes on (and its checks tell the rest)
            self.event.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self.event.restart_wall_s = round(time.monotonic() - started, 3)


def chaos_lines(events: list[dict[str, Any]]) -> list[str]:
    """The chaos events of a result (``LabResult.chaos``) for the text outcome; empty without any."""
    lines = ["  chaos (faults of the lab itself):"] if events else []
    for event in events:
        cost = event.get("time_to_restore_s") or {}
        if event["kind"] == "partition":  # lab/partition.py (--netns)
            lines.append(
                f"    partition {' | '.join(event['agents'])} at +{event['at']:g} s for {event['duration']:g} s; "
                f"time to restore {cost.get('with')} s with, {cost.get('without')} s without "
                f"(cost {cost.get('cost_s')} s)"
            )
            continue
        lines.append(
            f"    {event['kind']} {event['agent']} at +{event['at']:g} s: pid {event['killed_pid']} killed, "
            f"pid {event['restarted_pid']} serving {event['restart_wall_s']} s later (real); unfinished tasks "
            f"{', '.join(event['unfinished_tasks']) or 'none'}; time to restore {cost.get('with')} s with, "
            f"{cost.get('without')} s without (cost {cost.get('cost_s')} s)"
            + (f"; ERROR {event['error']}" if event.get("error") else "")
        )
    return lines


def chaos_html(events: list[dict[str, Any]]) -> str:
    """The chaos section of the HTML report; empty without chaos."""
    from html import escape

    if not events:
        return ""
    rows = "".join(
        "<tr>"
        + "".join(
            f"<td>{escape(str(v))}</td>"
            for v in (
                f"{e['kind']} {' | '.join(e['agents'])} for {e['duration']:g} s"
                if e["kind"] == "partition"
                else f"{e['kind']} {e['agent']}",
                f"+{e['at']:g} s",
                "-" if e["kind"] == "partition" else f"{e['killed_pid']} \u2192 {e['restarted_pid']}",
                e.get("restart_wall_s", "-"),
                ", ".join(e.get("unfinished_tasks", [])) or "-",
                (e.get("time_to_restore_s") or {}).get("with"),
                (e.get("time_to_restore_s") or {}).get("without"),
                e.get("error") or "",
            )
        )
        + "</tr>"
        for e in events
    )
    return (
        "<h2>Chaos: faults of the lab itself</h2><p>Each agent process killed (SIGKILL) and restarted from its "
        "state directory, each partition between two agents (--netns); the time to restore of this run and of "
        "the same run without chaos.</p>"
        "<table><tr><th>event</th><th>at</th><th>pid</th><th>restart (real s)</th><th>unfinished tasks</th>"
        f"<th>time to restore with (s)</th><th>without (s)</th><th>error</th></tr>{rows}</table>"
    )


# ---- the faults of a soak (`an_agent.lab.soak`): besides kill, each a small function -----------------
BALLAST = ".soak-ballast"
"""The file that fills an agent's state directory (``disk_full``), removed when space returns."""


def freeze(pid: int) -> None:
    """SIGSTOP ``pid``: a frozen agent keeps its sockets open and answers nothing (its peers' requests time
    out and are retried) until `thaw`."""
    os.kill(pid, signal.SIGSTOP)


def thaw(pid: int) -> None:
    """SIGCONT ``pid`` (already gone: nothing to do)."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)


def control_peers(pid: int, control_port: int) -> set[tuple[str, int]]:
    """The client ends (``(host, port)``) of process ``pid``'s TCP connections to ``control_port``.

    Read from ``/proc/PID/net/tcp`` (the table of the process's own network namespace) and its open
    sockets (``/proc/PID/fd``), so it works for agents in a ``--netns`` namespace as on loopback.
    """
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    peers = set()
    with contextlib.suppress(OSError), open(f"/proc/{pid}/net/tcp", encoding="ascii") as table:
        next(table)  # the header
        for line in table:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if inode in inodes and int(remote.split(":")[1], 16) == control_port:
                peers.add(_hex_address(local))
    return peers


def _hex_address(text: str) -> tuple[str, int]:
    """``0100007F:1F90`` (as /proc/net/tcp writes an IPv4 address, little-endian) -> ``("127.0.0.1", 8080)``."""
    host, port = text.split(":")
    return socket.inet_ntoa(int(host, 16).to_bytes(4, "little")), int(port, 16)


def mount_tmpfs(directory: Path, size_mb: int) -> None:
    """Mount a tmpfs of ``size_mb`` MB (mode 0700) on ``directory`` (made if missing); needs root.

    `ConfigError` saying why when mount refuses (not root, no ``mount``).
    """
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv = ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0700", "tmpfs", str(directory)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise ConfigError(f"cannot mount a tmpfs on {directory}: {exc}") from None
    if done.returncode != 0:
        raise ConfigError(f"cannot mount a tmpfs on {directory} (needs root): {done.stderr.strip()}")


def unmount(directory: Path) -> str | None:
    """Unmount ``directory`` (lazily when busy: a process still in it); None, or why it failed."""
    done = subprocess.run(["umount", str(directory)], capture_output=True, text=True, check=False)
    if done.returncode == 0:
        return None
    lazy = subprocess.run(["umount", "-l", str(directory)], capture_output=True, text=True, check=False)
    return None if lazy.returncode == 0 else f"umount {directory}: {lazy.stderr.strip() or done.stderr.strip()}"


def fill(directory: Path) -> int:
    """Fill the file system of ``directory`` with a ballast file until it refuses (ENOSPC); bytes written.

    Again: tops the ballast up (space freed meanwhile, e.g. by SQLite truncating a write-ahead log)."""
    written = 0
    block = b"\0" * (1 << 20)
    fd = os.open(directory / BALLAST, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        while True:
            try:
                written += os.write(fd, block)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                block = block[: len(block) // 2]  # the last bytes too, down to the last page
                if len(block) < 4096:
                    return written
    finally:
        os.close(fd)


def free(directory: Path) -> None:
    """Give the space of `fill` back."""
    with contextlib.suppress(FileNotFoundError):
        (directory / BALLAST).unlink()
