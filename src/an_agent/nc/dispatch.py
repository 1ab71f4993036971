"""From one decoded NETCONF message to the handler's answer, and from the answer to reply text.

The session (`an_agent.nc.server`) owns bytes, framing and threads; this
module owns what lies between a decoded message and the ``<rpc-reply>`` text:
safe parsing (no DTD, no entities, no network), the ``<rpc>`` envelope checks
of RFC 6241 section 4.1, the call of the `RpcHandler` with every failure of it
turned into an `RpcError`, and the reply envelopes. It is plain lxml with no
``netconf`` import, so it stays out of the one module that imports that package.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from lxml import etree

from an_agent.errors import RpcError, StateFull
from an_agent.model.ns import NETCONF_BASE_NS
from an_agent.nc.handler import Reply, RpcHandler, Session
from an_agent.nc.wire import reply_element, reply_start_tag, rpc_error_element

log = logging.getLogger(__name__)

NC_NS = NETCONF_BASE_NS
_NC = f"{{{NC_NS}}}"

# Parser for client input: no DTD, no entity expansion, no network, no huge trees.
_SAFE_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_blank_text=True
)


@dataclass(frozen=True)
class Answered:
    """The handler carried out the operation of ``rpc``; ``reply`` is what to send."""

    rpc: etree._Element
    reply: Reply


@dataclass(frozen=True)
class Refused:
    """The message or its operation was refused; ``rpc`` is None when the message was no usable ``<rpc>``."""

    rpc: etree._Element | None
    error: RpcError


def dispatch(handler: RpcHandler, session: Session, message: str) -> Answered | Refused | None:
    """Parse ``message``, check its ``<rpc>`` envelope and have ``handler`` carry out its one operation.

    None for a blank message (nothing to answer). A handler's `RpcError` is
    refused as it is, a full state directory as ``resource-denied``, and any
    other exception (a bug) as ``operation-failed``: a bad request never ends
    the session.
    """
    if not message.strip():
        return None
    try:
        root = etree.fromstring(message.lstrip().encode("utf-8"), _SAFE_PARSER)
    except etree.XMLSyntaxError as exc:
        return Refused(None, RpcError.malformed_message(f"the message is not well-formed XML: {exc}"))
    if root.tag != _NC + "rpc":
        return Refused(
            None,
            RpcError.unknown_element(
                etree.QName(root).localname,
                f"expected <rpc> in namespace {NC_NS}, got <{etree.QName(root).localname}> "
                f"in namespace {etree.QName(root).namespace or '(none)'}",
                error_type="rpc",
            ),
        )
    if root.get("message-id") is None:
        return Refused(
            root, RpcError.missing_attribute("message-id", "rpc", "every <rpc> needs a message-id attribute", "rpc")
        )
    operations = [child for child in root if isinstance(child.tag, str)]
    if len(operations) != 1:
        return Refused(
            root, RpcError.malformed_message(f"<rpc> must hold exactly one operation, found {len(operations)}")
        )
    try:
        return Answered(root, handler.handle(session, operations[0]))
    except RpcError as exc:
        return Refused(root, exc)
    except StateFull as exc:  # the state directory is full: refused whole, try again once space is freed
        return Refused(root, RpcError.resource_denied(str(exc)))
    except Exception as exc:  # a bug in a handler must not kill the session
        log.exception("session %s: handler failed on <%s>", session.session_id, operations[0].tag)
        return Refused(root, RpcError.operation_failed(f"internal error while handling the request: {exc}"))


def reply_text(rpc: etree._Element, reply: Reply) -> str:
    """The ``<rpc-reply>`` to ``rpc`` holding ``reply`` (its serialised children, its content, or ``<ok/>``)."""
    if reply.serialized is not None:
        # The <rpc-reply> start tag carries the rpc's attributes; the children
        # (self-contained, with their own namespace declarations) go between
        # its tags without being parsed again.
        return f"{reply_start_tag(rpc)}{reply.serialized}</rpc-reply>"
    return _reply_with(rpc, reply.content)


def _reply_with(rpc: etree._Element, content: Iterable[etree._Element] | None) -> str:
    envelope = reply_element(rpc)
    if content is None:
        etree.SubElement(envelope, _NC + "ok")
    else:
        envelope.extend(content)
    return etree.tostring(envelope, encoding="unicode")


def error_reply_text(rpc: etree._Element | None, error: RpcError) -> str:
    """The ``<rpc-reply>`` carrying ``error`` as an RFC 6241 ``<rpc-error>`` (to ``rpc``'s attributes, if any)."""
    envelope = reply_element(rpc)
    envelope.append(rpc_error_element(error))
    return etree.tostring(envelope, encoding="unicode")
