"""Notification attacks (issue 10): a subscriber that never reads, an ever-growing log, replay memory."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from an_agent.clock import ManualClock, SystemClock
from an_agent.runtime.notifications import NotificationBus
from an_agent.server import AgentServer
from an_agent.store.agent_store import AgentStore
from rawnc import NS, RawSession, wait_for
from support import task_xml

NOTIF = "urn:ietf:params:xml:ns:netconf:notification:1.0"
NETMOD_NOTIF = "urn:ietf:params:xml:ns:netmod:notification"
IRTF = "urn:ietf:params:xml:ns:yang:irtf-agent"


class _StalledSession(RawSession):
    """A subscriber with a tiny SSH window that never reads: the server's sends block once it is full."""

    def __init__(self, port: int) -> None:
        import socket

        import paramiko

        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.transport = paramiko.Transport(self.sock)
        self.transport.connect(username="admin", password="admin")
        self.channel = self.transport.open_session(window_size=16384, max_packet_size=4096)
        self.channel.settimeout(10)
        self.channel.invoke_subsystem("netconf")
        self.buffer = b""
        self._read_until(b"]]>]]>")
        self.base = "1.1"
        self.channel.sendall(
            b'<hello xmlns="urn:ietf:params:xml:ns:netconf:base:1.0"><capabilities><capability>'
            b"urn:ietf:params:netconf:base:1.1</capability></capabilities></hello>]]>]]>"
        )


def test_a_subscriber_that_never_reads_stalls_neither_others_nor_edits(agent_server: AgentServer) -> None:
    stalled = _StalledSession(agent_server.port)
    watcher = RawSession(agent_server.port)
    worker = RawSession(agent_server.port)
    try:
        assert stalled.rpc(f'<create-subscription xmlns="{NOTIF}"/>', "s").find("nc:ok", NS) is not None
        assert watcher.rpc(f'<create-subscription xmlns="{NOTIF}"/>', "w").find("nc:ok", NS) is not None
        seen: list[str] = []

        def read() -> None:
            try:
                while True:
                    msg = watcher.receive()
                    body = msg.find(f"{{{IRTF}}}condition-notifications")
                    if body is not None:
                        seen.append(body.findtext(f"{{{IRTF}}}task-id") or "")
            except Exception:
                return

        threading.Thread(target=read, daemon=True).start()
        worker.channel.settimeout(15)
        for i in range(120):
            started = time.monotonic()
            description = "diagnose the outage " + "x" * 400
            reply = worker.rpc(
                f"<edit-config><target><running/></target>{task_xml(f't{i}', description)}</edit-config>"
            )
            assert reply.find("nc:ok", NS) is not None
            assert time.monotonic() - started < 10
        wait_for(lambda: "t119" in seen, timeout=20)
    finally:
        for session in (stalled, watcher, worker):
            session.close()


def test_a_subscriber_that_falls_behind_is_dropped_with_notification_complete(tmp_path: Path) -> None:
    store = AgentStore(tmp_path)
    bus = NotificationBus(store, SystemClock(), max_backlog=5)
    release = threading.Event()
    sent: list[str] = []
    ended = threading.Event()

    def slow_send(xml: str) -> None:
        release.wait(10)
        sent.append(xml)

    fast: list[str] = []
    try:
        bus.subscribe(slow_send, None, None, None, lambda _: ended.set()).start()
        bus.subscribe(fast.append, None, None, None, lambda _: None).start()
        for i in range(20):
            bus.publish(
                lambda i=i: (
                    store.append_notification(time.time(), f'<e xmlns="urn:x">{i}</e>'),
                    time.time(),
                    f'<e xmlns="urn:x">{i}</e>',
                )
            )  # type: ignore[misc]
            time.sleep(0.02)  # the fast subscriber's writer keeps up at this pace; the stalled one cannot
        wait_for(lambda: len(fast) == 20, timeout=5)  # the fast subscriber is not held back
        release.set()
        wait_for(ended.is_set, timeout=5)
        wait_for(lambda: sent and "notificationComplete" in sent[-1], timeout=5)
        assert len(sent) <= 5 + 2  # its backlog was bounded, the rest dropped
        assert bus.subscriber_count() == 1
    finally:
        bus.close()
        store.close()


def test_the_log_is_pruned_on_the_wall_clock_not_the_agent_clock(tmp_path: Path) -> None:
    store = AgentStore(tmp_path)
    try:
        simulated = ManualClock(0.0)  # a lab clock far in the past
        for i in range(10):
            store.append_notification(simulated.now() + i, f"<e>{i}</e>")
        assert store.prune_notifications(older_than=3600.0) == 0  # written just now on the wall clock
        assert store.prune_notifications(older_than=0.0, now=time.time() + 1) == 10
        assert store.last_notification_seq() == 10  # sequence numbers are never reused
    finally:
        store.close()


def test_replay_reads_the_log_in_pages(tmp_path: Path) -> None:
    store = AgentStore(tmp_path)
    try:
        for i in range(25):
            store.append_notification(float(i), f"<e>{i}</e>")
        pages = list(store.notification_pages(since=0.0, until=None, max_seq=20, page_size=8))
        assert [len(p) for p in pages] == [8, 8, 4]
        assert [n.seq for p in pages for n in p] == list(range(1, 21))
    finally:
        store.close()
