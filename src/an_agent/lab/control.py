"""The lab's control channel: encrypted, authenticated request/reply between the lab process and its agents.

A building block of "one process per agent" (issue 12): the lab process owns the simulated clock and
network, and agent processes reach them over this channel. Only a holder of the lab's secret may
speak on it (issue 16: no one injects faults, clock ticks or schemas into a lab from outside), and no
one on the path reads it: it carries the lab's logins (run passwords) to agents on other hosts.

Wire format (TLS 1.3 over TCP; the lab listens on 127.0.0.1, on its lab-bridge address with
``--netns``, or on its host's address when a topology places agents on several ``hosts:``):

- TLS: the lab serves a certificate made for this run (`create_certificate`: EC P-256, self-signed,
  0600 in the run directory). Agents get nothing new to trust: the client accepts any certificate at
  the TLS layer and *pins* the one it saw by binding it into the handshake below (its SHA-256, ``F``),
  which only a holder of the lab's secret can complete. A relay that terminates TLS shows agents its
  own certificate, so its ``F`` differs from the lab's and the handshake fails on both sides (Python
  3.11's ssl has no TLS-PSK; this is the same binding of the channel to the shared secret);
- every message is a frame: a 4-byte big-endian length, then that many bytes of UTF-8 JSON holding
  one object; frames over `MAX_FRAME` bytes end the connection;
- handshake, mutual, by HMAC-SHA256 over the per-lab secret (never sent):
  server -> ``{"hello": "an-agent-lab-control/2", "nonce": Ns}``;
  client -> ``{"nonce": Nc, "auth": HMAC(secret, "client" Ns Nc F)}``;
  server -> ``{"ok": true, "proof": HMAC(secret, "server" Ns Nc F)}`` (the client checks it: it talks to
  its lab, not to whoever took the port), or ``{"ok": false, "error": ...}`` and closes.
  Nonces are 32 random bytes in hex; a recorded handshake cannot be replayed (fresh Ns);
- then requests ``{"id": N, "method": NAME, "params": {...}}``, each answered in order by
  ``{"id": N, "result": ...}`` or ``{"id": N, "error": MESSAGE}``. A method is a handler the lab
  registered; an unknown method is an error reply, not a closed connection.

The secret is 32 random bytes written hex-encoded to a 0600 file (`create_secret`); agents get the
file's path, never the secret on a command line (``/proc/PID/cmdline`` is world-readable).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from an_agent.a2a.tls import TlsFiles
from an_agent.a2a.tls import create_certificate as _create_certificate
from an_agent.errors import AuthError, ConfigError, ConnectError, ControlError, RequestTimeout, TransportError

log = logging.getLogger(__name__)

PROTOCOL = "an-agent-lab-control/2"
CERT_FILE = "control-cert.pem"
KEY_FILE = "control-key.pem"
MAX_FRAME = 1 << 20
SECRET_BYTES = 32
BACKLOG = 1024
"""Connections the listener queues before it accepts them: every agent of a big lab connects twice at once
(at Python's default of 128, 200 agents overflowed it and their handshakes stalled until they timed out)."""
AUTH_TIMEOUT = 60.0
"""Real seconds a client has to finish the handshake before the server drops it (a lab bringing many
agents up on a small machine is slow on both sides; an idle, unauthenticated client gets nothing)."""
HANDSHAKE_TIMEOUT = 10.0
"""Real seconds a client first waits for each step of the handshake (`connect_patiently` waits longer)."""
HANDSHAKE_ATTEMPTS = 6
_LENGTH = struct.Struct(">I")

Handler = Callable[[dict[str, Any]], Any]
"""A method of the channel: its params in, a JSON-serialisable result out (`ControlError` to refuse)."""


# ---- the secret ---------------------------------------------------------------------------------
def create_secret(path: Path) -> bytes:
    """Write a new random secret to ``path`` (0600, its directory 0700 when created); returns it."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    value = secrets.token_bytes(SECRET_BYTES)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(value.hex() + "\n")
    return value


def read_secret(path: Path) -> bytes:
    """The secret in ``path``; `ConfigError` when it is unreadable, malformed or readable by others."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"lab secret {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if mode & 0o077:
        raise ConfigError(f"lab secret {path}: readable by other users (mode {mode & 0o777:o}); chmod 600 it")
    try:
        value = bytes.fromhex(text)
    except ValueError:
        value = b""
    if len(value) != SECRET_BYTES:
        raise ConfigError(f"lab secret {path}: expected {SECRET_BYTES} bytes in hex")
    return value


def _mac(secret: bytes, role: str, server_nonce: str, client_nonce: str, binding: str) -> str:
    message = f"{role}\0{server_nonce}\0{client_nonce}\0{binding}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


# ---- TLS ----------------------------------------------------------------------------------------
def create_certificate(run_dir: Path, host: str) -> TlsFiles:
    """A new certificate and key for this run's control channel in ``run_dir`` (0600; made 0700)."""
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return _create_certificate(TlsFiles(run_dir / CERT_FILE, run_dir / KEY_FILE), host)


def _binding(der: bytes | None) -> str:
    """What the handshake binds: the SHA-256 of the TLS certificate in use (DER), hex."""
    if not der:
        raise TransportError("lab control channel: no TLS certificate to bind")
    return hashlib.sha256(der).hexdigest()


def _server_context(tls: TlsFiles) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    try:
        context.load_cert_chain(tls.cert, tls.key)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"lab control channel certificate {tls.cert}: {exc}") from None
    return context


def _client_context() -> ssl.SSLContext:
    # No CA and no hostname: the certificate is pinned by the handshake's binding (module docstring).
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


# ---- framing ------------------------------------------------------------------------------------
def _send(sock: socket.socket, message: Mapping[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode("utf-8")
    if len(data) > MAX_FRAME:
        raise ControlError(f"control message of {len(data)} bytes exceeds {MAX_FRAME}")
    sock.sendall(_LENGTH.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise TransportError("control channel closed by the other side")
        chunks += chunk
    return bytes(chunks)


def _recv(sock: socket.socket) -> dict[str, Any]:
    (size,) = _LENGTH.unpack(_recv_exact(sock, _LENGTH.size))
    if size > MAX_FRAME:
        raise TransportError(f"control frame of {size} bytes exceeds {MAX_FRAME}")
    try:
        value = json.loads(_recv_exact(sock, size).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TransportError(f"control frame is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise TransportError("control frame is not a JSON object")
    return value


# ---- server -------------------------------------------------------------------------------------
class ControlServer:
    """Serves ``handlers`` to authenticated clients over TLS with ``tls``, one thread per connection
    (module docstring); `ConfigError` when the certificate cannot be loaded."""

    def __init__(
        self,
        secret: bytes,
        handlers: Mapping[str, Handler],
        tls: TlsFiles,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self._secret = secret
        self._handlers = dict(handlers)
        self._context = _server_context(tls)
        self._binding = _binding(ssl.PEM_cert_to_DER_cert(tls.cert.read_text(encoding="ascii")))
        self._listener = socket.create_server((host, port), backlog=BACKLOG)
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._threads: list[threading.Thread] = []
        self._closed = False

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> ControlServer:
        thread = threading.Thread(target=self._accept_loop, name="lab-control", daemon=True)
        self._threads.append(thread)
        thread.start()
        return self

    def stop(self) -> None:
        """Close the listener and every connection; returns once their threads have ended."""
        with self._lock:
            self._closed = True
            connections = list(self._connections)
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(5.0)

    def drop(self, peers: set[tuple[str, int]]) -> int:
        """Cut the connections from ``peers`` (``(host, port)`` of the client side): a lab soak's
        control-channel drop (`an_agent.lab.chaos.drop_control`). Returns how many were cut."""
        with self._lock:
            connections = list(self._connections)
        cut = 0
        for conn in connections:
            with contextlib.suppress(OSError):
                if tuple(conn.getpeername()[:2]) in peers:
                    conn.shutdown(socket.SHUT_RDWR)
                    cut += 1
        return cut

    def __enter__(self) -> ControlServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return  # the listener was closed
            with self._lock:
                if self._closed:
                    conn.close()
                    return
                self._connections.add(conn)
                thread = threading.Thread(target=self._serve, args=(conn,), name="lab-control-conn", daemon=True)
                self._threads = [t for t in self._threads if t.is_alive()]
                self._threads.append(thread)
            thread.start()

    def _serve(self, raw: socket.socket) -> None:
        conn: socket.socket = raw
        try:
            raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            raw.settimeout(AUTH_TIMEOUT)  # a client that does not authenticate is dropped
            tls = self._context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            with self._lock:  # from here on stop() cuts the TLS socket (the raw one is detached)
                self._connections.discard(raw)
                self._connections.add(tls)
                conn = tls
                if self._closed:
                    return
            tls.do_handshake()
            if self._handshake(tls):
                while True:
                    _send(tls, self._answer(_recv(tls)))
        except (OSError, TransportError, ControlError) as exc:  # ssl.SSLError is an OSError
            log.debug("control connection ended: %s", exc)
        finally:
            with self._lock:
                self._connections.discard(conn)
            conn.close()

    def _handshake(self, conn: ssl.SSLSocket) -> bool:
        server_nonce = secrets.token_hex(32)
        _send(conn, {"hello": PROTOCOL, "nonce": server_nonce})
        reply = _recv(conn)
        client_nonce, auth = reply.get("nonce"), reply.get("auth")
        if not (
            isinstance(client_nonce, str)
            and isinstance(auth, str)
            and hmac.compare_digest(auth, _mac(self._secret, "client", server_nonce, client_nonce, self._binding))
        ):
            _send(
                conn,
                {
                    "ok": False,
                    "error": "authentication failed: not the lab's secret, or the TLS certificate the client "
                    "saw is not the lab's (a relay in between)",
                },
            )
            return False
        _send(conn, {"ok": True, "proof": _mac(self._secret, "server", server_nonce, client_nonce, self._binding)})
        conn.settimeout(None)
        return True

    def _answer(self, request: dict[str, Any]) -> dict[str, Any]:
        ident, method, params = request.get("id"), request.get("method"), request.get("params", {})
        handler = self._handlers.get(method) if isinstance(method, str) else None
        if handler is None:
            return {"id": ident, "error": f"unknown method {method!r}"}
        if not isinstance(params, dict):
            return {"id": ident, "error": "params must be an object"}
        try:
            return {"id": ident, "result": handler(params)}
        except ControlError as exc:
            return {"id": ident, "error": str(exc)}
        except Exception as exc:  # a handler bug: the caller gets an error, the channel stays up
            log.exception("control method %s failed", method)
            return {"id": ident, "error": f"{method} failed: {type(exc).__name__}: {exc}"}


# ---- client -------------------------------------------------------------------------------------
class ControlClient:
    """One authenticated connection to a `ControlServer`; `call` is thread-safe (one request at a time)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        self._next_id = 0

    @classmethod
    def connect(cls, host: str, port: int, secret: bytes, timeout: float = HANDSHAKE_TIMEOUT) -> ControlClient:
        """Connect and authenticate both ways.

        `ConnectError` when nothing answers, `AuthError` when the lab refuses the secret or cannot prove
        it holds the same one, `RequestTimeout` when the handshake does not finish within ``timeout``.
        """
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise ConnectError(f"lab control channel {host}:{port}: {exc.strerror or exc}") from None
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            try:
                sock = _client_context().wrap_socket(sock)
            except ssl.SSLError as exc:
                raise ConnectError(
                    f"lab control channel {host}:{port}: no TLS {PROTOCOL} there ({exc.reason or exc})"
                ) from None
            binding = _binding(sock.getpeercert(binary_form=True))  # the certificate pinned below
            hello = _recv(sock)
            server_nonce = hello.get("nonce")
            if hello.get("hello") != PROTOCOL or not isinstance(server_nonce, str):
                raise ConnectError(f"{host}:{port} is not a lab control channel ({PROTOCOL})")
            client_nonce = secrets.token_hex(32)
            _send(sock, {"nonce": client_nonce, "auth": _mac(secret, "client", server_nonce, client_nonce, binding)})
            answer = _recv(sock)
            proof = answer.get("proof")
            if not answer.get("ok"):
                raise AuthError(f"lab control channel {host}:{port}: {answer.get('error', 'refused')}")
            if not isinstance(proof, str) or not hmac.compare_digest(
                proof, _mac(secret, "server", server_nonce, client_nonce, binding)
            ):
                raise AuthError(
                    f"lab control channel {host}:{port}: the server does not hold the lab's secret for the TLS "
                    "certificate it showed"
                )
            sock.settimeout(None)
        except TimeoutError:
            sock.close()
            raise RequestTimeout(f"lab control channel {host}:{port}: no handshake within {timeout} s") from None
        except (OSError, TransportError):
            sock.close()
            raise
        return cls(sock)

    def call(self, method: str, **params: Any) -> Any:
        """Call ``method``; its result, or `ControlError` with the lab's message, `TransportError` if cut."""
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            try:
                _send(self._sock, {"id": ident, "method": method, "params": params})
                reply = _recv(self._sock)
            except OSError as exc:
                raise TransportError(f"lab control channel: {exc.strerror or exc}") from None
        if reply.get("id") != ident:
            raise TransportError(f"lab control channel: reply {reply.get('id')!r} to request {ident}")
        if "error" in reply:
            raise ControlError(f"{method}: {reply['error']}")
        return reply.get("result")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect_patiently(host: str, port: int, secret: bytes, attempts: int = HANDSHAKE_ATTEMPTS) -> ControlClient:
    """`ControlClient.connect`, tried again after a handshake that timed out, waiting twice as long each time
    (10, 20, 40, 80, 120 s...): a lab bringing up hundreds of agents on a small machine may be slow to answer,
    and it gives up on its agents itself when bring-up stops progressing (`an_agent.lab.bringup`). A lab
    that is gone refuses the connection: that fails at once (`ConnectError`), as does a wrong secret."""
    timeout = HANDSHAKE_TIMEOUT
    for attempt in range(1, attempts + 1):
        try:
            return ControlClient.connect(host, port, secret, timeout=timeout)
        except RequestTimeout as exc:
            if attempt == attempts:
                raise
            log.warning("%s; trying again (attempt %d of %d)", exc, attempt + 1, attempts)
            timeout = min(2 * timeout, 120.0)
    raise AssertionError("unreachable")
