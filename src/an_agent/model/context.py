"""``/irtf-agent:context[id]``: the record of one exchange, so agents keep the thread of a collaboration."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from an_agent.errors import RpcError
from an_agent.model import _xml as x


@dataclass
class ContextEntry:
    """One ``context`` entry: who sent what to whom, and when; the response part once answered.

    Times are seconds since the epoch. The draft's ``neg-base`` container (a
    copy of a negotiation's header and content) is not modelled here.
    """

    id: str
    send_from: str
    send_to: str
    request_content: str
    request_time: float
    request_data_param: str | None = None
    response_data_param: str | None = None
    response_time: float | None = None

    def to_xml(self, operation: str | None = None) -> etree._Element:
        """A top-level ``<context>`` element."""
        el = x.root("context", operation=operation)
        x.leaf(el, "id", self.id)
        x.leaf(el, "sendFrom", self.send_from)
        x.leaf(el, "sendTo", self.send_to)
        req = x.child(el, "request-info")
        x.leaf(req, "content", self.request_content)
        x.leaf(req, "dataParam", self.request_data_param)
        x.time_leaf(req, "time", self.request_time)
        if self.response_data_param is not None or self.response_time is not None:
            resp = x.child(el, "response-info")
            x.leaf(resp, "dataParam", self.response_data_param)
            x.time_leaf(resp, "time", self.response_time)
        return el

    @classmethod
    def from_xml(cls, el: etree._Element) -> ContextEntry:
        x.expect(el, "context")
        req = x.find(el, "request-info")
        if req is None:
            raise RpcError.missing_element(
                "request-info", "<context> needs <request-info>", path=x.element_path(el), error_type="application"
            )
        request_time = x.time_text(req, "time")
        if request_time is None:
            x.required_text(req, "time")  # raises missing-element with the path
        assert request_time is not None
        resp = x.find(el, "response-info")
        return cls(
            id=x.required_text(el, "id"),
            send_from=x.required_text(el, "sendFrom"),
            send_to=x.required_text(el, "sendTo"),
            request_content=x.required_text(req, "content"),
            request_time=request_time,
            request_data_param=x.text(req, "dataParam"),
            response_data_param=None if resp is None else x.text(resp, "dataParam"),
            response_time=None if resp is None else x.time_text(resp, "time"),
        )

    @classmethod
    def all_from_xml(cls, data: etree._Element) -> list[ContextEntry]:
        """Every ``context`` entry directly under a ``<data>``/``<config>`` element."""
        return [cls.from_xml(el) for el in x.children(data, "context")]
