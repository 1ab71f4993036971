"""NETCONF over SSH server transport: the only module that imports ``netconf``.

What this module does: listen on exactly the address asked for, run the SSH
handshake (password and public-key auth), open NETCONF sessions with the
``netconf`` package's hello and 1.0/1.1 framing, read framed messages with a
size limit, parse them safely, and hand each ``<rpc>`` operation element to an
`RpcHandler`. It turns whatever the handler returns into ``<rpc-reply>`` and
every `RpcError` into an RFC 6241 ``<rpc-error>``. It knows nothing of agents,
tasks or YANG: that is the handler's job.

Why not `netconf.server.NetconfSSHServer` as is (DESIGN.md, "Known traps"):
its listener binds ``::`` and ``0.0.0.0`` whatever host is asked for, it falls
back to ``/etc/ssh/ssh_host_rsa_key``, it closes a session on malformed XML,
its reader buffers messages without bound, and it has no notifications. We
keep its session (hello exchange, framing, reader thread) and replace the rest.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import paramiko
from lxml import etree
from netconf import base as nc_base
from netconf.error import ChannelClosed, FramingError, SessionError

from an_agent import stages
from an_agent._sockets import keep_alive
from an_agent.access.logins import LoginThrottle
from an_agent.errors import ConfigError, RpcError, StateFull
from an_agent.model.ns import NETCONF_BASE_NS
from an_agent.nc.ssh_auth import SshCredentials, _SshAuth
from an_agent.nc.wire import frame, reply_element, reply_start_tag, rpc_error_element

log = logging.getLogger(__name__)


# paramiko verifies every packet's MAC with a byte-by-byte Python loop
# (util.constant_time_bytes_eq); the standard library's C implementation has
# the same contract (constant time, bool) and is ~50x cheaper. Measured: it was
# the largest single server-side cost of a small <get>.
paramiko.util.constant_time_bytes_eq = hmac.compare_digest

NC_NS = NETCONF_BASE_NS
_NC = f"{{{NC_NS}}}"

# Largest message we accept from a client. A bigger one is discarded as it
# streams in (never buffered) and answered with a "too-big" rpc-error.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_RECV_BYTES = 65536

# As netconfd: a connection must finish SSH and the NETCONF <hello> within
# this time, and a session that exchanges nothing for the idle time is closed
# unless it (or its user) holds a notification subscription (`RpcHandler.keeps_alive`).
DEFAULT_HELLO_TIMEOUT = 600.0
DEFAULT_IDLE_TIMEOUT = 3600.0

# RFC 6242 section 4.2: chunk-size = 1-9 DIGIT followed by 0-9 DIGIT, at most 4294967295.
_CHUNK_SIZE = re.compile(rb"[1-9][0-9]{0,9}")
_MAX_CHUNK = 4294967295

# accept() errors that mean "out of a resource for now": wait and go on.
_TRANSIENT_ACCEPT_ERRORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED})
_ACCEPT_BACKOFF_MAX = 1.0

# Parser for client input: no DTD, no entity expansion, no network, no huge trees.
_SAFE_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_blank_text=True
)


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


class _Closeable(Protocol):
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


class _TooBig(Exception):
    """A client message exceeded the limit; it has been read and dropped entirely."""


class _BadEncoding(Exception):
    """A client message was not UTF-8 (RFC 6241 section 3); it has been read and dropped."""


def _decode(message: bytes) -> str:
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _BadEncoding(
            f"the message is not valid UTF-8 (RFC 6241 section 3): {exc.reason} at byte offset {exc.start} "
            f"(byte 0x{message[exc.start]:02x}); the message was discarded"
        ) from None


class _LimitedFraming(nc_base.NetconfFramingTransport):  # type: ignore[misc]
    """NETCONF 1.0/1.1 framing with a message size limit.

    An oversized message is consumed to its end without being kept, then
    reported with `_TooBig`, so the session stays usable.
    """

    rbuffer: bytes

    def __init__(self, stream: ByteStream, max_message: int) -> None:
        super().__init__(stream, nc_base.MAXSSHBUF, False)
        self.max_message = max_message
        self._chunk_overflow = False

    def _recv_more(self) -> None:
        data = self.stream.recv(_RECV_BYTES) if self.stream is not None else b""
        if not data:
            raise ChannelClosed(self)
        self.rbuffer += data

    def _receive_10(self) -> str:
        searchfrom = 0
        dropped = False
        while True:
            eom = self.rbuffer.find(b"]]>]]>", searchfrom)
            if eom != -1:
                break
            if len(self.rbuffer) > self.max_message:
                # Keep only a tail that could hold the start of the delimiter.
                self.rbuffer = self.rbuffer[-5:]
                dropped = True
            searchfrom = max(0, len(self.rbuffer) - 5)
            self._recv_more()
        msg = self.rbuffer[:eom]
        self.rbuffer = self.rbuffer[eom + 6 :]
        if dropped or len(msg) > self.max_message:
            raise _TooBig()
        return _decode(bytes(msg))

    def _receive_11(self) -> str:
        parts: list[bytes] = []
        size = 0
        dropped = False
        self._chunk_overflow = False
        while True:
            chunk = self._receive_chunk()
            if chunk is None:
                break
            size += len(chunk)
            if self._chunk_overflow:
                size = self.max_message + 1  # part of the chunk was dropped unread
            if size > self.max_message:
                dropped = True
                parts = []
            elif not dropped:
                parts.append(chunk)
        if dropped:
            raise _TooBig()
        return _decode(b"".join(parts))

    def _receive_chunk(self) -> bytes | None:
        while len(self.rbuffer) < 4:
            self._recv_more()
        if self.rbuffer[:2] != b"\n#":
            raise FramingError(f"expected a chunk header (LF '#'), got {bytes(self.rbuffer[:16])!r}")
        while True:
            nl = self.rbuffer.find(b"\n", 2)
            if nl != -1:
                break
            if len(self.rbuffer) > 13:
                raise FramingError(f"chunk header too long: {bytes(self.rbuffer[:16])!r}")
            self._recv_more()
        header = bytes(self.rbuffer[2:nl])
        self.rbuffer = self.rbuffer[nl + 1 :]
        if header == b"#":
            return None
        # int() would also take " 12", "+12", "012" and "1_2": RFC 6242 allows digits only, no leading zero.
        if _CHUNK_SIZE.fullmatch(header) is None or int(header) > _MAX_CHUNK:
            raise FramingError(f"invalid chunk size {header!r} (RFC 6242: 1 to 4294967295, digits, no leading zero)")
        length = int(header)
        while len(self.rbuffer) < length:
            if length > self.max_message and len(self.rbuffer) > _RECV_BYTES:
                # Drop what we have of an oversized chunk instead of buffering it.
                self._chunk_overflow = True
                length -= len(self.rbuffer)
                self.rbuffer = b""
                self._recv_more()
                continue
            self._recv_more()
        chunk = self.rbuffer[:length]
        self.rbuffer = self.rbuffer[length:]
        return bytes(chunk)


class NetconfSession(nc_base.NetconfSession):  # type: ignore[misc]
    """One NETCONF session on one SSH channel, served by a reader thread."""

    pkt_stream: _LimitedFraming | None

    def __init__(
        self,
        channel: ByteStream,
        server: NetconfSshServer,
        session_id: int,
        username: str,
        peer: str,
        release: Callable[[], None],
    ) -> None:
        self.server = server
        self.handler = server.handler
        self.methods = self  # the base class asks self.methods for extra capabilities
        self.username = username
        self.peer = peer
        self._send_lock = threading.Lock()
        self._closed_once = threading.Event()
        self._sid = session_id
        self._channel = channel
        self._release = release  # closes what carries the stream (the SSH transport), after the session
        self.last_activity = time.monotonic()
        """Monotonic time of the last message received or notification sent (for the idle timeout)."""
        super().__init__(channel, False, session_id)
        # The base class built a framing object on the channel; detach it before
        # dropping it, since its __del__ closes the stream it holds.
        assert self.pkt_stream is not None
        self.pkt_stream.stream = None
        self.pkt_stream = _LimitedFraming(channel, server.max_message_bytes)

    # -- the Session protocol -------------------------------------------------
    @property
    def session_id(self) -> int:
        return self._sid

    @session_id.setter
    def session_id(self, value: int | None) -> None:
        # The base class clears session_id on close; we keep ours for logging.
        if value is not None:
            self._sid = value

    def send_notification(self, xml: str) -> None:
        self.last_activity = time.monotonic()
        self.send_message(xml)

    @property
    def encoding(self) -> str:
        return "1.1" if self.new_framing else "1.0"

    def encode(self, message: str) -> bytes:
        return frame(nc_base.XML_HEADER + message, self.new_framing)

    def send_encoded(self, data: bytes) -> None:
        self._write(data)
        self.last_activity = time.monotonic()

    def try_send_encoded(self, data: bytes) -> bool:
        """Write ``data`` now if neither this session nor its stream would make the caller wait; else False.

        Only streams with ``try_write`` (the sshd path's pipes) can; a paramiko
        channel cannot promise not to block, so its notifications go through
        the subscription's writer thread.
        """
        stream = self.pkt_stream.stream if self.pkt_stream is not None else None
        try_write = getattr(stream, "try_write", None)
        if try_write is None or not self._send_lock.acquire(blocking=False):
            return False
        try:
            written = bool(try_write(data))
        except OSError:
            return False  # the writer thread meets it again and closes the session
        finally:
            self._send_lock.release()
        if written:
            self.last_activity = time.monotonic()
        return written

    def _write(self, data: bytes) -> None:
        with self._send_lock:
            stream = self.pkt_stream
            if stream is None or stream.stream is None:
                return
            try:
                stream.stream.sendall(data)
            except (OSError, EOFError, paramiko.SSHException) as exc:
                log.info("session %s: send failed (%r); closing", self._sid, exc)
                threading.Thread(target=self.close, daemon=True).start()

    def close(self) -> None:
        # The peer or the transport may already be gone: nothing left to tell it then.
        with contextlib.suppress(EOFError, OSError, paramiko.SSHException):
            super().close()
        if not self._closed_once.is_set():
            self._closed_once.set()
            self.server._session_ended(self)

    # -- base class hooks -----------------------------------------------------
    def nc_append_capabilities(self, capabilities: etree._Element) -> None:
        for uri in self.handler.capabilities():
            etree.SubElement(capabilities, "capability").text = uri

    def send_message(self, msg: str) -> None:
        # The base class has no lock around the write (a notification from a
        # task thread could interleave with a reply) and frames in several
        # copies and writes: one lock per session, one framed buffer, one write.
        self._write(self.encode(msg))

    def _reader_exits(self) -> None:
        self.close()

    def _receive_message(self) -> str | None:
        if self.pkt_stream is None:  # closed meanwhile (server stopping, hello timeout)
            raise ChannelClosed(self)
        try:
            msg: str | None = super()._receive_message()
            return msg
        except _TooBig:
            self._send_error_reply(
                None,
                RpcError.too_big(
                    f"message larger than {self.server.max_message_bytes} bytes was discarded; "
                    "split the request or raise --max-message-bytes"
                ),
            )
            return " "  # a non-empty no-op keeps the reader loop going
        except _BadEncoding as exc:
            self._send_error_reply(None, RpcError.malformed_message(str(exc)))
            return " "
        except FramingError as exc:
            # The byte stream can no longer be split into messages: say why, then close (RFC 6242 4.2).
            log.info("session %s from %s: framing error, closing: %s", self._sid, self.peer, exc)
            if self.session_open:
                self._send_error_reply(None, RpcError.malformed_message(f"bad chunked framing: {exc}"))
            raise ChannelClosed(self) from None

    def _reader_handle_message(self, msg: str) -> None:
        self.last_activity = time.monotonic()
        if stages.ON:
            stages.mark("read")
        if not self.session_open or not msg.strip():
            return
        try:
            root = etree.fromstring(msg.lstrip().encode("utf-8"), _SAFE_PARSER)
        except etree.XMLSyntaxError as exc:
            self._send_error_reply(None, RpcError.malformed_message(f"the message is not well-formed XML: {exc}"))
            return
        if root.tag != _NC + "rpc":
            self._send_error_reply(
                None,
                RpcError.unknown_element(
                    etree.QName(root).localname,
                    f"expected <rpc> in namespace {NC_NS}, got <{etree.QName(root).localname}> "
                    f"in namespace {etree.QName(root).namespace or '(none)'}",
                    error_type="rpc",
                ),
            )
            return
        if root.get("message-id") is None:
            self._send_error_reply(
                root, RpcError.missing_attribute("message-id", "rpc", "every <rpc> needs a message-id attribute", "rpc")
            )
            return
        operations = [child for child in root if isinstance(child.tag, str)]
        if len(operations) != 1:
            self._send_error_reply(
                root, RpcError.malformed_message(f"<rpc> must hold exactly one operation, found {len(operations)}")
            )
            return
        try:
            reply = self.handler.handle(self, operations[0])
        except RpcError as exc:
            self._send_error_reply(root, exc)
            return
        except StateFull as exc:  # the state directory is full: refused whole, try again once space is freed
            self._send_error_reply(root, RpcError.resource_denied(str(exc)))
            return
        except Exception as exc:  # a bug in a handler must not kill the session
            log.exception("session %s: handler failed on <%s>", self._sid, operations[0].tag)
            self._send_error_reply(root, RpcError.operation_failed(f"internal error while handling the request: {exc}"))
            return
        if reply.serialized is not None:
            self._send_serialized_reply(root, reply.serialized)
        else:
            self._send_reply(root, reply.content)
        if stages.ON:
            stages.mark("replied")
        if reply.after_send is not None:
            reply.after_send()
        if reply.close_session:
            self.close()

    # -- replies --------------------------------------------------------------
    def _send_reply(self, rpc: etree._Element, content: Iterable[etree._Element] | None) -> None:
        reply = reply_element(rpc)
        if content is None:
            etree.SubElement(reply, _NC + "ok")
        else:
            reply.extend(content)
        self.send_message(etree.tostring(reply, encoding="unicode"))

    def _send_serialized_reply(self, rpc: etree._Element, children: str) -> None:
        # The <rpc-reply> start tag carries the rpc's attributes; the children
        # (self-contained, with their own namespace declarations) go between
        # its tags without being parsed again.
        self.send_message(f"{reply_start_tag(rpc)}{children}</rpc-reply>")

    def _send_error_reply(self, rpc: etree._Element | None, error: RpcError) -> None:
        reply = reply_element(rpc)
        reply.append(rpc_error_element(error))
        self.send_message(etree.tostring(reply, encoding="unicode"))


class NetconfSshServer:
    """Accepts SSH connections on one address and runs NETCONF sessions for `handler`.

    `start` binds (raising `ConfigError` when the address is unusable) and
    returns at once; `stop` closes the listener and every session.
    """

    def __init__(
        self,
        handler: RpcHandler,
        host: str,
        port: int,
        host_key: paramiko.PKey,
        credentials: SshCredentials,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        max_sessions: int = 2000,
        hello_timeout: float = DEFAULT_HELLO_TIMEOUT,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self.handler = handler
        self.host = host
        self.port = port
        self.host_key = host_key
        self.credentials = credentials
        self.max_message_bytes = max_message_bytes
        self.max_sessions = max_sessions
        self.hello_timeout = hello_timeout
        self.idle_timeout = idle_timeout  # 0 disables it
        self.login_throttle = LoginThrottle()
        # Connections before their session: deadline and peer, by what to close when it passes.
        self._pending: dict[_Closeable, tuple[float, str]] = {}
        self._lock = threading.Lock()
        self._sessions: dict[int, NetconfSession] = {}
        self._transports: set[paramiko.Transport] = set()
        self._next_session_id = 1
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._reaper_thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def start(self) -> None:
        try:
            infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except socket.gaierror as exc:
            raise ConfigError(f"cannot resolve listen address {self.host!r}: {exc.strerror}") from None
        family, _, _, _, address = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        keep_alive(sock)  # passed on to every session: one whose client vanished ends (_sockets)
        try:
            sock.bind(address)
        except OSError as exc:
            sock.close()
            raise ConfigError(f"cannot listen on {self.host}:{self.port}: {exc.strerror}") from None
        sock.listen(512)
        self.port = sock.getsockname()[1]
        self._listener = sock
        self._accept_thread = threading.Thread(target=self._accept_loop, name=f"nc-accept-{self.port}", daemon=True)
        self._accept_thread.start()
        self._reaper_thread = threading.Thread(target=self._reap_loop, name=f"nc-reaper-{self.port}", daemon=True)
        self._reaper_thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=5)
        with self._lock:
            sessions = list(self._sessions.values())
            transports = list(self._transports)
        for session in sessions:
            session.close()
        for transport in transports:
            transport.close()

    def session(self, session_id: int) -> NetconfSession | None:
        with self._lock:
            return self._sessions.get(session_id)

    def session_count(self) -> int:
        with self._lock:
            return len(self._sessions)

    # -- internals ------------------------------------------------------------
    def _accept_loop(self) -> None:
        assert self._listener is not None
        backoff = 0.0
        while not self._stopping.is_set():
            try:
                conn, addr = self._listener.accept()
            except OSError as exc:
                if self._stopping.is_set():
                    return
                if exc.errno in _TRANSIENT_ACCEPT_ERRORS:
                    # Out of descriptors (or memory): the pending connection stays
                    # queued; wait for sessions to end instead of giving up for good.
                    backoff = min(_ACCEPT_BACKOFF_MAX, backoff * 2 or 0.05)
                    log.warning("accept on port %d failed (%s); retrying in %.2f s", self.port, exc.strerror, backoff)
                    self._stopping.wait(backoff)
                    continue
                log.error("listener on port %d failed (%s); no longer accepting", self.port, exc)
                return
            backoff = 0.0
            try:
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                threading.Thread(target=self._serve_connection, args=(conn, addr), daemon=True).start()
            except (OSError, RuntimeError) as exc:  # RuntimeError: cannot start a new thread
                log.warning("dropping connection from %s: %s", addr[0], exc)
                conn.close()

    def _reap_loop(self) -> None:
        """Close connections past the hello timeout and sessions past the idle timeout (wall clock)."""
        period = max(0.05, min(1.0, self.hello_timeout / 4, (self.idle_timeout or 4.0) / 4))
        while not self._stopping.wait(period):
            now = time.monotonic()
            with self._lock:
                late = [(t, peer) for t, (deadline, peer) in self._pending.items() if deadline <= now]
                for transport, _ in late:
                    del self._pending[transport]
                quiet = []
                if self.idle_timeout:
                    quiet = [s for s in self._sessions.values() if now - s.last_activity >= self.idle_timeout]
            # Asked outside our lock: the handler takes its own session table's lock.
            idle = [s for s in quiet if not self.handler.keeps_alive(s)]
            for transport, peer in late:
                log.info("closing connection from %s: no NETCONF hello within %g s", peer, self.hello_timeout)
                transport.close()
            for session in idle:
                log.info(
                    "closing session %s of %r from %s: idle for %g s",
                    session.session_id,
                    session.username,
                    session.peer,
                    self.idle_timeout,
                )
                session.close()

    def _serve_connection(self, conn: socket.socket, addr: Any) -> None:
        peer = f"{addr[0]}:{addr[1]}"
        transport = paramiko.Transport(conn)
        transport.add_server_key(self.host_key)
        transport.banner_timeout = transport.handshake_timeout = transport.auth_timeout = self.hello_timeout
        auth = _SshAuth(self.credentials, peer, self.login_throttle)
        with self._lock:
            self._transports.add(transport)
            self._pending[transport] = (time.monotonic() + self.hello_timeout, peer)

        def release() -> None:
            transport.close()
            with self._lock:
                self._transports.discard(transport)
                self._pending.pop(transport, None)

        try:
            transport.start_server(server=auth)
            channel = transport.accept(timeout=30)
            if channel is None:
                raise EOFError("client opened no channel within 30 s")
            if not auth.subsystem_requested.wait(timeout=30):
                raise EOFError("client did not request the netconf subsystem")
        except (paramiko.SSHException, EOFError, OSError) as exc:
            log.info("connection from %s ended before a session opened: %s", peer, exc)
            release()
            return
        self.serve_stream(channel, auth.username, peer, transport, release)

    def serve_stream(
        self, stream: ByteStream, username: str, peer: str, pending: _Closeable, release: Callable[[], None]
    ) -> None:
        """Run a NETCONF session for ``username`` (already authenticated) on ``stream``; returns after the hello.

        ``pending`` is closed if the hello has not completed within the hello
        timeout (it must be in the pending table already, or is put there
        now); ``release`` runs once when the session or the attempt ends.
        Called on a thread of the caller's, one per connection.
        """
        with self._lock:
            self._pending.setdefault(pending, (time.monotonic() + self.hello_timeout, peer))
        try:
            with self._lock:
                if len(self._sessions) >= self.max_sessions:
                    raise EOFError(f"session limit {self.max_sessions} reached")
                session_id = self._next_session_id
                self._next_session_id += 1
            session = NetconfSession(stream, self, session_id, username, peer, release)
            with self._lock:
                self._sessions[session_id] = session
            # Known to the handler before the hello goes out: a client may send
            # its first request (kill-session, create-subscription) at once.
            self.handler.session_opened(session)
            session._open_session(True)  # on failure it closes, which tells the handler
            with self._lock:
                self._pending.pop(pending, None)
        except (paramiko.SSHException, EOFError, OSError, SessionError, ChannelClosed, etree.XMLSyntaxError) as exc:
            log.info("connection from %s ended before a session opened: %s", peer, exc)
            with self._lock:
                self._pending.pop(pending, None)
            release()

    def _session_ended(self, session: NetconfSession) -> None:
        with self._lock:
            known = self._sessions.pop(session._sid, None)
        if known is not None:
            try:
                self.handler.session_closed(session)
            finally:
                session._release()
