"""What goes on the wire around a NETCONF message: framing and the ``<rpc-reply>``/``<rpc-error>`` envelopes.

Pure functions of their arguments (no I/O, no ``netconf`` package): the server's sessions and the
benchmarks frame with them.
"""

from __future__ import annotations

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.errors import RpcError
from an_agent.model.ns import NETCONF_BASE_NS

NC_NS = NETCONF_BASE_NS
_NC = f"{{{NC_NS}}}"


def frame(message: str, chunked: bool) -> bytes:
    """``message`` framed for the wire: one RFC 6242 chunk (base:1.1) or the ``]]>]]>`` end marker (1.0)."""
    data = message.encode("utf-8")
    if chunked:
        return b"\n#%d\n%s\n##\n" % (len(data), data)
    return data + b"]]>]]>"


_REPLY_OPEN = f'<rpc-reply xmlns="{NC_NS}"'
# What an attribute value must escape (as lxml does): markup, the quote, and
# the whitespace characters that attribute-value normalisation would turn into spaces.
_ATTR_ESCAPES = str.maketrans(
    {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"}
)


def reply_start_tag(rpc: etree._Element) -> str:
    """``<rpc-reply ...>`` carrying ``rpc``'s attributes (RFC 6241 4.2), as lxml would serialise it.

    Attributes without a namespace (``message-id`` and the like) are written
    here directly; any namespaced attribute needs its prefix declared, so
    lxml writes the tag then.
    """
    attrib = rpc.attrib
    if any(name[0] == "{" for name in attrib):
        return etree.tostring(reply_element(rpc), encoding="unicode")[:-2] + ">"
    parts = [_REPLY_OPEN]
    for name, value in attrib.items():
        parts.append(f' {name!s}="{str(value).translate(_ATTR_ESCAPES)}"')
    parts.append(">")
    return "".join(parts)


def reply_element(rpc: etree._Element | None) -> etree._Element:
    """An empty ``<rpc-reply>`` carrying ``rpc``'s attributes (none for a message that was no rpc)."""
    reply = etree.Element(_NC + "rpc-reply", nsmap=default_ns(NC_NS))
    if rpc is not None:
        for name, value in rpc.attrib.items():
            reply.set(name, value)
    return reply


def rpc_error_element(error: RpcError) -> etree._Element:
    """Serialise one `RpcError` as ``<rpc-error>`` with RFC 6241's child order."""
    err = etree.Element(_NC + "rpc-error", nsmap=default_ns(NC_NS))
    etree.SubElement(err, _NC + "error-type").text = error.error_type
    etree.SubElement(err, _NC + "error-tag").text = error.error_tag
    etree.SubElement(err, _NC + "error-severity").text = error.severity
    if error.app_tag:
        etree.SubElement(err, _NC + "error-app-tag").text = error.app_tag
    if error.path:
        etree.SubElement(err, _NC + "error-path").text = error.path
    message = etree.SubElement(err, _NC + "error-message")
    message.text = error.message
    message.set("{http://www.w3.org/XML/1998/namespace}lang", "en")
    if error.info:
        info = etree.SubElement(err, _NC + "error-info")
        for name, value in error.info.items():
            etree.SubElement(info, _NC + name).text = value
    return err
