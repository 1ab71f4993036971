"""``notification condition-notifications``: a task's status changed (draft section 5.4)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from an_agent.errors import RpcError
from an_agent.model import _xml as x
from an_agent.model.anyxml import AnyXml
from an_agent.model.enums import CommuType, TaskStatus
from an_agent.model.input_required import InputRequired, input_required_from_xml, input_required_to_xml
from an_agent.model.ns import NETCONF_NOTIFICATION_NS


@dataclass
class ConditionNotification:
    """One ``condition-notifications`` event: ``task_id`` moved from ``previous_status`` to ``status``.

    ``event_time`` is the RFC 5277 ``<eventTime>`` of the enclosing
    ``<notification>`` when parsed from one; it is not part of `to_xml`.
    """

    task_id: str
    status: TaskStatus
    previous_status: TaskStatus | None = None
    send_from: str | None = None
    send_to: str | None = None
    commu_type: CommuType | None = CommuType.TASK_RESULT_NOTIFY
    reason: str | None = None
    input_required: list[InputRequired] = field(default_factory=list)
    data: AnyXml | None = None
    event_time: float | None = None

    def to_xml(self) -> etree._Element:
        """The ``<condition-notifications>`` element (the server wraps it in ``<notification>``)."""
        el = x.root("condition-notifications")
        x.leaf(el, "task-sendFrom", self.send_from)
        x.leaf(el, "task-sendTo", self.send_to)
        x.leaf(el, "commuType", self.commu_type)
        x.leaf(el, "task-id", self.task_id)
        x.leaf(el, "task-status", self.status)
        x.leaf(el, "previous-status", self.previous_status)
        x.leaf(el, "reason", self.reason)
        input_required_to_xml(el, self.input_required)
        if self.data is not None:
            el.append(self.data.to_xml("data"))
        return el

    @classmethod
    def from_xml(cls, el: etree._Element) -> ConditionNotification:
        """Parse ``<condition-notifications>`` or the RFC 5277 ``<notification>`` holding it."""
        event_time = x.time_text(el, "eventTime", NETCONF_NOTIFICATION_NS)
        body = x.descend(el, "condition-notifications")
        if body is None:
            raise RpcError.missing_element(
                "condition-notifications", "not a condition-notifications event", error_type="application"
            )
        status = x.enum_text(body, "task-status", TaskStatus)
        if status is None:
            x.required_text(body, "task-status")  # raises missing-element with its path
        assert status is not None
        data = x.find(body, "data")
        return cls(
            task_id=x.required_text(body, "task-id"),
            status=status,
            previous_status=x.enum_text(body, "previous-status", TaskStatus),
            send_from=x.text(body, "task-sendFrom"),
            send_to=x.text(body, "task-sendTo"),
            commu_type=x.enum_text(body, "commuType", CommuType),
            reason=x.text(body, "reason"),
            input_required=input_required_from_xml(body),
            data=None if data is None else AnyXml.from_node(data),
            event_time=event_time,
        )
