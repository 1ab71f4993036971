"""After an agent's sessions to its peers are closed (the agent or its lab stops), nothing reopens them: a
request, a late retry or the notification thread's reconnection opens no NETCONF session and starts no
thread, a request fails at once with `SessionsClosed`, and closing returns once its thread has ended
(`an_agent.agents.peer_sessions`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.agents.peersupport import START, HeldUntilOpened, closed_port, peer_threads, play, wait_logged

from an_agent.agents.conversation import redeliver
from an_agent.agents.peers import Peers
from an_agent.errors import SessionsClosed
from an_agent.lab.kernel import SimKernel
from an_agent.model import AgentProfile, Task, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.retry import Backoff
from an_agent.server import AgentServer, ServerConfig


@pytest.fixture
def connects(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The port of every NETCONF session an `AgentClient` tries to open from now on."""
    tried: list[int] = []
    real_connect = AgentClient.connect

    def connect(host: str, port: int, **kwargs: Any) -> AgentClient:
        tried.append(port)
        return real_connect(host, port, **kwargs)

    monkeypatch.setattr(AgentClient, "connect", staticmethod(connect))
    yield tried


def assigned(port: int, task_id: str) -> None:
    with AgentClient.connect("127.0.0.1", port, username="admin", password="admin") as client:
        client.assign_task(Task(task_id, send_from="me", content=build_prompt("SITE-07", "diagnose")))


def test_a_request_after_close_fails_at_once_and_opens_nothing(agent_server: AgentServer, connects: list[int]) -> None:
    kernel = SimKernel(start=START, stall_timeout=60.0)
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", agent_server.port), ["peer"], lambda exchange: None,
        credentials=("admin", "admin"), timeout=10,
    )  # fmt: skip
    assigned(agent_server.port, "t-closed")
    try:
        peer = peers.peer("peer")
        assert play(kernel, lambda: peer.get_task("t-closed")).task_id == "t-closed"
        assert peer_threads() == ["notify:me<-peer"]
        assert peer.close() is None  # returns once its thread has ended
        assert peer_threads() == []
        connects.clear()
        with pytest.raises(SessionsClosed, match="me -> peer: the sessions to peer are closed"):
            play(kernel, lambda: peer.get_task("t-closed"))
        peers.close()
        with pytest.raises(SessionsClosed):  # not a new link in place of the closed one
            play(kernel, lambda: peers.peer("peer").get_task("t-closed"))
        assert connects == [] and peer_threads() == []
        assert kernel.now() == START  # no retry waited
    finally:
        peers.close()
        kernel.close()


def test_a_retry_that_comes_after_close_opens_nothing(agent_server: AgentServer, connects: list[int]) -> None:
    """A request waits to try a peer again (it could not be reached); the agent stops meanwhile. The peer is
    back by the next attempt, which must not reach it: it fails at once instead."""
    kernel = SimKernel(start=START, stall_timeout=60.0)
    dead = closed_port()
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", dead if kernel.now() < START + 0.5 else agent_server.port),
        ["peer"], lambda exchange: None, credentials=("admin", "admin"), timeout=10,
    )  # fmt: skip
    assigned(agent_server.port, "t-late")
    connects.clear()
    real_sleep = kernel.sleep
    closed_at: list[int] = []

    def stop_then_sleep(seconds: float) -> None:  # the agent stops while the request waits
        peers.close()
        closed_at.append(len(connects))
        real_sleep(seconds)

    kernel.sleep = stop_then_sleep  # type: ignore[method-assign]
    try:
        with pytest.raises(SessionsClosed):
            play(kernel, lambda: peers.peer("peer").get_task("t-late"))
        assert closed_at == [1] and connects == [dead]  # one attempt, before the stop
        assert peer_threads() == []
    finally:
        kernel.sleep = real_sleep  # type: ignore[method-assign]
        peers.close()
        kernel.close()


