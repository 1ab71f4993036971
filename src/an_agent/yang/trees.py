"""Plain operations on libyang data trees and on the XML text handed to libyang.

Freeing the default nodes validation added (`strip_implicit`), the format
constants, and the text around a document: one NETCONF ``<data>``/``<config>`` wrapper
(`unwrap`) and the element of an unknown namespace (`element_in_namespace`).
None of them takes the context's lock or reads its errors; the caller
(`an_agent.yang.context.YangContext`) holds the lock where libyang is called.
"""

from __future__ import annotations

import re
from typing import Any

from _libyang import ffi, lib  # type: ignore[import-not-found]
from lxml import etree

from an_agent.model.ns import NETCONF_BASE_NS

# A <data> or <config> wrapper (NETCONF base namespace) around a datastore.
_WRAPPER = re.compile(r"^\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<(?:[\w.-]+:)?(?:data|config)[\s>/]", re.S)
XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
"""An XML declaration at the start of a document (libyang takes documents without one inside others)."""


def strip_implicit(first: Any) -> Any:
    """Free the default nodes validation added (not in the input); returns the new first sibling.

    libyang prints state-data defaults (e.g. /netconf-state/statistics
    counters) even in "explicit" with-defaults mode; a conversion must give
    back what it was given.
    """
    head = ffi.NULL
    node = first
    while node != ffi.NULL:
        following = node.next
        if node.flags & lib.LYD_DEFAULT:
            lib.lyd_free_tree(node)
        else:
            if head == ffi.NULL:
                head = node
            child = lib.lyd_child(node)
            if child != ffi.NULL:
                strip_implicit(child)
        node = following
    return head


def ly_format(name: str) -> int:
    """libyang's constant for the format ``"xml"`` or ``"json"``."""
    return int({"xml": lib.LYD_XML, "json": lib.LYD_JSON}[name])


def unwrap(xml: str) -> str:
    """Strip one NETCONF ``<data>``/``<config>`` wrapper, if there is one."""
    if not _WRAPPER.match(xml):
        return xml
    try:
        root = etree.fromstring(XML_DECL.sub("", xml).encode("utf-8"))
    except etree.XMLSyntaxError:
        return xml  # libyang will report the syntax error with its location
    if etree.QName(root).namespace != NETCONF_BASE_NS:
        return xml
    return "".join(etree.tostring(child, encoding="unicode", with_tail=False) for child in root)


def element_in_namespace(xml: str, namespace: str) -> str | None:
    """Local name of the first element in ``namespace``, for an unknown-namespace error."""
    try:
        root = etree.fromstring(f"<r>{XML_DECL.sub('', xml)}</r>".encode())
    except etree.XMLSyntaxError:
        return None
    for element in root.iter():
        if isinstance(element.tag, str) and etree.QName(element).namespace == namespace:
            return str(etree.QName(element).localname)
    return None
