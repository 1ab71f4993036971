"""``/irtf-agent:tasks/task[task-id]``: a task one agent assigns to another (draft section 5.2)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from an_agent.model import _xml as x
from an_agent.model.enums import CommuType, TaskStatus
from an_agent.model.input_required import InputRequired, input_required_from_xml, input_required_to_xml
from an_agent.model.ns import AN_AGENT_TRACE_NS

_TRACEPARENT = f"{{{AN_AGENT_TRACE_NS}}}traceparent"


@dataclass
class TaskSubscription:
    """``task-subscription``: how the assigner wants to hear about status changes."""

    protocol: str | None = None
    method: str | None = None
    url: str | None = None


@dataclass
class TaskResult:
    """``result`` (config false): what the executing agent reports; it fills this in, never the assigner."""

    summary: str | None = None
    reason: str | None = None
    format: str | None = None
    data: str | None = None
    updated_time: float | None = None
    """Seconds since the epoch of the last change to the result."""

    def to_xml(self) -> etree._Element:
        """The ``<result>`` element (also the content of a final ``condition-notifications``' ``data``)."""
        res = x.root("result")
        x.leaf(res, "summary", self.summary)
        x.leaf(res, "reason", self.reason)
        x.leaf(res, "format", self.format)
        x.leaf(res, "data", self.data)
        x.time_leaf(res, "updated-time", self.updated_time)
        return res


@dataclass
class Task:
    """One task entry. Only ``task_id`` is required; every unset field is left out of the XML.

    That makes a `Task` also the body of a partial edit: ``Task("t1",
    commu_type=CommuType.TASK_CANCEL)`` is the whole merge that cancels t1.
    ``status`` and ``result`` are state (config false): they are written to XML
    only with ``include_state=True`` (replies), never in an ``<edit-config>``.
    """

    task_id: str
    send_from: str | None = None
    send_to: str | None = None
    commu_type: CommuType | None = None
    content: str | None = None
    """Prompt text with ``## target object`` / ``## task description`` / ``## environmental information``."""
    subscription: TaskSubscription | None = None
    task_async: bool | None = None
    status: TaskStatus | None = None
    expected_response: str | None = None
    term_explains: dict[str, str] = field(default_factory=dict)
    """term -> explaination (the YANG leaf keeps the draft's spelling)."""
    msg_data: list[str] = field(default_factory=list)
    """ids of ``data-params`` entries this task carries."""
    context: list[str] = field(default_factory=list)
    """ids of ``context`` entries this task refers to."""
    result: TaskResult | None = None
    input_required: list[InputRequired] = field(default_factory=list)
    """State: what the task waits for while its status is ``input-required`` (else empty)."""
    traceparent: str | None = None
    """``an-agent-trace:traceparent``: the W3C trace context it was assigned in (`an_agent.tracing`)."""

    def to_xml(self, include_state: bool = False, operation: str | None = None) -> etree._Element:
        """The ``<task>`` element (key first, then YANG order).

        ``operation`` sets the RFC 6241 edit-config operation on the entry
        (e.g. ``create`` so that an existing task-id is refused with data-exists).
        """
        el = x.root("task", operation=operation)
        x.leaf(el, "task-id", self.task_id)
        x.leaf(el, "task-sendFrom", self.send_from)
        x.leaf(el, "task-sendTo", self.send_to)
        x.leaf(el, "commuType", self.commu_type)
        x.leaf(el, "content", self.content)
        if self.subscription is not None:
            sub = x.child(el, "task-subscription")
            x.leaf(sub, "subscript-protocol", self.subscription.protocol)
            x.leaf(sub, "subscript-method", self.subscription.method)
            x.leaf(sub, "subscript-url", self.subscription.url)
        x.leaf(el, "task-async", self.task_async)
        if include_state:
            x.leaf(el, "task-status", self.status)
            input_required_to_xml(el, self.input_required)
        x.leaf(el, "expected-response", self.expected_response)
        for term, explanation in self.term_explains.items():
            entry = x.child(el, "term-explains")
            x.leaf(entry, "term", term)
            if explanation:
                x.leaf(entry, "explaination", explanation)
        x.leaf_list(el, "msg-data", self.msg_data)
        x.leaf_list(el, "context", self.context)
        if include_state and self.result is not None:
            el.append(self.result.to_xml())
        if self.traceparent is not None:
            etree.SubElement(el, _TRACEPARENT, nsmap={"agtrace": AN_AGENT_TRACE_NS}).text = self.traceparent
        return el

    @classmethod
    def from_xml(cls, el: etree._Element) -> Task:
        """Parse a ``<task>`` element (state nodes are read when present)."""
        x.expect(el, "task")
        sub_el = x.find(el, "task-subscription")
        res_el = x.find(el, "result")
        return cls(
            task_id=x.required_text(el, "task-id"),
            send_from=x.text(el, "task-sendFrom"),
            send_to=x.text(el, "task-sendTo"),
            commu_type=x.enum_text(el, "commuType", CommuType),
            content=x.text(el, "content"),
            subscription=None
            if sub_el is None
            else TaskSubscription(
                protocol=x.text(sub_el, "subscript-protocol"),
                method=x.text(sub_el, "subscript-method"),
                url=x.text(sub_el, "subscript-url"),
            ),
            task_async=x.bool_text(el, "task-async"),
            status=x.enum_text(el, "task-status", TaskStatus),
            expected_response=x.text(el, "expected-response"),
            term_explains={
                x.required_text(t, "term"): x.text(t, "explaination") or "" for t in x.children(el, "term-explains")
            },
            msg_data=x.texts(el, "msg-data"),
            context=x.texts(el, "context"),
            result=None
            if res_el is None
            else TaskResult(
                summary=x.text(res_el, "summary"),
                reason=x.text(res_el, "reason"),
                format=x.text(res_el, "format"),
                data=x.text(res_el, "data"),
                updated_time=x.time_text(res_el, "updated-time"),
            ),
            input_required=input_required_from_xml(el),
            traceparent=el.findtext(_TRACEPARENT),
        )

    @classmethod
    def all_from_xml(cls, data: etree._Element) -> list[Task]:
        """Every task under ``<tasks>``, given ``<tasks>`` itself or a ``<data>``/``<config>`` holding it."""
        tasks = x.descend(data, "tasks")
        return [] if tasks is None else [cls.from_xml(t) for t in x.children(tasks, "task")]


def tasks_element(tasks: list[Task], include_state: bool = False, operation: str | None = None) -> etree._Element:
    """``<tasks>`` holding each task's element (``operation`` goes on each ``<task>``)."""
    el = x.root("tasks")
    for task in tasks:
        el.append(task.to_xml(include_state=include_state, operation=operation))
    return el
