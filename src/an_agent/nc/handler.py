"""The contract between the NETCONF transport and the agent side: `RpcHandler`, `Session`, `Reply`.

The transport (`an_agent.nc.server`) owns SSH, framing and sessions; the
handler (`an_agent.nc.face.NetconfFace`) owns what an operation means. These
protocols are all either side knows of the other, so they live apart from
both: the face imports them without importing the module that imports
``netconf``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from lxml import etree

__all__ = ["ByteStream", "Closeable", "Reply", "RpcHandler", "Session"]


class Session(Protocol):
    """What a handler may do with the session a request came on."""

    session_id: int
    username: str
    peer: str

    def send_notification(self, xml: str) -> None:
        """Send one ``<notification>`` message (already serialised) on this session."""
        ...

    @property
    def encoding(self) -> str:
        """The session's framing, "1.0" or "1.1" (sessions with equal framing encode alike)."""
        ...

    def encode(self, message: str) -> bytes:
        """One message as the framed bytes `send_encoded` writes (XML declaration and framing)."""
        ...

    def send_encoded(self, data: bytes) -> None:
        """Write bytes made by `encode` (of this or any session with the same `encoding`)."""
        ...

    def close(self) -> None:
        """Close the session (its transport); idempotent."""
        ...


class ByteStream(Protocol):
    """A session's duplex byte stream: a paramiko channel, or one handed over by sshd (`an_agent.nc.sshd`)."""

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes; b"" at the end of the stream."""
        ...

    def sendall(self, data: bytes) -> None: ...

    def close(self) -> None:
        """Close both directions; idempotent."""
        ...


class Closeable(Protocol):
    """Whatever carries a connection before its session opens (an SSH transport, sshd's pipes)."""

    def close(self) -> None: ...


@dataclass
class Reply:
    """A handler's answer: the children of ``<rpc-reply>`` (None means ``<ok/>``).

    ``serialized`` is the same as ``content`` already turned into XML text (a
    memo of replies, `an_agent.nc.reply_cache`); when set, ``content`` is
    ignored. ``after_send`` runs once the reply is on the wire, on the
    session's reader thread; RFC 5277 needs it, because replayed
    notifications must follow the ``<create-subscription>`` reply.
    """

    content: list[etree._Element] | None = None
    serialized: str | None = None
    after_send: Callable[[], None] | None = None
    close_session: bool = False


class RpcHandler(Protocol):
    """The agent side of the server; called from many session threads at once."""

    def capabilities(self) -> list[str]:
        """Capability URIs to announce in ``<hello>`` besides base:1.0 and base:1.1."""
        ...

    def session_opened(self, session: Session) -> None: ...

    def handle(self, session: Session, operation: etree._Element) -> Reply:
        """Carry out one operation (the single child of ``<rpc>``); raise `RpcError` to refuse it."""
        ...

    def session_closed(self, session: Session) -> None:
        """Release whatever the session held (locks, subscriptions); called exactly once."""
        ...

    def keeps_alive(self, session: Session) -> bool:
        """True when ``session`` must not be closed for idleness (it, or its user, holds a subscription).

        A subscriber may legitimately hear nothing for hours (netconfd exempts
        sessions with subscriptions from its idle timeout too), and so may the
        request session of a client that keeps a subscription open beside it
        (a lab agent's session to its peer).
        """
        ...
