"""Small lxml helpers shared by the model codecs (private to the model package).

Every element the model builds lives in one namespace (``IRTF_AGENT_NS``
unless told otherwise); parsing matches children by local name inside that
namespace and ignores anything else, so a newer peer's extra nodes never
break an older one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from lxml import etree

from an_agent.clock import from_rfc3339, to_rfc3339
from an_agent.errors import RpcError
from an_agent.model.ns import IRTF_AGENT_NS, NETCONF_BASE_NS
from an_agent.model.xmltext import from_xml_text, to_xml_text

E = TypeVar("E")

Element = etree._Element


def qname(name: str, ns: str = IRTF_AGENT_NS) -> str:
    """Clark notation ``{ns}name``."""
    return f"{{{ns}}}{name}"


def root(name: str, ns: str = IRTF_AGENT_NS, operation: str | None = None) -> Element:
    """A new top-level element that declares ``ns`` as its default namespace.

    ``operation`` marks it with an RFC 6241 ``nc:operation`` (merge, replace,
    create, delete, remove) for use inside an ``<edit-config>``.
    """
    nsmap = {None: ns} if operation is None else {None: ns, "nc": NETCONF_BASE_NS}
    # lxml-stubs type nsmap keys as str, but lxml documents None as the default namespace.
    el = etree.Element(qname(name, ns), nsmap=nsmap)  # type: ignore[arg-type]
    if operation is not None:
        el.set(qname("operation", NETCONF_BASE_NS), operation)
    return el


def child(parent: Element, name: str, ns: str = IRTF_AGENT_NS) -> Element:
    """Append an empty child element."""
    return etree.SubElement(parent, qname(name, ns))


def leaf(parent: Element, name: str, value: object, ns: str = IRTF_AGENT_NS) -> None:
    """Append ``<name>value</name>`` unless value is None (booleans as ``true``/``false``)."""
    if value is None:
        return
    el = etree.SubElement(parent, qname(name, ns))
    el.text = format_value(value)


def leaf_list(parent: Element, name: str, values: Iterable[object], ns: str = IRTF_AGENT_NS) -> None:
    """Append one ``<name>`` per value, in order."""
    for value in values:
        leaf(parent, name, value, ns)


def time_leaf(parent: Element, name: str, when: float | None, ns: str = IRTF_AGENT_NS) -> None:
    """Append a date-and-time leaf from seconds since the epoch."""
    if when is not None:
        leaf(parent, name, to_rfc3339(when), ns)


def format_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return to_xml_text(str(value))  # client text may hold what XML cannot (model/xmltext.py)


def local(el: Element) -> str:
    return etree.QName(el).localname


def children(el: Element, name: str, ns: str = IRTF_AGENT_NS) -> Iterator[Element]:
    """Children of ``el`` named ``name`` in ``ns``, in document order."""
    return iter(el.iterchildren(qname(name, ns)))


def find(el: Element, name: str, ns: str = IRTF_AGENT_NS) -> Element | None:
    return el.find(qname(name, ns))


def text(el: Element, name: str, ns: str = IRTF_AGENT_NS) -> str | None:
    """Text of the first child ``name`` ('' for an empty leaf), or None when absent."""
    found = el.find(qname(name, ns))
    if found is None:
        return None
    return from_xml_text(found.text or "")


def texts(el: Element, name: str, ns: str = IRTF_AGENT_NS) -> list[str]:
    """Texts of every child ``name`` (a leaf-list), in order."""
    return [from_xml_text(c.text or "") for c in children(el, name, ns)]


def required_text(el: Element, name: str, ns: str = IRTF_AGENT_NS) -> str:
    """Text of a mandatory child; a missing one is an RFC 6241 missing-element error."""
    value = text(el, name, ns)
    if value is None:
        raise RpcError.missing_element(
            name, f"<{local(el)}> needs a <{name}> child", path=element_path(el), error_type="application"
        )
    return value


def bool_text(el: Element, name: str, ns: str = IRTF_AGENT_NS) -> bool | None:
    value = text(el, name, ns)
    if value is None:
        return None
    value = value.strip()
    if value in ("true", "1"):
        return True
    if value in ("false", "0"):
        return False
    raise RpcError.invalid_value(f"<{name}> must be true or false, not {value!r}", path=element_path(el, name))


def time_text(el: Element, name: str, ns: str = IRTF_AGENT_NS) -> float | None:
    value = text(el, name, ns)
    if value is None:
        return None
    try:
        return from_rfc3339(value)
    except ValueError as exc:
        raise RpcError.invalid_value(str(exc), path=element_path(el, name)) from None


def enum_text(el: Element, name: str, convert: Callable[[str], E], ns: str = IRTF_AGENT_NS) -> E | None:
    """Convert a leaf with ``convert`` (an enum class); an unknown value is invalid-value."""
    value = text(el, name, ns)
    if value is None:
        return None
    try:
        return convert(value.strip())
    except ValueError:
        raise RpcError.invalid_value(f"<{name}> has an unknown value {value!r}", path=element_path(el, name)) from None


def expect(el: Element, name: str, ns: str = IRTF_AGENT_NS) -> None:
    """Refuse an element that is not ``{ns}name`` (a caller passed the wrong node)."""
    if el.tag != qname(name, ns):
        message = f"expected <{name}> in namespace {ns}, got {el.tag}"
        raise RpcError.bad_element(local(el), message, error_type="application")


def element_path(el: Element, leaf_name: str | None = None) -> str:
    """A readable ``/irtf-agent:a/b`` path of an element (list keys are not spelled out)."""
    names: list[str] = []
    node: Element | None = el
    while node is not None and etree.QName(node).namespace == IRTF_AGENT_NS:
        names.append(local(node))
        node = node.getparent()
    names.reverse()
    if leaf_name is not None:
        names.append(leaf_name)
    if not names:
        return "/"
    names[0] = f"irtf-agent:{names[0]}"
    return "/" + "/".join(names)


def descend(el: Element, *path: str, ns: str = IRTF_AGENT_NS) -> Element | None:
    """Follow ``path`` from ``el`` if ``el`` is not already the last step; None when absent.

    Lets ``from_xml`` accept either the node itself or a ``<data>``/``<config>``
    wrapper that contains it.
    """
    if el.tag == qname(path[-1], ns):
        return el
    node: Element | None = el
    for step in path:
        assert node is not None
        node = node.find(qname(step, ns))
        if node is None:
            return None
    return node
