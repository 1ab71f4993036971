"""`AnyXml`: the value of an ``anyxml data`` node, compared by content."""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from an_agent.model._xml import root
from an_agent.model.ns import IRTF_AGENT_NS
from an_agent.model.xmltext import from_xml_text, to_xml_text


@dataclass(frozen=True)
class AnyXml:
    """The content of an ``anyxml`` node: text and/or child elements, kept as serialized XML.

    Build with `from_text` (plain text, escaped for you) or `from_elements`;
    read back with `text` and `elements`. Two values are equal when their
    serialized content is, so a round trip through the wire compares equal.
    """

    xml: str
    """The node's inner XML (text and children, not the enclosing tag)."""

    @classmethod
    def from_text(cls, value: str) -> AnyXml:
        holder = etree.Element("x")
        holder.text = to_xml_text(value)
        return cls._of(holder)

    @classmethod
    def from_elements(cls, *elements: etree._Element, text: str | None = None) -> AnyXml:
        holder = etree.Element("x")
        holder.text = text
        for el in elements:
            holder.append(_copy(el))
        return cls._of(holder)

    @classmethod
    def from_node(cls, node: etree._Element) -> AnyXml:
        """The content of a received ``anyxml`` element (the element itself is not kept)."""
        return cls._of(node)

    @classmethod
    def _of(cls, node: etree._Element) -> AnyXml:
        inner = (node.text or "").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        for el in node:
            copied = _copy(el)
            copied.tail = el.tail
            inner += etree.tostring(copied, encoding="unicode")
        return cls(inner)

    @property
    def text(self) -> str:
        """The node's text content (children's text included, in document order)."""
        return from_xml_text("".join(str(t) for t in self._holder().itertext()))

    def elements(self) -> list[etree._Element]:
        """Copies of the child elements."""
        return list(self._holder())

    def to_xml(self, name: str = "data", ns: str = IRTF_AGENT_NS) -> etree._Element:
        """A ``<name>`` element holding this content."""
        node = self._holder()
        out = root(name, ns)
        out.text = node.text
        for el in node:
            out.append(el)
        return out

    def _holder(self) -> etree._Element:
        return etree.fromstring(f"<x>{self.xml}</x>")


def _copy(el: etree._Element) -> etree._Element:
    # Serialising a copy keeps the namespace declarations the element relies on; dropping the
    # unused ones (inherited from the envelope) makes equal content serialise equally.
    copied: etree._Element = etree.fromstring(etree.tostring(el, with_tail=False))
    etree.cleanup_namespaces(copied)
    return copied
