"""How many times an agent has started on its state directory: its *incarnation* (1 on a fresh one).

A lab agent's task ids are made from a counter in memory (`PeerConversation.new_task_id`), the same in
every run. A killed and restarted agent starts counting again, so without more its first new task would
take the id of a task it assigned before it died: the executor refuses it (``data-exists``) and that
decision is lost (found by ``lab soak``). The incarnation goes into the ids of a restarted agent.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

FILE = "incarnation"


def next_incarnation(state_dir: Path) -> int:
    """Count one more start of the agent whose state is ``state_dir``; returns this start's number.

    The count is written atomically (a new file renamed over the old, synced). When it cannot be written
    (the state directory is full) this start still counts one more than the last written, so the agent
    starts; a later start reads that same count again, so a restart during a full disk may reuse the ids
    of the one before it (not of any earlier one).
    """
    path = state_dir / FILE
    try:
        previous = int(path.read_text(encoding="ascii").strip() or "0")
    except (OSError, ValueError):
        previous = 0
    current = previous + 1
    temporary = path.with_name(f".{FILE}.tmp")
    with contextlib.suppress(OSError):
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, f"{current}\n".encode("ascii"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    return current
