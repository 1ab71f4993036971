"""Following a task over A2A: its status changes from the durable notification log, as A2A stream events.

`TaskFollower.follow` is what ``SendStreamingMessage``, ``SubscribeToTask``
and a blocking ``SendMessage`` of `an_agent.a2a.face` wait on: a subscription
of the operation layer (``start_time`` replay, then live events) turned into
the ``Task`` first and then ``TaskStatusUpdateEvent``/``TaskArtifactUpdateEvent``,
never going back in time (spec 11.7), until the task ends or is interrupted.
Apart from the request handler because it is one stateful loop with its own
rules; `call` and `a2a_task`, which both need, run an operation off the event
loop (its refusal as the A2A error) and give a draft task as the SDK's ``Task``.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncGenerator, Callable
from typing import Any, Literal

from lxml import etree

from an_agent.a2a.convert import artifact_json, status_event_json, task_json, task_json_at
from an_agent.a2a.sdk import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
    json_to_protobuf,
    to_a2a_error,
)
from an_agent.errors import RpcError, StateFull
from an_agent.model import IRTF_AGENT_NS, ConditionNotification
from an_agent.model import Task as DraftTask
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import Subscribe

_CONDITION = f"{{{IRTF_AGENT_NS}}}condition-notifications"
_TASK_ID = f"{{{IRTF_AGENT_NS}}}task-id"
_session_ids = itertools.count(-1, -1)  # A2A streams are sessions of the operation layer; NETCONF's are > 0

Event = Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent | Message

TERMINAL = frozenset(
    TaskState.Value(name)
    for name in ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED")
)
ENDED = TERMINAL | {TaskState.Value(name) for name in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED")}
"""Terminal or interrupted: where a blocking SendMessage returns and a stream closes (spec 3.2.2)."""


def a2a_task(task: DraftTask) -> Task:
    """``task`` as the SDK's ``Task`` (through `an_agent.a2a.convert.task_json`)."""
    return json_to_protobuf(task_json(task), Task())


def _state_of(event: ConditionNotification) -> int:
    """The A2A ``TaskState`` an event moves its task to (through the one mapping table)."""
    state: int = json_to_protobuf(status_event_json(event), TaskStatusUpdateEvent()).status.state
    return state


async def call(work: Callable[[], Any]) -> Any:
    """Run an operation (blocking, thread-safe) off the event loop; translate its refusal."""
    try:
        return await asyncio.to_thread(work)
    except RpcError as exc:
        raise to_a2a_error(exc) from None
    except StateFull as exc:  # refused whole, as over NETCONF (resource-denied): not an "unhandled exception"
        raise to_a2a_error(RpcError.resource_denied(str(exc))) from None


class TaskFollower:
    """Streams of the tasks of one `Operations` (`follow`)."""

    def __init__(self, operations: Operations) -> None:
        self.operations = operations

    async def task_at(self, principal: Principal, task_id: str, event: ConditionNotification | None) -> Task:
        """The task as ``event`` left it (its current state when there is no event)."""
        task = await call(lambda: self.operations.get_task(principal, task_id))
        if event is None:
            return a2a_task(task)
        return json_to_protobuf(task_json_at(task, event), Task())

    async def follow(
        self,
        principal: Principal,
        task_id: str,
        since: float | None,
        answer: Callable[[], object] | None = None,
        lead: Literal["first", "current"] | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The task's status changes from the durable log since ``since``, until it ends or is interrupted.

        ``answer`` (with ``since`` None) changes the task once the live subscription is in place, so the
        stream holds exactly what follows it. ``lead`` puts a ``Task`` first, as streams must (spec 3.1.2,
        3.1.6), without ever going back in time after it (11.7): ``"first"``, the task as the first event
        left it (created, or answered), then each later event; ``"current"``, the task as the replayed
        log leaves it at the subscription (events up to ``replayComplete`` are folded into it), then the
        events after.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()

        def deliver(item: str | None) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def wanted(event: etree._Element) -> bool:
            return event.tag == _CONDITION and event.findtext(_TASK_ID) == task_id

        session_id = next(_session_ids)
        self.operations.open_session(session_id, principal, lambda: deliver(None))
        try:
            subscription = await call(
                lambda: self.operations.subscribe(
                    principal, session_id, Subscribe(wanted, start_time=since), lambda xml: deliver(xml)
                )
            )
            subscription.start()
            if answer is not None:
                await call(answer)
            folded: ConditionNotification | None = None
            while (xml := await queue.get()) is not None:
                note = etree.fromstring(xml.encode("utf-8"))
                if note.find(f".//{_CONDITION}") is None:
                    if lead == "current" and note.find(".//{*}replayComplete") is not None:
                        lead = None
                        yield await self.task_at(principal, task_id, folded)
                        if folded is not None and _state_of(folded) in ENDED:
                            return
                    continue  # replayComplete and other markers
                event = ConditionNotification.from_xml(note)
                if lead == "current":
                    folded = event
                    continue
                if lead == "first":
                    lead = None
                    yield await self.task_at(principal, task_id, event)
                    if _state_of(event) in ENDED:
                        return
                    continue
                if event.status.terminal and event.status.value == "finished":
                    task = await call(lambda: self.operations.get_task(principal, task_id))
                    artifact = artifact_json(task)
                    if artifact is not None:
                        yield json_to_protobuf(
                            {"taskId": task_id, "contextId": task_id, "artifact": artifact, "lastChunk": True},
                            TaskArtifactUpdateEvent(),
                        )
                status = json_to_protobuf(status_event_json(event), TaskStatusUpdateEvent())
                yield status
                if status.status.state in ENDED:
                    return
        finally:
            await asyncio.to_thread(self.operations.close_session, session_id)
