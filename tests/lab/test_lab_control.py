"""The lab's control channel (lab/control.py): real TCP on 127.0.0.1, mutual HMAC handshake, framed JSON."""

from __future__ import annotations

import json
import socket
import stat
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from an_agent.errors import AuthError, ConfigError, ConnectError, ControlError, TransportError
from an_agent.lab.control import PROTOCOL, ControlClient, ControlServer, create_secret, read_secret


def _now(params: dict[str, Any]) -> float:
    return 1748890800.0 + float(params.get("offset", 0))


def _refuse(params: dict[str, Any]) -> None:
    raise ControlError("no such fault: " + str(params.get("fault")))


def _broken(params: dict[str, Any]) -> None:
    raise KeyError("oops")


@pytest.fixture
def secret(tmp_path: Path) -> bytes:
    return create_secret(tmp_path / "lab" / "secret")


@pytest.fixture
def server(secret: bytes) -> Iterator[ControlServer]:
    with ControlServer(secret, {"now": _now, "inject": _refuse, "broken": _broken}) as srv:
        yield srv


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


def test_client_rejects_a_server_without_the_secret(secret: bytes) -> None:
    # Someone else took the port and accepts anything: the client must not trust it (mutual auth).
    with socket.create_server(("127.0.0.1", 0)) as impostor:
        port = impostor.getsockname()[1]

        def frame(obj: dict[str, Any]) -> bytes:
            data = json.dumps(obj).encode()
            return struct.pack(">I", len(data)) + data

        def serve() -> None:
            conn, _ = impostor.accept()
            with conn:
                conn.sendall(frame({"hello": PROTOCOL, "nonce": "00" * 32}))
                conn.recv(4096)
                conn.sendall(frame({"ok": True, "proof": "00" * 32}))

        thread = threading.Thread(target=serve)
        thread.start()
        with pytest.raises(AuthError, match="does not hold the lab's secret"):
            ControlClient.connect("127.0.0.1", port, secret)
        thread.join(5)


def test_unauthenticated_requests_get_nothing(server: ControlServer) -> None:
    # A raw client that skips the handshake and sends a request: it gets the hello, then a refusal.
    host, port = server.address
    with socket.create_connection((host, port), timeout=5) as raw:
        data = json.dumps({"id": 1, "method": "now", "params": {}}).encode()
        raw.sendall(struct.pack(">I", len(data)) + data)
        received = b""
        while chunk := raw.recv(4096):
            received += chunk
    assert b'"hello"' in received and b"authentication failed" in received and b"1748890800" not in received


def test_oversized_frame_ends_the_connection(server: ControlServer) -> None:
    host, port = server.address
    with socket.create_connection((host, port), timeout=5) as raw:
        raw.sendall(struct.pack(">I", 1 << 30))
        received = b""
        while chunk := raw.recv(4096):
            received += chunk
    assert b"authentication" not in received  # cut, not answered


def test_connect_errors(secret: bytes) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConnectError):
        ControlClient.connect("127.0.0.1", port, secret, timeout=2)


def test_stop_cuts_open_connections(secret: bytes) -> None:
    srv = ControlServer(secret, {"now": _now}).start()
    host, port = srv.address
    client = ControlClient.connect(host, port, secret)
    assert client.call("now") == 1748890800.0
    srv.stop()
    with pytest.raises(TransportError):
        client.call("now")
    client.close()
    with pytest.raises(ConnectError):
        ControlClient.connect(host, port, secret, timeout=2)
