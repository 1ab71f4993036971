"""Connections around the NETCONF sessions: a listener on exactly one address, and the hello and idle timeouts.

Plain sockets, threads and the wall clock, with no ``netconf`` or SSH in them,
so they live apart from the session code of `an_agent.nc.server`. The
listener binds only the address asked for (``sshutil``'s binds every address,
DESIGN.md "Known traps") and survives running out of descriptors; the reaper
closes, as netconfd does, a connection that has not finished its hello in
time and a session that has been quiet too long, unless the handler says it
must be kept.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from an_agent._sockets import keep_alive
from an_agent.errors import ConfigError
from an_agent.nc.handler import Closeable

log = logging.getLogger(__name__)

# accept() errors that mean "out of a resource for now": wait and go on.
_TRANSIENT_ACCEPT_ERRORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM, errno.ECONNABORTED})
_ACCEPT_BACKOFF_MAX = 1.0


class Listener:
    """A TCP listener on one address that hands each accepted connection to ``serve`` on a thread of its own.

    `start` binds (raising `ConfigError` when the address is unusable) and
    returns at once, with `port` the port bound; `stop` closes the listener.
    """

    def __init__(self, host: str, port: int, serve: Callable[[socket.socket, Any], None]) -> None:
        self.host = host
        self.port = port
        self._serve = serve
        self._socket: socket.socket | None = None
        self._thread: threading.Thread | None = None
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
        self._socket = sock
        self._thread = threading.Thread(target=self._accept_loop, name=f"nc-accept-{self.port}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._socket is not None:
            with contextlib.suppress(OSError):
                self._socket.shutdown(socket.SHUT_RDWR)
            self._socket.close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _accept_loop(self) -> None:
        assert self._socket is not None
        backoff = 0.0
        while not self._stopping.is_set():
            try:
                conn, addr = self._socket.accept()
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
                threading.Thread(target=self._serve, args=(conn, addr), daemon=True).start()
            except (OSError, RuntimeError) as exc:  # RuntimeError: cannot start a new thread
                log.warning("dropping connection from %s: %s", addr[0], exc)
                conn.close()


class IdleCandidate(Protocol):
    """An open session as the reaper sees it."""

    last_activity: float
    username: str
    peer: str

    @property
    def session_id(self) -> int: ...

    def close(self) -> None: ...


S = TypeVar("S", bound=IdleCandidate)


class Reaper(Generic[S]):
    """Closes connections past the hello timeout and sessions past the idle timeout (wall clock).

    A connection is expected (`expect`) until its session has opened
    (`settled`); ``sessions`` lists the open sessions, and ``keeps_alive`` is
    asked, outside any lock of ours, whether a quiet one must stay open.
    An ``idle_timeout`` of 0 disables the idle check.
    """

    def __init__(
        self,
        hello_timeout: float,
        idle_timeout: float,
        sessions: Callable[[], list[S]],
        keeps_alive: Callable[[S], bool],
    ) -> None:
        self.hello_timeout = hello_timeout
        self.idle_timeout = idle_timeout
        self._sessions = sessions
        self._keeps_alive = keeps_alive
        # Connections before their session: deadline and peer, by what to close when it passes.
        self._pending: dict[Closeable, tuple[float, str]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    def expect(self, pending: Closeable, peer: str) -> None:
        """Close ``pending`` unless `settled` is called within the hello timeout; a repeat keeps the first deadline."""
        with self._lock:
            self._pending.setdefault(pending, (time.monotonic() + self.hello_timeout, peer))

    def settled(self, pending: Closeable) -> None:
        """``pending`` opened its session, or has ended: no deadline for it any more."""
        with self._lock:
            self._pending.pop(pending, None)

    def start(self, name: str) -> None:
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()

    def _loop(self) -> None:
        period = max(0.05, min(1.0, self.hello_timeout / 4, (self.idle_timeout or 4.0) / 4))
        while not self._stopping.wait(period):
            now = time.monotonic()
            with self._lock:
                late = [(t, peer) for t, (deadline, peer) in self._pending.items() if deadline <= now]
                for transport, _ in late:
                    del self._pending[transport]
            quiet = []
            if self.idle_timeout:
                quiet = [s for s in self._sessions() if now - s.last_activity >= self.idle_timeout]
            # Asked outside our lock: the handler takes its own session table's lock.
            idle = [s for s in quiet if not self._keeps_alive(s)]
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
