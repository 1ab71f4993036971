"""Reading ncclient's replies on plain lxml: the ``<rpc-reply>`` element, its ``<data>``, an ``<rpc-error>``.

The reply objects are ncclient's but only their attributes are read
(duck-typed), so these functions need no ncclient import and live apart from
`an_agent.nc.client`, the only module that imports it. `rpc_error` keeps
every RFC 6241 field of an error (type, tag, severity, app-tag, path,
message, info): nothing is found by substring.
"""

from __future__ import annotations

from typing import Any, cast

from lxml import etree

from an_agent.errors import ErrorType, RpcError

_ERROR_TYPES: frozenset[str] = frozenset({"transport", "rpc", "protocol", "application"})


def reply_root(reply: Any) -> etree._Element:
    """The parsed ``<rpc-reply>`` element of an ncclient reply (parsed once, by ncclient)."""
    reply.parse()
    root = getattr(reply, "_root", None)
    if root is None:  # not the 0.7.1 layout: parse the text ourselves
        root = etree.fromstring(reply.xml.encode("utf-8"))
    return cast(etree._Element, root)


def data_of(reply: Any) -> etree._Element:
    """The ``<data>`` element of a ``<get>``/``<get-config>`` reply (`RpcError` missing-element without one)."""
    data = reply.data_ele
    if data is None:
        raise RpcError.missing_element("data", "the server's reply has no <data> element", error_type="protocol")
    return cast(etree._Element, data)


def rpc_error(err: Any) -> RpcError:
    """Rebuild our RpcError from one ncclient RPCError, keeping every field."""
    error_type = (err.type or "").strip()
    info: dict[str, str] = {}
    if err.info:
        try:
            info_el = etree.fromstring(err.info.encode("utf-8"))
        except etree.XMLSyntaxError:
            info = {"error-info": err.info}
        else:
            info = {etree.QName(c).localname: (c.text or "").strip() for c in info_el if isinstance(c.tag, str)}
    return RpcError(
        error_type=cast(ErrorType, error_type if error_type in _ERROR_TYPES else "application"),
        error_tag=(err.tag or "operation-failed").strip(),
        message=(err.message or "").strip() or "(the server sent no error-message)",
        path=(err.path or "").strip() or None,
        info=info,
        severity="warning" if (err.severity or "").strip() == "warning" else "error",
        app_tag=(err.app_tag or "").strip() or None,
    )
