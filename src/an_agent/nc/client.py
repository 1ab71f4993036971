"""NETCONF client over SSH: the only module that imports ncclient.

`NetconfClient` wraps one ncclient session and speaks lxml elements; every
ncclient, paramiko and socket exception is turned into an `an_agent.errors`
exception by `_translate` (the one place that does it). `AgentClient`
(``nc/agent_client.py``) adds the typed task/profile operations on top.
What needs no ncclient lives beside it: RFC 5277 notifications and
`Subscription` (`an_agent.nc.subscription`, re-exported here) and reading
replies and rpc-errors on plain lxml (`an_agent.nc.replies`).

Latency: stock ncclient 0.7.1 queues each request and its session thread only
writes the queue at its next selector tick (``TICK = 0.1`` s), and paramiko's
socket keeps Nagle's algorithm on, so every RPC costs ~100 ms. Our session
subclass, `_DirectSendSession`, writes each framed message straight onto the
SSH channel from the calling thread under a lock, and `NetconfClient.connect`
opens the TCP socket itself with ``TCP_NODELAY``. Neither touches ncclient's
module state, so other ncclient users in the process keep stock behaviour.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import threading
from types import TracebackType
from typing import Any, NoReturn

import paramiko
from lxml import etree
from ncclient import manager as nc_manager
from ncclient.operations import Dispatch as NcDispatch
from ncclient.operations import errors as nc_op_errors
from ncclient.operations import rpc as nc_rpc
from ncclient.transport import errors as nc_transport_errors
from ncclient.transport import session as nc_session
from ncclient.transport import ssh as nc_ssh

from an_agent._sockets import keep_alive
from an_agent.errors import (
    AnAgentError,
    AuthError,
    ConnectError,
    RequestTimeout,
    RpcError,
    TransportError,
)
from an_agent.model.ns import (
    NETCONF_MONITORING_NS,
)
from an_agent.nc.replies import data_of, reply_root, rpc_error
from an_agent.nc.requests import (
    Filter,
    FilterType,
    config_element,
    filter_spec,
    get_schema_request,
    subscription_request,
)
from an_agent.nc.subscription import Notification, NotificationKind, Subscription

__all__ = [
    "CLOSE_TIMEOUT",
    "DEFAULT_PORT",
    "NetconfClient",
    "Notification",
    "NotificationKind",
    "Subscription",
]

DEFAULT_PORT = 8830
"""The agents' NETCONF port (unprivileged; 830 is the IANA port)."""
CLOSE_TIMEOUT = 5.0
"""Seconds `NetconfClient.close` waits for the ``<close-session>`` reply (a peer that is going away may
never send it, and ncclient does not end a pending request when the transport drops)."""


class _DirectSendSession(nc_ssh.SSHSession):  # type: ignore[misc]
    """An ncclient SSH session that sends at once instead of at the next 100 ms tick.

    ncclient's `Session.send` only queues the message; the session thread
    writes the queue at the top of its select loop, which sleeps up to
    ``TICK``. Here `send` frames the message for the negotiated base (1.0
    end-of-message marker or 1.1 chunk) and writes it on the channel itself.
    The lock keeps concurrent senders' frames whole. The session thread still
    reads and dispatches replies; its queue simply stays empty.
    """

    def __init__(self, device_handler: Any) -> None:
        super().__init__(device_handler)
        self._send_lock = threading.Lock()

    def send(self, message: str) -> None:
        if not self.connected or self._channel is None:
            raise nc_transport_errors.TransportError("Not connected to NETCONF server")
        data = message.encode("utf-8")
        if self._base == nc_session.NetconfBase.BASE_11:
            frame = b"\n#%d\n%s%s" % (len(data), data, nc_session.END_DELIM)
        else:
            frame = data + nc_session.MSG_DELIM
        with self._send_lock:
            self._channel.sendall(frame)


