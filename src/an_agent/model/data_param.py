"""``/irtf-agent:data-params[id]``: data exchanged between agents (alerts, files, structured payloads)."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from an_agent.model import _xml as x
from an_agent.model.enums import DataType


@dataclass
class DataParam:
    """One ``data-params`` entry.

    A structured payload (DESIGN.md) has ``format="application/json;schema=<id>"``
    and ``data`` holding ``{"schema_id": ..., "payload": {...}}``. Large data goes
    by ``url`` or in ``chunked`` pieces, the last with ``finished=True``.
    """

    id: str
    data_type: DataType = DataType.TEXT
    description: str | None = None
    data_size: str | None = None
    format: str | None = None
    url: str | None = None
    data: str | None = None
    chunked: bool | None = None
    finished: bool | None = None

    def to_xml(self, operation: str | None = None) -> etree._Element:
        """A top-level ``<data-params>`` element; ``operation`` sets the RFC 6241 edit-config operation."""
        el = x.root("data-params", operation=operation)
        x.leaf(el, "id", self.id)
        x.leaf(el, "dataType", self.data_type)
        x.leaf(el, "description", self.description)
        x.leaf(el, "dataSize", self.data_size)
        x.leaf(el, "format", self.format)
        x.leaf(el, "url", self.url)
        x.leaf(el, "data", self.data)
        x.leaf(el, "chunked", self.chunked)
        x.leaf(el, "finished", self.finished)
        return el

    @classmethod
    def from_xml(cls, el: etree._Element) -> DataParam:
        x.expect(el, "data-params")
        return cls(
            id=x.required_text(el, "id"),
            data_type=x.enum_text(el, "dataType", DataType) or DataType.TEXT,
            description=x.text(el, "description"),
            data_size=x.text(el, "dataSize"),
            format=x.text(el, "format"),
            url=x.text(el, "url"),
            data=x.text(el, "data"),
            chunked=x.bool_text(el, "chunked"),
            finished=x.bool_text(el, "finished"),
        )

    @classmethod
    def all_from_xml(cls, data: etree._Element) -> list[DataParam]:
        """Every ``data-params`` entry directly under a ``<data>``/``<config>`` element."""
        return [cls.from_xml(el) for el in x.children(data, "data-params")]
