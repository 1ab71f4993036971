"""The lab's control channel (lab/control.py): real TLS over TCP on 127.0.0.1, mutual HMAC handshake bound to
the certificate, framed JSON; a passive reader sees no plaintext, a relay in between is refused."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import stat
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from an_agent.a2a.tls import TlsFiles
from an_agent.errors import AuthError, ConfigError, ConnectError, ControlError, TransportError
from an_agent.lab.control import (
    PROTOCOL,
    ControlClient,
    ControlServer,
    create_certificate,
    create_secret,
    read_secret,
)

PASSWORD = "run-password-4f1c9a7e"


def _now(params: dict[str, Any]) -> float:
    return 1748890800.0 + float(params.get("offset", 0))


def _refuse(params: dict[str, Any]) -> None:
    raise ControlError("no such fault: " + str(params.get("fault")))


def _broken(params: dict[str, Any]) -> None:
    raise KeyError("oops")


@pytest.fixture
def secret(tmp_path: Path) -> bytes:
    return create_secret(tmp_path / "lab" / "secret")


def _logins(params: dict[str, Any]) -> dict[str, Any]:
    return {"logins": {"ran-fault": PASSWORD}}


@pytest.fixture
def tls(tmp_path: Path) -> TlsFiles:
    return create_certificate(tmp_path / "run", "127.0.0.1")


@pytest.fixture
def server(secret: bytes, tls: TlsFiles) -> Iterator[ControlServer]:
    handlers = {"now": _now, "inject": _refuse, "broken": _broken, "hello": _logins}
    with ControlServer(secret, handlers, tls) as srv:
        yield srv


def _tls_client(sock: socket.socket) -> ssl.SSLSocket:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context.wrap_socket(sock)


def _frame(obj: dict[str, Any]) -> bytes:
    data = json.dumps(obj).encode()
    return struct.pack(">I", len(data)) + data


class Relay:
    """A TCP relay from a local port to ``target`` that records every byte passing through (a passive reader);
    with ``terminate`` (server side, client side) it ends TLS itself and starts its own (an active one)."""

    def __init__(
        self,
        target: tuple[str, int],
        terminate: tuple[Callable[[socket.socket], socket.socket], Callable[[socket.socket], socket.socket]]
        | None = None,
    ) -> None:
        self.target = target
        self.terminate = terminate
        self.seen = bytearray()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.threads: list[threading.Thread] = []
        self.sockets: list[socket.socket] = []
        self.threads.append(threading.Thread(target=self._accept, daemon=True))
        self.threads[0].start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                inner, _ = self.listener.accept()
                outer = socket.create_connection(self.target, timeout=10)
                if self.terminate is not None:
                    inner, outer = self.terminate[0](inner), self.terminate[1](outer)
                self.sockets += [inner, outer]
                for a, b in ((inner, outer), (outer, inner)):
                    thread = threading.Thread(target=self._pump, args=(a, b), daemon=True)
                    self.threads.append(thread)
                    thread.start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                self.seen += data
                sink.sendall(data)
        for each in (source, sink):
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()
        for each in self.sockets:
            with contextlib.suppress(OSError):
                each.close()


def test_secret_file_is_private_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "lab" / "secret"
    value = create_secret(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_secret(path) == value and len(value) == 32
    assert create_secret(tmp_path / "other") != value
    path.chmod(0o644)
    with pytest.raises(ConfigError, match="readable by other users"):
        read_secret(path)
    path.chmod(0o600)
    path.write_text("abcd\n", encoding="ascii")
    with pytest.raises(ConfigError, match="32 bytes"):
        read_secret(path)


def test_calls_with_the_secret(server: ControlServer, secret: bytes) -> None:
    host, port = server.address
    assert host == "127.0.0.1"
    with ControlClient.connect(host, port, secret) as client:
        assert client.call("now") == 1748890800.0
        assert client.call("now", offset=30) == 1748890830.0
        with pytest.raises(ControlError, match="no such fault: cable-cut"):
            client.call("inject", fault="cable-cut")
        with pytest.raises(ControlError, match="unknown method 'tick'"):
            client.call("tick")
        with pytest.raises(ControlError, match="broken failed: KeyError"):
            client.call("broken")
        assert client.call("now") == 1748890800.0  # errors leave the channel usable


def test_wrong_secret_is_refused_and_server_keeps_serving(server: ControlServer, secret: bytes) -> None:
    host, port = server.address
    with pytest.raises(AuthError, match="authentication failed"):
        ControlClient.connect(host, port, bytes(32))
    with ControlClient.connect(host, port, secret) as client:
        assert client.call("now") == 1748890800.0


def test_client_rejects_a_server_without_the_secret(secret: bytes, tmp_path: Path) -> None:
    # Someone else took the port (with TLS) and accepts anything: the client must not trust it (mutual auth).
    own = create_certificate(tmp_path / "impostor", "127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(own.cert, own.key)
    with socket.create_server(("127.0.0.1", 0)) as impostor:
        port = impostor.getsockname()[1]

        def serve() -> None:
            raw, _ = impostor.accept()
            with context.wrap_socket(raw, server_side=True) as conn:
                conn.sendall(_frame({"hello": PROTOCOL, "nonce": "00" * 32}))
                conn.recv(4096)
                conn.sendall(_frame({"ok": True, "proof": "00" * 32}))

        thread = threading.Thread(target=serve)
        thread.start()
        with pytest.raises(AuthError, match="does not hold the lab's secret"):
            ControlClient.connect("127.0.0.1", port, secret)
        thread.join(5)


def test_unauthenticated_requests_get_nothing(server: ControlServer) -> None:
    # A raw client that skips the handshake and sends a request: it gets the hello, then a refusal.
    host, port = server.address
    with _tls_client(socket.create_connection((host, port), timeout=5)) as raw:
        raw.sendall(_frame({"id": 1, "method": "now", "params": {}}))
        received = b""
        with contextlib.suppress(ssl.SSLEOFError, ConnectionResetError):
            while chunk := raw.recv(4096):
                received += chunk
    assert b'"hello"' in received and b"authentication failed" in received and b"1748890800" not in received


def test_oversized_frame_ends_the_connection(server: ControlServer) -> None:
    host, port = server.address
    with _tls_client(socket.create_connection((host, port), timeout=5)) as raw:
        raw.sendall(struct.pack(">I", 1 << 30))
        received = b""
        with contextlib.suppress(ssl.SSLEOFError, ConnectionResetError):
            while chunk := raw.recv(4096):
                received += chunk
    assert b"authentication" not in received  # cut, not answered


def test_connect_errors(secret: bytes) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConnectError):
        ControlClient.connect("127.0.0.1", port, secret, timeout=2)


def test_stop_cuts_open_connections(secret: bytes, tls: TlsFiles) -> None:
    srv = ControlServer(secret, {"now": _now}, tls).start()
    host, port = srv.address
    client = ControlClient.connect(host, port, secret)
    assert client.call("now") == 1748890800.0
    srv.stop()
    with pytest.raises(TransportError):
        client.call("now")
    client.close()
    with pytest.raises(ConnectError):
        ControlClient.connect(host, port, secret, timeout=2)


def test_the_certificate_is_private_and_new_each_run(tls: TlsFiles) -> None:
    assert stat.S_IMODE(tls.cert.stat().st_mode) == 0o600 and stat.S_IMODE(tls.key.stat().st_mode) == 0o600
    assert stat.S_IMODE(tls.cert.parent.stat().st_mode) == 0o700
    first = tls.cert.read_bytes()
    again = create_certificate(tls.cert.parent, "127.0.0.1")
    assert again == tls and again.cert.read_bytes() != first


def test_a_passive_reader_sees_no_plaintext(server: ControlServer, secret: bytes) -> None:
    relay = Relay(server.address)
    try:
        with ControlClient.connect("127.0.0.1", relay.port, secret) as client:
            assert client.call("hello", agent="ran-fault") == {"logins": {"ran-fault": PASSWORD}}
            assert client.call("now") == 1748890800.0
    finally:
        relay.close()
    seen = bytes(relay.seen)
    assert len(seen) > 200  # the exchange went through the relay ...
    for clear in (
        PASSWORD.encode(),
        b"logins",
        b"hello",
        PROTOCOL.encode(),
        b"nonce",
        b"1748890800",
        secret.hex().encode(),
    ):
        assert clear not in seen  # ... and none of it in the clear
    assert seen[0] == 0x16  # a TLS handshake record opens the connection


def test_a_relay_that_terminates_tls_is_refused_on_both_sides(
    server: ControlServer, secret: bytes, tmp_path: Path
) -> None:
    # An active man in the middle with its own certificate, relaying every frame: the client binds the
    # relay's certificate, the lab its own, so the handshake MACs differ and nothing is served.
    own = create_certificate(tmp_path / "relay", "127.0.0.1")
    inward = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    inward.load_cert_chain(own.cert, own.key)
    relay = Relay(server.address, (lambda s: inward.wrap_socket(s, server_side=True), _tls_client))
    try:
        with pytest.raises(AuthError, match=r"authentication failed: .*TLS certificate"):
            ControlClient.connect("127.0.0.1", relay.port, secret, timeout=5)
    finally:
        relay.close()
    assert PASSWORD.encode() not in bytes(relay.seen)  # it read the handshake, never a login


def test_a_client_without_tls_is_refused(server: ControlServer, secret: bytes) -> None:
    host, port = server.address
    with socket.create_connection((host, port), timeout=5) as raw:
        raw.sendall(_frame({"nonce": "00", "auth": "00"}))
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := raw.recv(4096):
                received += chunk
    assert b"hello" not in received and b"nonce" not in received


def test_a_server_without_tls_is_reported(secret: bytes) -> None:
    with socket.create_server(("127.0.0.1", 0)) as plain:
        port = plain.getsockname()[1]

        def serve() -> None:
            conn, _ = plain.accept()
            with conn:
                conn.sendall(_frame({"hello": PROTOCOL, "nonce": "00" * 32}))
                with contextlib.suppress(OSError):
                    conn.recv(4096)

        thread = threading.Thread(target=serve)
        thread.start()
        with pytest.raises(ConnectError, match="no TLS"):
            ControlClient.connect("127.0.0.1", port, secret, timeout=5)
        thread.join(5)