def test_the_notification_thread_does_not_reconnect_after_close(
    tmp_path: Path, profile: AgentProfile, connects: list[int], caplog: pytest.LogCaptureFixture
) -> None:
    """The peer restarts: the notification thread waits to subscribe again. The agent's sessions are closed
    meanwhile and the peer comes back: closing returns once the thread has ended, and nothing reaches the
    peer afterwards."""
    state = tmp_path / "peer"
    server = AgentServer(ServerConfig(state_dir=state, port=0, profile=profile)).start()
    address = {"port": server.port}
    kernel = SimKernel(start=START, stall_timeout=60.0)
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", address["port"]), ["peer"], lambda exchange: None,
        credentials=("admin", "admin"), timeout=10, reconnect=Backoff(first=30.0, factor=1.0, cap=30.0, limit=300.0),
    )  # fmt: skip
    assigned(server.port, "t-restart")
    try:
        peer = peers.peer("peer")
        assert play(kernel, lambda: peer.get_task("t-restart")).task_id == "t-restart"
        with caplog.at_level(logging.INFO, logger="an_agent.nc.retry"):
            server.stop()
            wait_logged(caplog, "reconnect: attempt 1 failed", "the notification thread did not try to reconnect")
        server = AgentServer(ServerConfig(state_dir=state, port=0, profile=profile)).start()
        address["port"] = server.port
        peer.close()  # ends the thread's 30 s wait
        assert peer_threads() == []
        time.sleep(0.3)  # a thread left behind would have reached the peer by now
        assert server.port not in connects and peer_threads() == []
    finally:
        peers.close()
        kernel.close()
        server.stop()


def test_a_report_is_not_delivered_again_after_close() -> None:
    slept: list[float] = []
    noted: list[str] = []

    def send() -> None:
        raise SessionsClosed("me -> peer: the sessions to peer are closed")

    with pytest.raises(SessionsClosed):
        redeliver(send, "report", "peer", slept.append, lambda kind, text: noted.append(kind))
    assert slept == [] and noted == []  # no wait of an hour for a stopping agent, no "report_failed"


def test_closing_an_a2a_link_ends_the_thread_of_each_stream(
    tmp_path: Path, profile: AgentProfile, caplog: pytest.LogCaptureFixture
) -> None:
    """A task assigned over A2A is followed by a thread reading its stream. The peer stops: the stream
    breaks and the thread waits to resume it (30 s here). Closing ends that wait and returns once the
    thread has ended; the link stays closed."""
    config = ServerConfig(state_dir=tmp_path / "peer", port=0, a2a_port=0, profile=profile, behaviour=HeldUntilOpened())
    server = AgentServer(config).start()
    assert server.a2a is not None
    url = server.a2a.url
    kernel = SimKernel(start=START, stall_timeout=60.0, peers_elsewhere=True)
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", server.port), ["peer"], lambda exchange: None,
        credentials=("admin", "admin"), timeout=10, over_a2a=["peer"], a2a_url_of=lambda name: url,
        reconnect=Backoff(first=30.0, factor=1.0, cap=30.0, limit=300.0),
    )  # fmt: skip
    task = Task("t-a2a", send_from="me", content=build_prompt("SITE-07", "diagnose"), task_async=True)
    try:
        play(kernel, lambda: peers.peer("peer").assign(task))
        assert "a2a:me<-peer" in peer_threads()
        with caplog.at_level(logging.INFO, logger="an_agent.nc.retry"):
            server.stop()
            wait_logged(caplog, "SubscribeToTask t-a2a: attempt 1 failed", "the stream's thread did not try to resume")
        closing = time.monotonic()
        peers.close()
        assert peer_threads() == [] and time.monotonic() - closing < 5  # not after the 30 s wait
        with pytest.raises(SessionsClosed):
            peers.peer("peer")
    finally:
        peers.close()
        kernel.close()
        server.stop()
