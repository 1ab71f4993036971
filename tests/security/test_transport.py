"""Attacks on the NETCONF transport (issue 10), each against a real server on 127.0.0.1."""

from __future__ import annotations

import logging
import os
import resource
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest

from an_agent.model import AgentProfile
from an_agent.nc.ssh_auth import load_or_create_host_key
from an_agent.server import AgentServer, ServerConfig
from rawnc import NC_NS, RawSession, error_fields, wait_for


def _server(tmp_path: Path, profile: AgentProfile, **options: object) -> AgentServer:
    return AgentServer(ServerConfig(state_dir=tmp_path / "state", port=0, profile=profile, **options))  # type: ignore[arg-type]


@pytest.fixture
def timed_server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    server = _server(tmp_path, profile, hello_timeout=1.0, idle_timeout=1.5)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _closed_by_peer(sock: socket.socket, within: float) -> bool:
    """True when the server closes ``sock`` within ``within`` seconds (reading whatever it sent)."""
    sock.settimeout(0.2)
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if sock.recv(4096) == b"":
                return True
        except TimeoutError:
            continue
        except OSError:
            return True
    return False


def test_accept_loop_survives_descriptor_exhaustion(agent_server: AgentServer) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    idle: list[socket.socket] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + 40, hard))
    try:
        # Each idle connection costs the server a descriptor too: accept() hits EMFILE.
        for _ in range(60):
            try:
                idle.append(socket.create_connection(("127.0.0.1", agent_server.port), timeout=2))
            except OSError:
                break
        time.sleep(0.5)
    finally:
        for sock in idle:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    session = wait_for(lambda: _try_session(agent_server.port), timeout=15)
    try:
        assert session.is_open()
    finally:
        session.close()


def _try_session(port: int) -> RawSession | None:
    try:
        return RawSession(port)
    except (OSError, EOFError, paramiko.SSHException):
        return None


