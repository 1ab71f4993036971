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


def next_incarnation(state_dir: Path) -> int:
    """Count one more start of the agent whose state is ``state_dir``; returns this start's number.

    The count is written atomically (a new file renamed over the old, synced) before the agent may make a
    task id. When it cannot be written because the state directory is full, `StateFull` is raised and
    nothing is counted: an agent that started anyway would reuse the ids of its last start (found by lab
    soak under ``disk_full``: a task assigned twice under one id); ``an-agent serve`` waits for space.
    """
    path = state_dir / FILE
    try:
        previous = int(path.read_text(encoding="ascii").strip() or "0")
    except (OSError, ValueError):
        previous = 0
    current = previous + 1
    temporary = path.with_name(f".{FILE}.tmp")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, f"{current}\n".encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink()
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise StateFull(
                f"cannot count this start in {path}: no space left in {state_dir}; nothing was changed: "
                "free space there and the agent can start"
            ) from None
        raise
    return current
