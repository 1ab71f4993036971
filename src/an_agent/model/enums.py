"""Enumerations of the irtf-agent YANG module; each value is the exact YANG enum name."""

from __future__ import annotations

from enum import StrEnum


class TaskStatus(StrEnum):
    """``task-status``: where a task is in its life."""

    CREATED = "created"
    PROCESSING = "processing"
    BLOCKED = "blocked"
    SUSPENDED = "suspended"
    INPUT_REQUIRED = "input-required"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELED = "canceled"

    @property
    def terminal(self) -> bool:
        """True for the end states (finished, failed, canceled): no transition leaves them."""
        return self in _TERMINAL


_TERMINAL = frozenset({TaskStatus.FINISHED, TaskStatus.FAILED, TaskStatus.CANCELED})


class CommuType(StrEnum):
    """``commuType``: the operation a message stands for (draft-wang-nmrg-magent-im msg-header)."""

    CAPABILITY_REQUEST = "CapabilityRequest"
    TASK_ASSIGN = "taskAssign"
    TASK_CANCEL = "taskCancel"
    FEASIBILITY_NEGOTIATE = "FeasibilityNegotiate"
    FULFILLMENT_NEGOTIATE = "FulfillmentNegotiate"
    TASK_RESULT_QUERY = "taskResultQuery"
    TASK_RESULT_SUBSCRIBE = "taskResultSubscribe"
    TASK_RESULT_NOTIFY = "taskResultNotify"


class NegotiationType(StrEnum):
    """``task-negotiate`` input ``type``: check feasibility before, or evaluate a result after."""

    FEASIBILITY = "FEASIBILITY"
    FULFILLMENT = "FULFILLMENT"


class DataType(StrEnum):
    """``data-params/dataType``."""

    TEXT = "text"
    IMAGE = "image"
    AUDIO = "audio"
    VIDEO = "video"
