"""``rpc task-negotiate``: feasibility before assigning, fulfilment evaluation after (draft section 5.3)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from an_agent.errors import RpcError
from an_agent.model import _xml as x
from an_agent.model.anyxml import AnyXml
from an_agent.model.enums import CommuType, NegotiationType

_COMMU_TYPE = {
    NegotiationType.FEASIBILITY: CommuType.FEASIBILITY_NEGOTIATE,
    NegotiationType.FULFILLMENT: CommuType.FULFILLMENT_NEGOTIATE,
}


@dataclass
class NegotiationRequest:
    """The input of ``task-negotiate``.

    ``content`` is a list of prompts (see `build_prompt`): for FEASIBILITY the
    task being proposed, for FULFILLMENT the result to evaluate. ``commu_type``
    defaults to the one matching ``type``.
    """

    task_id: str
    type: NegotiationType
    content: list[str] = field(default_factory=list)
    send_from: str | None = None
    send_to: str | None = None
    commu_type: CommuType | None = None

    def __post_init__(self) -> None:
        if self.commu_type is None:
            self.commu_type = _COMMU_TYPE[self.type]

    def to_xml(self) -> etree._Element:
        """The ``<task-negotiate xmlns="...irtf-agent">`` element to put inside an ``<rpc>``."""
        el = x.root("task-negotiate")
        x.leaf(el, "task-sendFrom", self.send_from)
        x.leaf(el, "task-sendTo", self.send_to)
        x.leaf(el, "commuType", self.commu_type)
        x.leaf(el, "task-id", self.task_id)
        x.leaf_list(el, "content", self.content)
        x.leaf(el, "type", self.type)
        return el

    @classmethod
    def from_xml(cls, el: etree._Element) -> NegotiationRequest:
        """Parse ``<task-negotiate>`` (or an ``<rpc>`` holding it)."""
        rpc = x.descend(el, "task-negotiate")
        if rpc is None:
            raise RpcError.missing_element("task-negotiate", "no <task-negotiate> in the request", error_type="rpc")
        neg_type = x.enum_text(rpc, "type", NegotiationType)
        if neg_type is None:
            x.required_text(rpc, "type")  # raises missing-element with its path
        assert neg_type is not None
        return cls(
            task_id=x.required_text(rpc, "task-id"),
            type=neg_type,
            content=x.texts(rpc, "content"),
            send_from=x.text(rpc, "task-sendFrom"),
            send_to=x.text(rpc, "task-sendTo"),
            commu_type=x.enum_text(rpc, "commuType", CommuType),
        )


@dataclass
class NegotiationResult:
    """The output of ``task-negotiate``.

    FEASIBILITY answers set ``feasible`` (and, when False, ``reason`` and
    usually a ``counter_proposal`` prompt); FULFILLMENT answers set
    ``fulfilled`` and ``reason``. ``data`` carries anything else (anyxml).
    """

    type: NegotiationType
    feasible: bool | None = None
    fulfilled: bool | None = None
    reason: str | None = None
    counter_proposal: str | None = None
    data: AnyXml | None = None

    def to_xml(self) -> list[etree._Element]:
        """The output nodes, in YANG order, to append to an ``<rpc-reply>``."""
        holder = x.root("output")  # scratch parent; only its children are returned
        x.leaf(holder, "type", self.type)
        x.leaf(holder, "feasible", self.feasible)
        x.leaf(holder, "fulfilled", self.fulfilled)
        x.leaf(holder, "reason", self.reason)
        x.leaf(holder, "counter-proposal", self.counter_proposal)
        if self.data is not None:
            holder.append(self.data.to_xml("data"))
        return list(holder)

    @classmethod
    def from_xml(cls, reply: etree._Element) -> NegotiationResult:
        """Parse the output nodes from their parent (an ``<rpc-reply>``)."""
        neg_type = x.enum_text(reply, "type", NegotiationType)
        if neg_type is None:
            raise RpcError.missing_element("type", "the task-negotiate reply has no <type>", error_type="application")
        data = x.find(reply, "data")
        return cls(
            type=neg_type,
            feasible=x.bool_text(reply, "feasible"),
            fulfilled=x.bool_text(reply, "fulfilled"),
            reason=x.text(reply, "reason"),
            counter_proposal=x.text(reply, "counter-proposal"),
            data=None if data is None else AnyXml.from_node(data),
        )