def test_silent_connection_is_closed_after_hello_timeout_without_traceback(
    timed_server: AgentServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sock = socket.create_connection(("127.0.0.1", timed_server.port), timeout=5)
    try:
        assert _closed_by_peer(sock, within=6)
    finally:
        sock.close()
    time.sleep(0.3)
    assert not [r for r in caplog.records if "Traceback" in r.getMessage() and r.levelno >= logging.WARNING]


def test_ssh_without_netconf_hello_is_closed_after_hello_timeout(timed_server: AgentServer) -> None:
    sock = socket.create_connection(("127.0.0.1", timed_server.port), timeout=5)
    transport = paramiko.Transport(sock)
    try:
        transport.connect(username="admin", password="admin")
        channel = transport.open_session()
        channel.invoke_subsystem("netconf")
        wait_for(lambda: not transport.is_active() or channel.closed, timeout=6)
    finally:
        transport.close()


def test_idle_session_is_closed_after_idle_timeout(timed_server: AgentServer) -> None:
    session = RawSession(timed_server.port)
    try:
        reply = session.rpc("<get/>")
        assert reply.find(f"{{{NC_NS}}}data") is not None
        wait_for(lambda: timed_server.session_count() == 0, timeout=6)
    finally:
        session.close()


def test_a_session_holding_a_subscription_is_exempt_from_the_idle_timeout(timed_server: AgentServer) -> None:
    subscriber = RawSession(timed_server.port)
    try:
        reply = subscriber.rpc('<create-subscription xmlns="urn:ietf:params:xml:ns:netconf:notification:1.0"/>')
        assert reply.find(f"{{{NC_NS}}}ok") is not None
        time.sleep(3.0)  # twice the idle timeout, without a single message either way
        assert timed_server.session_count() == 1 and subscriber.is_open()
        assert subscriber.rpc("<get/>").find(f"{{{NC_NS}}}data") is not None
    finally:
        subscriber.close()


def test_a_quiet_session_beside_its_users_subscription_stays(tmp_path: Path, profile: AgentProfile) -> None:
    """A lab peer's pair: one session subscribed, one for requests that may be quiet for hours."""
    users = tmp_path / "users.yaml"
    users.write_text("users:\n  - {name: peer, password: pw, groups: [operators]}\n  - {name: other, password: pw}\n")
    users.chmod(0o600)
    with _server(tmp_path, profile, idle_timeout=1.0, users_file=users) as server:
        watcher = RawSession(server.port, user="peer", password="pw")
        requests = RawSession(server.port, user="peer", password="pw")
        stranger = RawSession(server.port, user="other", password="pw")
        try:
            watcher.rpc('<create-subscription xmlns="urn:ietf:params:xml:ns:netconf:notification:1.0"/>')
            wait_for(lambda: server.session_count() == 2, timeout=6)  # another user's quiet session went
            wait_for(lambda: not stranger.is_open(), timeout=3)
            time.sleep(1.5)
            assert requests.rpc("<get/>").find(f"{{{NC_NS}}}data") is not None
        finally:
            for session in (watcher, requests, stranger):
                session.close()


def test_failed_logins_are_logged_and_slowed_per_source(
    agent_server: AgentServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="an_agent.nc.server")
    durations = []
    for _ in range(4):
        sock = socket.create_connection(("127.0.0.1", agent_server.port), timeout=10)
        transport = paramiko.Transport(sock)
        start = time.monotonic()
        try:
            with pytest.raises(paramiko.AuthenticationException):
                transport.connect(username="mallory", password="guess")
        finally:
            durations.append(time.monotonic() - start)
            transport.close()
    failures = [r.getMessage() for r in caplog.records if "failed login" in r.getMessage()]
    assert len(failures) >= 4
    assert "mallory" in failures[0] and "127.0.0.1" in failures[0]
    assert durations[-1] > durations[0] + 0.5  # guessing gets slower for the same source


def test_malformed_chunk_header_is_refused_and_session_closed(agent_server: AgentServer) -> None:
    session = RawSession(agent_server.port)
    try:
        body = f'<rpc xmlns="{NC_NS}" message-id="1"><get/></rpc>'.encode()
        session.channel.sendall(b"\n#+%d\n" % len(body) + body + b"\n##\n")
        reply = session.receive()
        assert error_fields(reply)["tag"] == "malformed-message"
        assert "chunk" in (error_fields(reply)["message"] or "")
        wait_for(lambda: not session.is_open(), timeout=5)
    finally:
        session.close()


@pytest.mark.parametrize("spoil", ["leading-zero", "space", "underscore", "zero"])
def test_chunk_headers_that_rfc6242_forbids(agent_server: AgentServer, spoil: str) -> None:
    body = f'<rpc xmlns="{NC_NS}" message-id="1"><get/></rpc>'.encode()
    size = str(len(body))
    header = {"leading-zero": "0" + size, "space": " " + size, "underscore": size[0] + "_" + size[1:], "zero": "0"}
    session = RawSession(agent_server.port)
    try:
        session.channel.sendall(b"\n#" + header[spoil].encode() + b"\n" + body + b"\n##\n")
        assert error_fields(session.receive())["tag"] == "malformed-message"
    finally:
        session.close()


@pytest.mark.parametrize("base", ["1.0", "1.1"])
def test_invalid_utf8_is_refused_with_a_precise_error(agent_server: AgentServer, base: str) -> None:
    session = RawSession(agent_server.port, base=base)
    try:
        session.send_raw(f'<rpc xmlns="{NC_NS}" message-id="7"><get/>'.encode() + b"<!-- \xff\xfe -->" + b"</rpc>")
        fields = error_fields(session.receive())
        assert fields["tag"] == "malformed-message"
        assert "UTF-8" in (fields["message"] or "") and "byte" in (fields["message"] or "")
        assert session.rpc("<get/>").find(f"{{{NC_NS}}}data") is not None  # the session lives on
    finally:
        session.close()


def test_host_key_temporary_file_does_not_follow_a_symlink(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (state / "ssh_host_rsa_key.tmp").symlink_to(victim)
    load_or_create_host_key(state / "ssh_host_rsa_key")
    assert victim.read_text() == "precious\n"
    assert (state / "ssh_host_rsa_key").stat().st_mode & 0o777 == 0o600
    assert not (state / "ssh_host_rsa_key").is_symlink()
