"""A target that hangs or drops the connection ends as failed checks within --timeout, never a hang."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from an_agent.conformance import Options, Outcome, Target, run
from an_agent.server import AgentServer

TIMEOUT = 2.0
SLACK = 6.0  # the watchdog gives up at timeout + 1 s; the rest is a loaded machine (load 14 on 2 cores seen). Without
# the watchdog the SSH banner wait alone is 15 s, and an unanswered step could wait forever.


class FakeServer:
    """A TCP listener on 127.0.0.1 that either never speaks (``hang``) or closes each connection (``drop``)."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.mode == "drop":
                conn.close()
            else:
                self.held.append(conn)

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() of the serving thread
        self.sock.close()
        for conn in self.held:
            conn.close()
        self._thread.join(5)


@pytest.fixture(params=["hang", "drop"])
def servers(request: pytest.FixtureRequest) -> Iterator[tuple[FakeServer, FakeServer]]:
    netconf, a2a = FakeServer(request.param), FakeServer(request.param)
    try:
        yield netconf, a2a
    finally:
        netconf.close()
        a2a.close()


def test_a_silent_or_dropping_target_fails_every_check_within_the_timeout(
    servers: tuple[FakeServer, FakeServer],
) -> None:
    netconf, a2a = servers
    target = Target(netconf=("127.0.0.1", netconf.port), a2a=f"http://127.0.0.1:{a2a.port}", password="admin")
    started = time.monotonic()
    report = run(target, Options(allow_writes=True, timeout=TIMEOUT))
    took = time.monotonic() - started

    assert took < TIMEOUT + SLACK, took
    by_id = {f.check.id: f for f in report.findings}
    assert by_id["netconf.hello-base"].outcome is Outcome.FAIL
    assert by_id["a2a.card"].outcome is Outcome.FAIL
    for f in report.findings:
        if f.check.section == "cleanup":
            assert f.outcome is Outcome.PASS and f.reason == "the run created nothing"
        else:
            assert f.outcome is Outcome.FAIL, (f.check.id, f.outcome, f.reason)
    nc_reason, a2a_reason = by_id["netconf.hello-base"].reason, by_id["a2a.card"].reason
    if netconf.mode == "hang":
        assert f"no answer within {TIMEOUT:g} s" in nc_reason or "timed out" in nc_reason, nc_reason
        assert "did not answer in time" in a2a_reason or f"within {TIMEOUT:g} s" in a2a_reason, a2a_reason
    else:
        assert nc_reason.startswith(f"cannot open a NETCONF session to 127.0.0.1:{netconf.port}"), nc_reason
        assert "cannot reach the A2A agent" in a2a_reason, a2a_reason
    assert report.must_failed


class CuttingProxy:
    """Forwards 127.0.0.1:``port`` to ``upstream``, and cuts every connection once the server has sent
    ``after`` bytes on it: a session that drops in the middle of the run."""

    def __init__(self, upstream: int, after: int) -> None:
        self.upstream, self.after = upstream, after
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.open: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream))
            self.open += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, None), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, self.after), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket, limit: int | None) -> None:
        sent = 0
        try:
            while limit is None or sent < limit:
                chunk = source.recv(4096)
                if not chunk:
                    break
                sink.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def close(self) -> None:
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        for conn in self.open:
            conn.close()


def test_a_session_dropped_in_the_middle_fails_the_rest_with_the_reason(agent_server: AgentServer) -> None:
    # ~40 kB reach the client: the SSH handshake, the hello and a few replies, then the cut.
    proxy = CuttingProxy(agent_server.port, after=40_000)
    try:
        started = time.monotonic()
        report = run(Target(netconf=("127.0.0.1", proxy.port), password="admin"), Options(timeout=TIMEOUT))
        took = time.monotonic() - started
    finally:
        proxy.close()
    assert took < TIMEOUT + SLACK, took
    nc_findings = [f for f in report.findings if f.check.section in ("netconf", "wang", "zhou")]
    assert nc_findings[0].outcome is Outcome.PASS  # the hello came through
    failed = [f for f in nc_findings if f.outcome is Outcome.FAIL]
    assert failed, [(f.check.id, f.outcome) for f in nc_findings]
    lost = f"the session to NETCONF 127.0.0.1:{proxy.port} failed"
    assert all(f.reason.startswith(lost) for f in failed), [f.reason for f in failed]
    for f in report.findings:
        assert "conformance kit failed" not in f.reason, f.reason
