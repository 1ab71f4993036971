"""The one mapping between the draft's task-status and A2A v1 ``TaskState`` (DESIGN.md, "One agent, two faces").

=================  ==========================  ==================================================
draft task-status  A2A TaskState               why
=================  ==========================  ==================================================
created            TASK_STATE_SUBMITTED        accepted, not started
processing         TASK_STATE_WORKING
blocked            TASK_STATE_WORKING          waits on an external condition, not on the client;
                                               A2A has no such state
suspended          TASK_STATE_WORKING          paused by the agent and may resume; not an A2A
                                               interrupted state (those wait for the client)
input-required     TASK_STATE_INPUT_REQUIRED
finished           TASK_STATE_COMPLETED        terminal
failed             TASK_STATE_FAILED           terminal
canceled           TASK_STATE_CANCELED         terminal
=================  ==========================  ==================================================

Two draft states share ``TASK_STATE_WORKING``, so the A2A face also puts the draft status itself in the
status metadata under `DRAFT_STATUS_KEY`; reading a state back (`draft_status`) prefers that value.
The other direction: ``TASK_STATE_REJECTED`` reads as ``failed`` (an agent that will not do a task); an
agent of ours never produces it, because a request it refuses creates no task at all.
``TASK_STATE_AUTH_REQUIRED`` and ``TASK_STATE_UNSPECIFIED`` have no draft status (None).

States are the protobuf enum names (the ProtoJSON wire form), so this module needs no SDK import.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from an_agent.model import TaskStatus

DRAFT_STATUS_KEY = "an-agent/task-status"
"""Status-metadata key that carries the exact draft task-status next to the A2A state."""
SENDER_KEY = "an-agent/task-sendFrom"
"""Message-metadata key naming the agent a message is sent for (the draft's ``task-sendFrom``)."""
TASK_ID_KEY = "an-agent/task-id"
"""Message-metadata key of a new task's id proposed by the client (as a NETCONF client chooses it);
without it the agent chooses one."""

TO_A2A: Mapping[TaskStatus, str] = MappingProxyType(
    {
        TaskStatus.CREATED: "TASK_STATE_SUBMITTED",
        TaskStatus.PROCESSING: "TASK_STATE_WORKING",
        TaskStatus.BLOCKED: "TASK_STATE_WORKING",
        TaskStatus.SUSPENDED: "TASK_STATE_WORKING",
        TaskStatus.INPUT_REQUIRED: "TASK_STATE_INPUT_REQUIRED",
        TaskStatus.FINISHED: "TASK_STATE_COMPLETED",
        TaskStatus.FAILED: "TASK_STATE_FAILED",
        TaskStatus.CANCELED: "TASK_STATE_CANCELED",
    }
)

FROM_A2A: Mapping[str, TaskStatus] = MappingProxyType(
    {
        "TASK_STATE_SUBMITTED": TaskStatus.CREATED,
        "TASK_STATE_WORKING": TaskStatus.PROCESSING,
        "TASK_STATE_INPUT_REQUIRED": TaskStatus.INPUT_REQUIRED,
        "TASK_STATE_COMPLETED": TaskStatus.FINISHED,
        "TASK_STATE_FAILED": TaskStatus.FAILED,
        "TASK_STATE_CANCELED": TaskStatus.CANCELED,
        "TASK_STATE_REJECTED": TaskStatus.FAILED,
    }
)


def a2a_state(status: TaskStatus) -> str:
    """The A2A ``TaskState`` name for a draft task-status (every status has one)."""
    return TO_A2A[status]


def draft_status(state: str, metadata: Mapping[str, object] | None = None) -> TaskStatus | None:
    """The draft task-status of an A2A state, preferring the exact one carried in ``metadata``.

    None for states the draft has no word for (auth-required, unspecified).
    """
    exact = (metadata or {}).get(DRAFT_STATUS_KEY)
    if isinstance(exact, str) and exact in TaskStatus.__members__.values():
        status = TaskStatus(exact)
        if TO_A2A[status] == state:
            return status
    return FROM_A2A.get(state)
