"""An agent's requests to a peer ride out a cut: retried with backoff on its (simulated) clock, a task
assignment whose outcome is unknown is re-sent without making a second task (`Peers`, `an_agent.nc.retry`)."""

from __future__ import annotations

import logging
import queue
import time
from pathlib import Path
from typing import Any

import pytest
from tests.agents.peersupport import START, HeldUntilOpened, closed_port, peer_threads, play, wait_logged

from an_agent.agents.exchange import Exchange
from an_agent.agents.peers import Peers
from an_agent.errors import AuthError, TransportError
from an_agent.lab.kernel import SimKernel
from an_agent.model import AgentProfile, Task, TaskStatus, build_prompt
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.retry import Backoff
from an_agent.server import AgentServer, ServerConfig


def test_an_unreachable_peer_is_tried_again_on_the_simulated_clock(
    agent_server: AgentServer, caplog: pytest.LogCaptureFixture
) -> None:
    kernel = SimKernel(start=START, stall_timeout=60.0)
    dead = closed_port()
    # the peer cannot be reached for the first 10 simulated seconds (a partition that heals)
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", dead if kernel.now() < START + 10 else agent_server.port),
        ["peer"], lambda exchange: None, credentials=("admin", "admin"), timeout=10,
    )  # fmt: skip
    task = Task("t-cut", send_from="me", content=build_prompt("SITE-07", "diagnose the outage"))
    with AgentClient.connect("127.0.0.1", agent_server.port, username="admin", password="admin") as client:
        client.assign_task(task)
    try:
        with caplog.at_level(logging.WARNING, logger="an_agent.nc.retry"):
            found = play(kernel, lambda: peers.peer("peer").get_task("t-cut"))
    finally:
        peers.close()
        kernel.close()
    assert found.task_id == "t-cut"
    retries = [r.getMessage() for r in caplog.records]
    assert retries and all(m.startswith("me -> peer: taskResultQuery: attempt ") for m in retries)
    assert "Connection refused" in retries[0]
    # waits of ~1, 2, 4, 8 s: the attempt after the heal got through, and the clock moved (no real sleep)
    assert START + 10 <= kernel.now() <= START + 10 + 8 * 1.2


def test_a_task_sent_before_the_session_broke_is_not_created_twice(
    agent_server: AgentServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_assign = AgentClient.assign_task
    cuts = []

    def assign_then_cut(self: AgentClient, task: Task, params: Any = ()) -> None:
        real_assign(self, task, params)  # the request left and landed ...
        if not cuts:  # ... and the session breaks before the reply is read: an unknown outcome
            cuts.append(task.task_id)
            self.close()
            raise TransportError("session closed by the other side")

    monkeypatch.setattr(AgentClient, "assign_task", assign_then_cut)
    # peers_elsewhere: the task's end closes the hand-off alone (no lab executor here arrives at it)
    kernel = SimKernel(start=START, stall_timeout=60.0, peers_elsewhere=True)
    recorded: list[Exchange] = []
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", agent_server.port), ["peer"], recorded.append,
        credentials=("admin", "admin"), timeout=10,
    )  # fmt: skip
    task = Task("t-once", send_from="me", content=build_prompt("SITE-07", "diagnose the outage"))

    try:
        play(kernel, lambda: peers.peer("peer").assign(task))
    finally:
        peers.close()
        kernel.close()
    assert cuts == ["t-once"]
    with AgentClient.connect("127.0.0.1", agent_server.port, username="admin", password="admin") as client:
        assert [t.task_id for t in client.list_tasks()].count("t-once") == 1
    assigned = [e for e in recorded if e.operation == "edit-config"]
    assert [(e.task_id, e.ok) for e in assigned] == [("t-once", True)]
    assert START < kernel.now() <= START + 1.2  # one backoff step on the simulated clock


