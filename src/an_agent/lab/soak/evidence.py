"""What the soak's checkers judge (`Evidence`): the journal, every agent's durable state, the network's
fault records and change log, the chaos played and the resource samples — plain dicts, so that a test can
prepare one (or alter a real one) and show a checker failing.

`read_durable` reads an agent's SQLite files directly (read-only), not over NETCONF: it works after the
agent stopped, and what it shows is what survives a kill.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_TAG = re.compile(r"<(task-id|task-status|task-sendTo|task-sendFrom)>([^<]*)</")


@dataclass
class Evidence:
    """Everything the checkers read (module docstring). Times are simulated seconds since the epoch, except
    ``wall`` fields (seconds since the soak started)."""

    start: float
    end: float
    final: bool
    """True once the run is over (the loops had their time to close); False for the checks along the way."""
    notes: list[dict[str, Any]] = field(default_factory=list)
    """Journal notes (`Note.to_dict`)."""
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    """Journal exchanges (`Exchange.to_dict`: ``from``, ``to``, ``operation``, ``commuType``, ``task_id``...)."""
    tasks: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per agent, its durable tasks: ``{task_id: status}``."""
    logs: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    """Per agent, its durable notification log in order: ``task_id``, ``status``, ``send_to``."""
    faults: list[dict[str, Any]] = field(default_factory=list)
    """The network's fault records (`FaultRecord.to_dict`) with ``repair_minutes``."""
    changes: list[dict[str, Any]] = field(default_factory=list)
    """The network's change log (`Change.to_dict`)."""
    chaos: list[dict[str, Any]] = field(default_factory=list)
    """The lab faults played: ``kind``, ``target``, ``at``/``end`` (simulated), ``agents`` touched,
    ``restarted`` (a new process), ``integrity`` (`sqlite_integrity` of a restarted agent), ``error``."""
    integrity: dict[str, dict[str, str]] = field(default_factory=dict)
    """Per agent, `sqlite_integrity` at the end of the run."""
    samples: list[dict[str, Any]] = field(default_factory=list)
    """`Sample.to_dict` of every agent process over the run."""
    wall: float = 0.0
    """Wall seconds of the run so far."""
    end_reason: str = ""
    """Why the lab's clock stopped (`SimKernel.run`): ``idle`` when nothing was left to do; empty along the way."""


def read_durable(state_dir: Path) -> tuple[dict[str, str], list[dict[str, str]]]:
    """An agent's durable tasks (``{task_id: status}``) and notification log, read-only from ``agent.db``."""
    path = state_dir / "agent.db"
    if not path.exists():
        return {}, []
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30.0)) as db:
        tasks = {str(t): str(s) for t, s in db.execute("SELECT task_id, status FROM task_state")}
        log = []
        for (xml,) in db.execute("SELECT xml FROM notification_log ORDER BY seq"):
            values = dict(_TAG.findall(str(xml)))
            if "task-id" in values and "task-status" in values:
                log.append(
                    {
                        "task_id": values["task-id"],
                        "status": values["task-status"],
                        "send_to": values.get("task-sendTo", ""),
                    }
                )
    return tasks, log
