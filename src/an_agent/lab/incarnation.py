"""How many times an agent has started on its state directory: its *incarnation* (1 on a fresh one).

A lab agent's task ids are made from a counter in memory (`PeerConversation.new_task_id`), the same in
every run. A killed and restarted agent starts counting again, so without more its first new task would
take the id of a task it assigned before it died: the executor refuses it (``data-exists``) and that
decision is lost (found by ``lab soak``). The incarnation goes into the ids of a restarted agent.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

from an_agent.errors import StateFull

FILE = "incarnation"


WIDTH = 12
"""The count is written this wide (right-aligned, then a newline): a rewrite in place takes no new space."""


def next_incarnation(state_dir: Path) -> int:
    """Count one more start of the agent whose state is ``state_dir``; returns this start's number.

    The count is written atomically (a new file renamed over the old, synced). When the state directory is
    full, that new file cannot be written: the count is then written over the old one in place, which takes
    no new space (fixed width, `WIDTH`; found by lab soak: an agent restarted twice during a full disk counted
    the same start twice, its ids repeated and its peer refused them, ``data-exists``). When neither can be
    written (a full disk and no count written yet, or one written before `WIDTH`), `StateFull` is raised and
    nothing is counted: the agent must not make an id before its start is counted (``an-agent serve`` waits
    for space).
    """
    path = state_dir / FILE
    try:
        previous = int(path.read_text(encoding="ascii").strip() or "0")
    except (OSError, ValueError):
        previous = 0
    current = previous + 1
    record = f"{current:>{WIDTH}}\n".encode("ascii")
    failure = _replace(path, record)
    if failure is None:
        return current
    try:
        _overwrite(path, record)
    except OSError as exc:
        if _full(failure) or _full(exc):
            raise StateFull(
                f"cannot count this start in {path}: no space left in {state_dir}; nothing was changed: "
                "free space there and the agent can start"
            ) from None
        # Not a full disk (no state directory here: an agent the lab does not run): counted in memory only.
    return current


def _full(error: OSError) -> bool:
    return error.errno in (errno.ENOSPC, errno.EDQUOT)


def _replace(path: Path, record: bytes) -> OSError | None:
    """``path`` now holds ``record`` (a new file renamed over it); the error when it could not be written."""
    temporary = path.with_name(f".{FILE}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, record)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        return exc
    return None


def _overwrite(path: Path, record: bytes) -> None:
    """``record`` written over the start of the existing ``path`` (`OSError` when it cannot be)."""
    fd = os.open(path, os.O_WRONLY)
    try:
        if os.pwrite(fd, record, 0) != len(record):
            raise OSError(f"short write of {path}")
        os.fsync(fd)
    finally:
        os.close(fd)