def test_refused_credentials_are_not_retried(agent_server: AgentServer) -> None:
    kernel = SimKernel(start=START, stall_timeout=60.0)
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", agent_server.port), ["peer"], lambda exchange: None,
        credentials=("admin", "wrong"), timeout=10,
    )  # fmt: skip
    try:
        with pytest.raises(AuthError):
            play(kernel, lambda: peers.peer("peer").get_task("t-any"))
    finally:
        peers.close()
        kernel.close()
    assert kernel.now() == START


def test_the_end_of_a_task_comes_after_a_later_request_failed_for_good(
    tmp_path: Path, profile: AgentProfile, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request that fails drops the sessions, the subscription with them. When it was the last request
    to that peer (given up during a partition), the ends of the tasks assigned before must still come
    (found by lab soak --netns: two tasks' ends never heard, the lab stalled)."""
    behaviour = HeldUntilOpened()
    server = AgentServer(ServerConfig(state_dir=tmp_path / "state", port=0, profile=profile, behaviour=behaviour))
    server.start()
    real_get_task = AgentClient.get_task

    def broken_get_task(self: AgentClient, task_id: str) -> Task:
        self.abort()  # the session breaks under the request
        raise TransportError("session closed by the other side")

    kernel = SimKernel(start=START, stall_timeout=30.0, peers_elsewhere=True)
    ends: queue.Queue[Exchange] = queue.Queue()
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", server.port), ["peer"],
        lambda exchange: ends.put(exchange) if exchange.operation == "notification" and exchange.status else None,
        credentials=("admin", "admin"), timeout=10, retry=Backoff(first=1.0, limit=0.0),  # no retry: given up
    )  # fmt: skip

    def activity() -> None:
        peer = peers.peer("peer")
        peer.assign(Task("t-long", send_from="me", content=build_prompt("SITE-07", "diagnose"), task_async=True))
        monkeypatch.setattr(AgentClient, "get_task", broken_get_task)
        with pytest.raises(TransportError):
            peer.get_task("t-long")  # the last request to this peer, given up
        monkeypatch.setattr(AgentClient, "get_task", real_get_task)

    try:
        play(kernel, activity)
        behaviour.gate.set()  # the task ends at the peer: only a subscription can tell
        statuses = []
        while TaskStatus.FINISHED.value not in statuses:
            statuses.append(ends.get(timeout=20).status)  # queue.Empty: the end never came
    finally:
        peers.close()
        kernel.close()
        server.stop()


def test_closing_ends_a_notification_dispatcher_that_waits_to_reconnect(
    tmp_path: Path, profile: AgentProfile, caplog: pytest.LogCaptureFixture
) -> None:
    # A lab that stops: the peer stops first, so the dispatcher takes it for a lost session and waits to
    # reconnect (5 s between attempts here); closing must end that wait and hand the thread to be joined.
    server = AgentServer(ServerConfig(state_dir=tmp_path / "peer", port=0, profile=profile)).start()
    kernel = SimKernel(start=START, stall_timeout=60.0)
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", server.port), ["peer"], lambda exchange: None,
        credentials=("admin", "admin"), timeout=10, reconnect=Backoff(first=5.0, factor=1.0, cap=5.0, limit=300.0),
    )  # fmt: skip
    try:
        with caplog.at_level(logging.INFO, logger="an_agent.nc.retry"):
            with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client:
                client.assign_task(Task("t-close", send_from="me", content=build_prompt("SITE-07", "diagnose")))
            assert play(kernel, lambda: peers.peer("peer").get_task("t-close")).task_id == "t-close"
            server.stop()
            wait_logged(caplog, "reconnect: attempt 1 failed", "the dispatcher did not try to reconnect")
        closed = time.monotonic()
        threads = peers.close(join=False)
        assert [t.name for t in threads] == ["notify:me<-peer"]
        threads[0].join(10)
        assert not threads[0].is_alive() and time.monotonic() - closed < 2.0  # not after its 5 s wait
    finally:
        peers.close()
        kernel.close()
        server.stop()


