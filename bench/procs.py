"""What a server process tree costs, read from /proc (Linux only).

CPU is `utime + stime` of /proc/<pid>/stat (clock ticks, includes threads that
already exited); memory is PSS from /proc/<pid>/smaps_rollup, so pages shared
between the processes of a tree (sshd children, libraries) are counted once
in total, not once per process.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")
_PROC = Path("/proc")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        raw = (_PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name is in parentheses and may contain spaces: split after the last ')'.
    return raw[raw.rindex(")") + 2 :].split()


def children_map() -> dict[int, list[int]]:
    """Parent pid -> child pids, for every process visible now."""
    tree: dict[int, list[int]] = {}
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None:
            tree.setdefault(int(fields[1]), []).append(int(entry.name))
    return tree


def tree(roots: Iterable[int]) -> list[int]:
    """The given pids and all their live descendants."""
    kids = children_map()
    out: list[int] = []
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid in out:
            continue
        out.append(pid)
        stack.extend(kids.get(pid, []))
    return out


def cpu_seconds(pids: Iterable[int]) -> float:
    """Sum of user + system CPU seconds of the given processes (missing ones count 0)."""
    ticks = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            # After the name: state ppid ... utime is field 14 of the whole line, index 11 here.
            ticks += int(fields[11]) + int(fields[12])
    return ticks / _TICK


def pss_bytes(pids: Iterable[int]) -> int:
    """Sum of the proportional set size of the given processes, in bytes."""
    total = 0
    for pid in pids:
        try:
            text = (_PROC / str(pid) / "smaps_rollup").read_text()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        for line in text.splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1]) * 1024
                break
    return total


_KIB_FIELD = re.compile(r"^(\w+):\s+(\d+) kB$", re.MULTILINE)


def private_and_shared_bytes(pids: Iterable[int]) -> tuple[int, int]:
    """(private resident bytes summed over `pids`, the largest shared resident bytes of one of them).

    Private pages (``Private_Clean`` + ``Private_Dirty``) belong to one process; shared pages (libraries,
    the interpreter) are mapped by many. N identical processes cost about N x private + shared once,
    which is how a fleet's memory is projected from a few of them.
    """
    private = 0
    shared = 0
    for pid in pids:
        try:
            text = (_PROC / str(pid) / "smaps_rollup").read_text()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        kib = {match[1]: int(match[2]) for match in _KIB_FIELD.finditer(text)}
        private += (kib.get("Private_Clean", 0) + kib.get("Private_Dirty", 0)) * 1024
        shared = max(shared, (kib.get("Shared_Clean", 0) + kib.get("Shared_Dirty", 0)) * 1024)
    return private, shared


def rss_bytes(pids: Iterable[int]) -> int:
    """Sum of the resident set size of the given processes, in bytes."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in pids:
        try:
            total += int((_PROC / str(pid) / "statm").read_text().split()[1]) * page
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def terminate(pids: Iterable[int], grace: float = 5.0) -> None:
    """SIGTERM the given processes, then SIGKILL whichever is still alive after `grace` s."""
    targets = [pid for pid in pids if alive(pid)]
    for pid in targets:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(alive(pid) for pid in targets):
        time.sleep(0.05)
    for pid in targets:
        if alive(pid):
            _signal(pid, signal.SIGKILL)


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):  # exited between the check and the signal
        os.kill(pid, sig)


def start_serve(arguments: Sequence[str], env: Mapping[str, str] | None = None) -> tuple[subprocess.Popen[str], int]:
    """Start ``an-agent serve --port 0 ARGUMENTS`` and return the process and the port it announced.

    Its stderr is drained on a thread after the announcement, so the agent never blocks on a full pipe.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "an_agent.cli", "serve", "--port", "0", *arguments],
        stderr=subprocess.PIPE,
        text=True,
        env=None if env is None else dict(env),
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        found = re.search(r" on [^ ]+:(\d+)[ ,]", line)
        if found:
            threading.Thread(target=collections.deque, args=(proc.stderr, 0), daemon=True).start()
            return proc, int(found.group(1))
    raise RuntimeError(f"the agent did not start (exit status {proc.wait()})")
