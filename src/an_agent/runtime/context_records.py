"""The agent's own records of its exchanges, in ``/irtf-agent:context`` (draft-wang 5.2, Figure 6).

"This model provides context retrieval capabilities by recording all agent
communication records in list form": the executing agent writes one
``context`` entry per exchange it takes part in, as the YANG defines it —

- a task assignment: ``context[id='task:<task-id>']`` with ``sendFrom`` (the
  task's ``task-sendFrom``, else the user who assigned it), ``sendTo`` (this
  agent), ``request-info`` (the task's ``content``, its first ``msg-data`` as
  ``dataParam``, the time); ``response-info/time`` is added when the task ends;
- a ``task-negotiate``: ``context[id='negotiate:<task-id>:<time>']`` with the
  turns as the request content, answered at once (``response-info/time``).

Records are written after the exchange was admitted (a task's after its
``created`` notification went out), with the datastore's own edit
(validated by libyang like any edit). They are history: deleting a task
keeps its record; a task that ended before its record was written gets
its end time in the record. A record that cannot be written (e.g. its id was
taken by a client's entry) is logged and skipped: the exchange itself
stands.
"""

from __future__ import annotations

import logging
import threading

from lxml import etree

from an_agent.clock import Clock, to_rfc3339
from an_agent.errors import AnAgentError
from an_agent.model import IRTF_AGENT_NS, ContextEntry, NegotiationRequest, Task
from an_agent.runtime.datastore import Datastore

log = logging.getLogger(__name__)

_CONTEXT_TAG = f"{{{IRTF_AGENT_NS}}}context"


def task_record_id(task_id: str) -> str:
    """The id of the context record of a task's assignment."""
    return f"task:{task_id}"


class ContextRecorder:
    """Writes context records into the running datastore (see the module docstring)."""

    def __init__(self, datastore: Datastore, clock: Clock, agent_name: str) -> None:
        self._datastore = datastore
        self._clock = clock
        self._agent_name = agent_name
        # The record of a task is written after the task was admitted (its "created" notification
        # is not held up by a second datastore edit), so a quick task may end first: its end time
        # waits here for the record. One lock orders a task's two writes.
        self._lock = threading.Lock()
        self._ended_unrecorded: dict[str, float] = {}

    def assigned(self, task: Task, assigned_by: str) -> None:
        """Record a task this agent was assigned (with its end, if it already ended)."""
        with self._lock:
            ended = self._ended_unrecorded.pop(task.task_id, None)
            entry = ContextEntry(
                id=task_record_id(task.task_id),
                send_from=task.send_from or assigned_by,
                send_to=self._agent_name,
                request_content=task.content or "",
                request_time=self._clock.now(),
                request_data_param=task.msg_data[0] if task.msg_data else None,
                response_time=ended,
            )
            self._write(entry.to_xml(operation="create"))

    def answered(self, task_id: str) -> None:
        """The task ended: its record gets ``response-info/time`` (now, or when the record is written)."""
        record = task_record_id(task_id)
        with self._lock:
            if not self._datastore.find_entries(_CONTEXT_TAG, ("id",), [(record,)]):
                if len(self._ended_unrecorded) < 10_000:  # bounded: tasks with no record never claim theirs
                    self._ended_unrecorded[task_id] = self._clock.now()
                return
            el = etree.Element(_CONTEXT_TAG)
            etree.SubElement(el, f"{{{IRTF_AGENT_NS}}}id").text = record
            response = etree.SubElement(el, f"{{{IRTF_AGENT_NS}}}response-info")
            etree.SubElement(response, f"{{{IRTF_AGENT_NS}}}time").text = to_rfc3339(self._clock.now())
            self._write(el)

    def negotiated(self, request: NegotiationRequest, principal_name: str) -> None:
        """Record a ``task-negotiate`` this agent answered."""
        now = self._clock.now()
        entry = ContextEntry(
            id=f"negotiate:{request.task_id}:{to_rfc3339(now)}",
            send_from=request.send_from or principal_name,
            send_to=self._agent_name,
            request_content="\n".join(request.content) or f"{request.type} negotiation of task {request.task_id}",
            request_time=now,
            response_time=now,
        )
        self._write(entry.to_xml(operation="merge"))  # two turns in the same instant: one record

    def _write(self, element: etree._Element) -> None:
        config = etree.Element(f"{{{IRTF_AGENT_NS}}}config")
        config.append(element)
        try:
            with self._datastore.edit(config, "merge") as pending:
                pending.commit()
        except AnAgentError as exc:
            log.warning("context record %s not written: %s", element.findtext(f"{{{IRTF_AGENT_NS}}}id"), exc)
