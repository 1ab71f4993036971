"""How a behaviour says no: `TaskFailure` ends a task as failed, `NotFeasible` refuses a proposed one."""

from __future__ import annotations

from typing import Any


class TaskFailure(Exception):
    """Raised by a role's handler to end the task as failed; the message is the reason."""


class NotFeasible(Exception):
    """Raised by a role's feasibility check; ``counter`` is a counter-proposal envelope, if any."""

    def __init__(self, reason: str, counter: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.counter = counter