def test_one_reconnection_at_a_time_and_each_end_handed_over_once(
    tmp_path: Path, profile: AgentProfile, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The subscription is lost twice while a reconnection waits: the peer stops (the dispatcher waits to
    reconnect), comes back and is reached by a request first, then that request's session breaks. Only
    one thread may be reconnecting or reading notifications for the peer at any time (two would read two
    subscriptions), each end reaches the Scheduler once, and `close` returns that one thread."""
    behaviour = HeldUntilOpened()
    state = tmp_path / "peer"
    address = {"port": 0}

    def serve() -> AgentServer:
        server = AgentServer(ServerConfig(state_dir=state, port=0, profile=profile, behaviour=behaviour)).start()
        address["port"] = server.port
        return server

    server = serve()
    kernel = SimKernel(start=START, stall_timeout=30.0, peers_elsewhere=True)
    exchanges: queue.Queue[Exchange] = queue.Queue()
    subscribed: list[float] = []

    def record(exchange: Exchange) -> None:
        if exchange.operation == "create-subscription":
            subscribed.append(exchange.time)
        exchanges.put(exchange)

    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", address["port"]), ["peer"], record,
        credentials=("admin", "admin"), timeout=10, retry=Backoff(first=1.0, limit=0.0),  # a failure is final
        reconnect=Backoff(first=30.0, factor=1.0, cap=30.0, limit=300.0),  # a reconnection waits long
    )  # fmt: skip
    completed: list[str] = []
    real_complete = kernel.complete

    def complete(key: Any, value: Any) -> None:
        completed.append(key[1])
        real_complete(key, value)

    monkeypatch.setattr(kernel, "complete", complete)
    real_get_task = AgentClient.get_task

    def broken_get_task(self: AgentClient, task_id: str) -> Task:
        self.abort()  # the session breaks under the request
        raise TransportError("session closed by the other side")

    def assign(task_id: str) -> None:
        task = Task(task_id, send_from="me", content=build_prompt("SITE-07", "diagnose"), task_async=True)
        play(kernel, lambda: peers.peer("peer").assign(task))

    try:
        assign("t-1")
        assert peer_threads() == ["notify:me<-peer"]
        with caplog.at_level(logging.INFO, logger="an_agent.nc.retry"):
            server.stop()  # the dispatcher's session is lost: it tries to reconnect, then waits 30 s
            wait_logged(caplog, "reconnect: attempt 1 failed", "the dispatcher did not try to reconnect")
        server = serve()  # the peer is back (its tasks too), and a request reaches it first
        assert play(kernel, lambda: peers.peer("peer").get_task("t-1")).task_id == "t-1"
        assert len(peer_threads()) == 1, peer_threads()
        monkeypatch.setattr(AgentClient, "get_task", broken_get_task)
        with pytest.raises(TransportError):
            play(kernel, lambda: peers.peer("peer").get_task("t-1"))  # dropped again while that wait runs
        monkeypatch.setattr(AgentClient, "get_task", real_get_task)
        assert len(peer_threads()) == 1, peer_threads()
        assign("t-2")
        behaviour.gate.set()  # both tasks end at the peer: only the subscription tells
        ends: list[str] = []
        while len(ends) < 2:
            exchange = exchanges.get(timeout=20)  # queue.Empty: an end never came
            if exchange.operation == "notification" and exchange.status == TaskStatus.FINISHED.value:
                ends.append(exchange.task_id or "")
        assert len(peer_threads()) == 1, peer_threads()
        threads = peers.close(join=False)
        for thread in threads:
            thread.join(10)
        assert peer_threads() == []  # the thread `close` returned was the only one
    finally:
        peers.close()
        kernel.close()
        server.stop()
    assert sorted(ends) == ["t-1", "t-2"]
    assert len(subscribed) == 3  # the first, after the restart, after the drop: one each time
    time.sleep(0.2)  # a second subscription would deliver a duplicate now
    assert sorted(completed) == ["t-1", "t-2"]