class NetconfClient:
    """One NETCONF session to one server. Thread-safe for concurrent requests.

    Use as a context manager, or call `close`::

        with NetconfClient.connect("127.0.0.1", username="admin", password="admin") as nc:
            data = nc.get(filter="/irtf-agent:agent", filter_type="xpath")

    Every method returns lxml elements (replies are fully parsed) and raises
    only `an_agent.errors` exceptions: RpcError for an ``<rpc-error>`` reply,
    RequestTimeout when no reply comes within ``timeout``, TransportError when
    the session is unusable.
    """

    def __init__(self, manager: Any, timeout: float) -> None:
        self._manager = manager
        self.timeout = timeout
        self._subscription: Subscription | None = None

    # ---- session -----------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        host: str,
        port: int = DEFAULT_PORT,
        *,
        username: str,
        password: str | None = None,
        key_filename: str | None = None,
        timeout: float = 30.0,
        hostkey_verify: bool = False,
    ) -> NetconfClient:
        """Open a NETCONF-over-SSH session (password and/or public-key auth).

        ``timeout`` bounds the TCP connect, the hello exchange, and then each
        RPC (the SSH handshake itself keeps paramiko's own 15 s banner timeout).
        ``hostkey_verify`` checks the host key against ~/.ssh/known_hosts.
        Neither an SSH agent nor ~/.ssh keys are tried: only what is passed.
        Raises ConnectError (refused, unreachable, SSH failure, unknown host
        key), AuthError (credentials rejected) or RequestTimeout (no hello).
        """
        session: _DirectSendSession | None = None
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
            # paramiko leaves Nagle on; small NETCONF frames would wait for the peer's ACK.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            keep_alive(sock)  # a notification session must learn that its peer vanished (_sockets)
            device_handler = nc_manager.make_device_handler(None)
            session = _DirectSendSession(device_handler)
            session.connect(
                host=host,
                port=port,
                sock=sock,
                username=username,
                password=password,
                key_filename=key_filename,
                timeout=timeout,
                hostkey_verify=hostkey_verify,
                allow_agent=False,
                look_for_keys=False,
            )
            manager = nc_manager.Manager(session, device_handler, timeout=timeout, raise_mode=nc_rpc.RaiseMode.ALL)
        except Exception as exc:
            if session is not None and session.transport is not None:
                with contextlib.suppress(Exception):
                    session.close()
            _translate(exc, f"connecting to {host}:{port}", connecting=True)
        return cls(manager, timeout)

    def __enter__(self) -> NetconfClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Send ``<close-session>``, wait at most ``timeout`` s for its reply, close the transport; quiet if
        the session is already gone."""
        if not self._manager.connected:
            return
        self._manager.timeout = min(self._manager.timeout or timeout, timeout)
        try:
            self._manager.close_session()
        except Exception:
            # The server may drop the connection before or after replying; either way it is closed.
            self.abort()

    def abort(self) -> None:
        """Close the transport without ``<close-session>``: for a session known to be broken or whose
        server is going away, where a polite close would only wait for a reply that never comes."""
        with contextlib.suppress(Exception):
            self._manager._session.close()

    @property
    def connected(self) -> bool:
        return bool(self._manager.connected)

    @property
    def session_id(self) -> int:
        """The ``<session-id>`` the server gave this session in its hello."""
        return int(self._manager.session_id)

    @property
    def server_capabilities(self) -> list[str]:
        """The capability URIs from the server's hello, in its order."""
        return list(self._manager.server_capabilities)

    # ---- operations ------------------------------------------------------------------------

    def get(
        self,
        filter: Filter | None = None,
        filter_type: FilterType = "subtree",
        namespaces: dict[str, str] | None = None,
    ) -> etree._Element:
        """``<get>``: the ``<data>`` element of the reply.

        ``filter`` is a subtree (an element or XML text) or, with
        ``filter_type="xpath"``, an XPath; its prefixes are resolved with
        ``namespaces`` (default: ``irtf-agent`` for the agent module).
        """
        spec = filter_spec(filter, filter_type, namespaces)
        reply = self._run("get", lambda: self._manager.get(filter=spec))
        return data_of(reply)

    def get_config(
        self,
        source: str = "running",
        filter: Filter | None = None,
        filter_type: FilterType = "subtree",
        namespaces: dict[str, str] | None = None,
    ) -> etree._Element:
        """``<get-config>`` of ``source``: the ``<data>`` element of the reply (filters as in `get`)."""
        spec = filter_spec(filter, filter_type, namespaces)
        reply = self._run("get-config", lambda: self._manager.get_config(source=source, filter=spec))
        return data_of(reply)

    def edit_config(
        self,
        config: etree._Element | list[etree._Element],
        target: str = "running",
        default_operation: str | None = None,
    ) -> None:
        """``<edit-config>``: ``config`` is a ``<config>`` element or the top-level nodes to put in one."""
        wrapped = config_element(config)
        self._run(
            "edit-config",
            lambda: self._manager.edit_config(config=wrapped, target=target, default_operation=default_operation),
        )

    def lock(self, target: str = "running") -> None:
        """``<lock>`` the datastore (RpcError lock-denied when another session holds it)."""
        self._run("lock", lambda: self._manager.lock(target))

    def unlock(self, target: str = "running") -> None:
        """``<unlock>`` the datastore."""
        self._run("unlock", lambda: self._manager.unlock(target))

    def kill_session(self, session_id: int) -> None:
        """``<kill-session>``: end another session (its locks are released)."""
        self._run("kill-session", lambda: self._manager.kill_session(str(session_id)))

    def call(self, rpc: etree._Element | str) -> etree._Element:
        """Send any RPC (the element that goes inside ``<rpc>``); returns the ``<rpc-reply>`` element."""
        element = etree.fromstring(rpc.encode("utf-8")) if isinstance(rpc, str) else rpc
        name = etree.QName(element).localname
        reply = self._run(name, lambda: self._manager.dispatch(element))
        return reply_root(reply)

    def exchange(self, rpc: etree._Element | str) -> etree._Element:
        """Send any RPC and return its ``<rpc-reply>`` as the server sent it, ``<rpc-error>`` included.

        For tools that judge the reply itself (``an-agent conformance`` checks that rpc-errors are well
        formed): nothing in the reply is raised; only a transport failure or a missing reply is
        (TransportError, RequestTimeout).
        """
        element = etree.fromstring(rpc.encode("utf-8")) if isinstance(rpc, str) else rpc
        name = etree.QName(element).localname

        def request() -> Any:
            operation = NcDispatch(
                self._manager._session,
                device_handler=self._manager._device_handler,
                timeout=self._manager.timeout,
                raise_mode=nc_rpc.RaiseMode.NONE,
            )
            return operation.request(rpc_command=element)

        return reply_root(self._run(name, request))

    def get_schema(self, identifier: str, version: str | None = None, fmt: str = "yang") -> str:
        """RFC 6022 ``<get-schema>``: the module text.

        The request is ours (`get_schema_request`), not ncclient's, whose ``<format>`` yuma123 netconfd
        refuses.
        """
        request = get_schema_request(identifier, version, fmt)
        reply = self.call(request)
        data = reply.find(f"{{{NETCONF_MONITORING_NS}}}data")
        if data is None:
            raise RpcError.missing_element("data", "the <get-schema> reply has no <data>", error_type="protocol")
        return data.text or ""

    def subscribe(
        self,
        stream: str | None = None,
        filter: Filter | None = None,
        start_time: float | None = None,
        stop_time: float | None = None,
        filter_type: FilterType = "subtree",
        namespaces: dict[str, str] | None = None,
    ) -> Subscription:
        """RFC 5277 ``<create-subscription>``; times are seconds since the epoch.

        With ``start_time`` the server first replays logged events (then
        ``replayComplete``); with ``stop_time`` it ends the subscription with
        ``notificationComplete``. One subscription per session.
        """
        request = subscription_request(stream, filter, filter_type, namespaces, start_time, stop_time)
        self._run("create-subscription", lambda: self._manager.dispatch(request))
        self._subscription = Subscription(self._manager)
        return self._subscription

    # ---- internals -------------------------------------------------------------------------

    def _run(self, operation: str, request: Any) -> Any:
        try:
            return request()
        except Exception as exc:
            _translate(exc, operation, connecting=False)


