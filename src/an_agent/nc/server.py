"""NETCONF over SSH server transport: the only module that imports ``netconf``.

What this module does: run the SSH handshake (password and public-key auth)
on each accepted connection, open NETCONF sessions with the ``netconf``
package's hello and 1.0/1.1 framing, read messages through our size-limited
reader, and send what the `RpcHandler` answers. Around it, with no ``netconf``
in them: the handler contract (`an_agent.nc.handler`), the listener and the
hello/idle timeouts (`an_agent.nc.connections`), message framing with a size
limit (`an_agent.nc.framing`), and from a decoded message to the handler's
answer and the ``<rpc-reply>``/``<rpc-error>`` text (`an_agent.nc.dispatch`).
It knows nothing of agents, tasks or YANG: that is the handler's job.

Why not `netconf.server.NetconfSSHServer` as is (DESIGN.md, "Known traps"):
its listener binds ``::`` and ``0.0.0.0`` whatever host is asked for, it falls
back to ``/etc/ssh/ssh_host_rsa_key``, it closes a session on malformed XML,
its reader buffers messages without bound, and it has no notifications. We
keep its session (hello exchange, framing, reader thread) and replace the rest.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import paramiko
from lxml import etree
from netconf import base as nc_base
from netconf.error import ChannelClosed, SessionError

from an_agent import stages
from an_agent.access.logins import LoginThrottle
from an_agent.errors import RpcError
from an_agent.nc.connections import Listener, Reaper
from an_agent.nc.dispatch import Refused, dispatch, error_reply_text, reply_text
from an_agent.nc.framing import RECV_BYTES, BadEncoding, BadFraming, MessageReader, MessageTooBig, StreamEnded
from an_agent.nc.handler import ByteStream, Closeable, RpcHandler
from an_agent.nc.ssh_auth import SshCredentials, _SshAuth
from an_agent.nc.wire import frame

log = logging.getLogger(__name__)


# paramiko verifies every packet's MAC with a byte-by-byte Python loop
# (util.constant_time_bytes_eq); the standard library's C implementation has
# the same contract (constant time, bool) and is ~50x cheaper. Measured: it was
# the largest single server-side cost of a small <get>.
paramiko.util.constant_time_bytes_eq = hmac.compare_digest

# Largest message we accept from a client. A bigger one is discarded as it
# streams in (never buffered) and answered with a "too-big" rpc-error.
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024

# As netconfd: a connection must finish SSH and the NETCONF <hello> within
# this time, and a session that exchanges nothing for the idle time is closed
# unless it (or its user) holds a notification subscription (`RpcHandler.keeps_alive`).
DEFAULT_HELLO_TIMEOUT = 600.0
DEFAULT_IDLE_TIMEOUT = 3600.0


class _LimitedFraming(nc_base.NetconfFramingTransport):  # type: ignore[misc]
    """The ``netconf`` package's framing object, reading with our `MessageReader` (size limit, strict chunks)."""

    def __init__(self, stream: ByteStream, max_message: int) -> None:
        super().__init__(stream, nc_base.MAXSSHBUF, False)
        self.max_message = max_message
        self._reader = MessageReader(self._recv, max_message)

    def _recv(self) -> bytes:
        return self.stream.recv(RECV_BYTES) if self.stream is not None else b""

    def receive_pdu(self, new_framing: bool) -> str:
        try:
            return self._reader.read_11() if new_framing else self._reader.read_10()
        except StreamEnded:
            raise ChannelClosed(self) from None


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
        except MessageTooBig:
            self._send_error_reply(
                None,
                RpcError.too_big(
                    f"message larger than {self.server.max_message_bytes} bytes was discarded; "
                    "split the request or raise --max-message-bytes"
                ),
            )
            return " "  # a non-empty no-op keeps the reader loop going
        except BadEncoding as exc:
            self._send_error_reply(None, RpcError.malformed_message(str(exc)))
            return " "
        except BadFraming as exc:
            # The byte stream can no longer be split into messages: say why, then close (RFC 6242 4.2).
            log.info("session %s from %s: framing error, closing: %s", self._sid, self.peer, exc)
            if self.session_open:
                self._send_error_reply(None, RpcError.malformed_message(f"bad chunked framing: {exc}"))
            raise ChannelClosed(self) from None

    def _reader_handle_message(self, msg: str) -> None:
        self.last_activity = time.monotonic()
        if stages.ON:
            stages.mark("read")
        if not self.session_open:
            return
        answer = dispatch(self.handler, self, msg)
        if answer is None:
            return
        if isinstance(answer, Refused):
            self._send_error_reply(answer.rpc, answer.error)
            return
        self.send_message(reply_text(answer.rpc, answer.reply))
        if stages.ON:
            stages.mark("replied")
        if answer.reply.after_send is not None:
            answer.reply.after_send()
        if answer.reply.close_session:
            self.close()

    def _send_error_reply(self, rpc: etree._Element | None, error: RpcError) -> None:
        self.send_message(error_reply_text(rpc, error))


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
        self.host_key = host_key
        self.credentials = credentials
        self.max_message_bytes = max_message_bytes
        self.max_sessions = max_sessions
        self.hello_timeout = hello_timeout
        self.idle_timeout = idle_timeout  # 0 disables it
        self.login_throttle = LoginThrottle()
        self._lock = threading.Lock()
        self._sessions: dict[int, NetconfSession] = {}
        self._transports: set[paramiko.Transport] = set()
        self._next_session_id = 1
        self._listener = Listener(host, port, self._serve_connection)
        self._reaper = Reaper(hello_timeout, idle_timeout, self._open_sessions, handler.keeps_alive)

    @property
    def port(self) -> int:
        """The port listened on (the one bound, once started: a port of 0 asks for any free one)."""
        return self._listener.port

    def start(self) -> None:
        self._listener.start()
        self._reaper.start(f"nc-reaper-{self.port}")

    def stop(self) -> None:
        self._reaper.stop()
        self._listener.stop()
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
    def _open_sessions(self) -> list[NetconfSession]:
        with self._lock:
            return list(self._sessions.values())

    def _serve_connection(self, conn: socket.socket, addr: Any) -> None:
        peer = f"{addr[0]}:{addr[1]}"
        transport = paramiko.Transport(conn)
        transport.add_server_key(self.host_key)
        transport.banner_timeout = transport.handshake_timeout = transport.auth_timeout = self.hello_timeout
        auth = _SshAuth(self.credentials, peer, self.login_throttle)
        with self._lock:
            self._transports.add(transport)
        self._reaper.expect(transport, peer)

        def release() -> None:
            transport.close()
            with self._lock:
                self._transports.discard(transport)
            self._reaper.settled(transport)

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
        self, stream: ByteStream, username: str, peer: str, pending: Closeable, release: Callable[[], None]
    ) -> None:
        """Run a NETCONF session for ``username`` (already authenticated) on ``stream``; returns after the hello.

        ``pending`` is closed if the hello has not completed within the hello
        timeout (it must be in the pending table already, or is put there
        now); ``release`` runs once when the session or the attempt ends.
        Called on a thread of the caller's, one per connection.
        """
        self._reaper.expect(pending, peer)
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
            self._reaper.settled(pending)
        except (paramiko.SSHException, EOFError, OSError, SessionError, ChannelClosed, etree.XMLSyntaxError) as exc:
            log.info("connection from %s ended before a session opened: %s", peer, exc)
            self._reaper.settled(pending)
            release()

    def _session_ended(self, session: NetconfSession) -> None:
        with self._lock:
            known = self._sessions.pop(session._sid, None)
        if known is not None:
            try:
                self.handler.session_closed(session)
            finally:
                session._release()