def _translate(exc: BaseException, operation: str, *, connecting: bool) -> NoReturn:
    """Raise the `an_agent.errors` exception for a foreign one (the only place that maps them).

    ``operation`` says what was being done, for the message; ``connecting``
    turns transport failures into ConnectError rather than TransportError.
    """
    if isinstance(exc, AnAgentError):
        raise exc
    if isinstance(exc, nc_rpc.RPCError):
        errors = exc.errlist or [exc]
        first = rpc_error(errors[0])
        if len(errors) > 1:
            others = "; ".join(str(rpc_error(e)) for e in errors[1:])
            first = dataclasses.replace(first, message=f"{first.message} (and {len(errors) - 1} more: {others})")
        raise first from None
    if isinstance(exc, nc_op_errors.TimeoutExpiredError):
        raise RequestTimeout(f"{operation}: no reply from the agent in time") from None
    if isinstance(exc, nc_op_errors.MissingCapabilityError):
        raise RpcError.operation_not_supported(f"{operation}: {exc}") from None
    if isinstance(exc, nc_transport_errors.AuthenticationError | paramiko.AuthenticationException):
        raise AuthError(f"{operation}: authentication rejected ({exc})") from None
    if isinstance(exc, nc_transport_errors.SessionError) and "timed out" in str(exc):
        raise RequestTimeout(f"{operation}: no <hello> from the agent in time") from None
    if isinstance(exc, TimeoutError | socket.timeout) and not connecting:
        raise RequestTimeout(f"{operation}: timed out") from None
    transport_failure = (
        OSError,
        EOFError,
        paramiko.SSHException,
        nc_transport_errors.TransportError,
        nc_transport_errors.SessionError,
    )
    if isinstance(exc, transport_failure):
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else (str(exc) or type(exc).__name__)
        if connecting:
            raise ConnectError(f"{operation}: {detail}") from None
        raise TransportError(f"{operation}: the NETCONF session failed: {detail}") from None
    if isinstance(exc, nc_op_errors.OperationError):
        raise TransportError(f"{operation}: {exc}") from None
    raise exc
