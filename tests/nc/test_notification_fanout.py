"""Notification fan-out: one filter decision per view and one encoding per framing, not per subscriber."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Hashable, Iterator
from pathlib import Path

import pytest
from lxml import etree

from an_agent.access.users import hash_password
from an_agent.clock import SystemClock
from an_agent.model import AgentProfile
from an_agent.nc.wire import frame
from an_agent.runtime.notifications import NotificationBus
from an_agent.server import AgentServer, ServerConfig
from an_agent.store.agent_store import AgentStore
from rawnc import NS, RawSession, wait_for
from support import IRTF


class CountingSink:
    """An EventSink that records what it is sent and counts encodings per framing."""

    encodes: dict[Hashable, int]

    def __init__(self, encoding: str, encodes: dict[Hashable, int]) -> None:
        self.encoding = encoding
        self.encodes = encodes
        self.sent: list[bytes] = []

    def encode(self, message: str) -> bytes:
        self.encodes[self.encoding] = self.encodes.get(self.encoding, 0) + 1
        return frame(message, self.encoding == "1.1")

    def send_encoded(self, data: bytes) -> None:
        self.sent.append(data)


def _publish(bus: NotificationBus, store: AgentStore, body: str) -> int:
    def log_event() -> tuple[int, float, str]:
        now = time.time()
        return store.append_notification(now, body), now, body

    seq = bus.publish(log_event)
    assert seq is not None
    return seq


class GatedSink(CountingSink):
    """A sink whose writes wait for ``gate`` (a subscriber whose transport is slow)."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__("1.1", {})
        self.gate = gate

    def send_encoded(self, data: bytes) -> None:
        self.gate.wait(30)
        super().send_encoded(data)


def test_waiting_for_an_event_to_reach_every_transport(tmp_path: Path) -> None:
    """`wait_handed_over` returns once every writer wrote the event, and gives up (False) on a stuck one."""
    store = AgentStore(tmp_path)
    bus = NotificationBus(store, SystemClock())
    gate = threading.Event()
    fast = [CountingSink("1.0", {}) for _ in range(5)]
    slow = GatedSink(gate)
    try:
        for sink in [*fast, slow]:
            bus.subscribe(sink, None, None, None, lambda _: None).start()  # type: ignore[arg-type]
        first = _publish(bus, store, '<e xmlns="urn:x">1</e>')
        assert bus.wait_handed_over(first, 0.3) is False  # the slow one still holds it
        assert all(len(s.sent) == 1 for s in fast) and slow.sent == []
        second = _publish(bus, store, '<e xmlns="urn:x">2</e>')
        gate.set()
        assert bus.wait_handed_over(second, 30) is True
        assert len(slow.sent) == 2 and all(len(s.sent) == 2 for s in fast)
        assert bus.wait_handed_over(second, 0) is True  # nothing left: no wait at all
    finally:
        gate.set()
        bus.close()
        store.close()


def test_filter_runs_once_per_view_and_encoding_once_per_framing(tmp_path: Path) -> None:
    store = AgentStore(tmp_path)
    bus = NotificationBus(store, SystemClock())
    calls: dict[str, int] = {"shared": 0, "own": 0}
    lock = threading.Lock()

    def counted(name: str, wanted: str) -> object:
        def event_filter(event: etree._Element) -> bool:
            with lock:
                calls[name] += 1
            return event.text == wanted

        return event_filter

    encodes: dict[Hashable, int] = {}
    shared = [CountingSink("1.1" if i % 2 else "1.0", encodes) for i in range(20)]
    own = CountingSink("1.1", encodes)
    texts: list[str] = []
    try:
        for sink in shared:
            bus.subscribe(sink, counted("shared", "a"), None, None, lambda _: None, view="same").start()  # type: ignore[arg-type]
        bus.subscribe(own, counted("own", "b"), None, None, lambda _: None).start()  # type: ignore[arg-type]
        bus.subscribe(texts.append, None, None, None, lambda _: None).start()
        for text in ("a", "b", "a"):
            _publish(bus, store, f'<e xmlns="urn:x">{text}</e>')
        wait_for(lambda: all(len(s.sent) == 2 for s in shared) and len(own.sent) == 1 and len(texts) == 3)
        assert calls == {"shared": 3, "own": 3}  # per event and view, not per subscriber
        # Two passing events for the 20 shared subscribers in two framings (+1 for `own`, +3 text).
        assert encodes == {"1.0": 2, "1.1": 3}
        chunked, eom = shared[1].sent[0], shared[0].sent[0]
        assert chunked.startswith(b"\n#") and chunked.endswith(b"\n##\n") and eom.endswith(b"]]>]]>")
        assert b"<eventTime>" in eom and b'<e xmlns="urn:x">a</e>' in eom
        assert "<e" in texts[1] and texts[1].startswith("<notification")
    finally:
        bus.close()
        store.close()


# `limited` users may not receive condition-notifications; operators may.
NACM_RULES = {
    "ietf-netconf-acm:nacm": {
        "enable-nacm": True,
        "read-default": "permit",
        "write-default": "permit",
        "exec-default": "permit",
        "rule-list": [
            {
                "name": "limited",
                "group": ["limited"],
                "rule": [
                    {
                        "name": "no-conditions",
                        "module-name": "irtf-agent",
                        "notification-name": "condition-notifications",
                        "access-operations": "read",
                        "action": "deny",
                    }
                ],
            }
        ],
    }
}
USERS = """users:
  - name: alice
    password: "{pw}"
    groups: [operators]
  - name: lim
    password: "{pw}"
    groups: [limited]
"""


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    users = tmp_path / "users.yaml"
    users.write_text(USERS.format(pw=hash_password("pw")))
    users.chmod(0o600)
    nacm = tmp_path / "nacm.json"
    nacm.write_text(json.dumps(NACM_RULES))
    config = ServerConfig(
        state_dir=tmp_path / "state", port=0, profile=profile, users_file=users, nacm_file=nacm, schemas="off"
    )
    with AgentServer(config) as srv:
        yield srv


def test_same_filter_different_nacm_views_are_not_shared(server: AgentServer) -> None:
    subscribers = [
        RawSession(server.port, user=user, password="pw", base=base)
        for user, base in (("alice", "1.1"), ("lim", "1.1"), ("alice", "1.0"), ("lim", "1.0"))
    ]
    worker = RawSession(server.port, user="alice", password="pw")
    try:
        for session in subscribers:
            assert (
                session.rpc("<create-subscription xmlns='urn:ietf:params:xml:ns:netconf:notification:1.0'/>").find(
                    "nc:ok", NS
                )
                is not None
            )
        edit = (
            f'<edit-config><target><running/></target><config><tasks xmlns="{IRTF}"><task><task-id>f1</task-id>'
            "<task-sendFrom>svc</task-sendFrom><commuType>taskAssign</commuType>"
            "<content>## target object\nX\n## task description\ny</content></task></tasks></config></edit-config>"
        )
        assert worker.rpc(edit).find("nc:ok", NS) is not None
        for session in (subscribers[0], subscribers[2]):  # both framings get the event
            note = session.receive()
            assert note.find(f".//{{{IRTF}}}task-id") is not None
        # The limited users get nothing: check that their sessions still answer first
        # with no notification queued ahead of the reply.
        for session in (subscribers[1], subscribers[3]):
            reply = session.rpc("<get><filter type='subtree'><nothing xmlns='urn:none'/></filter></get>")
            assert etree.QName(reply).localname == "rpc-reply"
    finally:
        for session in (*subscribers, worker):
            session.close()


class DirectSink(CountingSink):
    """A sink that can take bytes at once (like the sshd path's pipes), until told it cannot."""

    def __init__(self) -> None:
        super().__init__("1.1", {})
        self.accept = True
        self.threads: list[str] = []

    def try_send_encoded(self, data: bytes) -> bool:
        self.threads.append(threading.current_thread().name)
        if not self.accept:
            return False
        self.sent.append(data)
        return True


def test_a_sink_that_cannot_block_is_written_by_the_publisher_in_order(tmp_path: Path) -> None:
    store = AgentStore(tmp_path)
    bus = NotificationBus(store, SystemClock())
    sink = DirectSink()
    try:
        sub = bus.subscribe(sink, None, None, None, lambda _: None)  # type: ignore[arg-type]
        _publish(bus, store, '<e xmlns="urn:x">0</e>')  # before start (the rpc-reply): never written at once
        assert sink.threads == []
        sub.start()
        wait_for(lambda: len(sink.sent) == 1)
        seq = _publish(bus, store, '<e xmlns="urn:x">1</e>')
        assert len(sink.sent) == 2 and sink.threads == [threading.current_thread().name]
        assert bus.wait_handed_over(seq, 0) is True
        sink.accept = False  # its transport is full: the writer thread takes over, in order
        for text in ("2", "3"):
            _publish(bus, store, f'<e xmlns="urn:x">{text}</e>')
        sink.accept = True
        last = _publish(bus, store, '<e xmlns="urn:x">4</e>')
        assert bus.wait_handed_over(last, 30) is True
        wait_for(lambda: len(sink.sent) == 5)
        texts = [etree.fromstring(d.split(b"\n", 2)[2].rsplit(b"\n##", 1)[0]) for d in sink.sent]
        assert [t[1].text for t in texts] == ["0", "1", "2", "3", "4"]
    finally:
        bus.close()
        store.close()


def test_an_fd_stream_writes_at_once_only_when_it_cannot_block(tmp_path: Path) -> None:
    import os
    import socket

    from an_agent.nc.sshd import _FdStream

    read_fd, write_fd = os.pipe()
    bridge_a, bridge_b = socket.socketpair()
    stream = _FdStream(read_fd, write_fd, bridge_a)
    try:
        assert stream.try_write(b"x" * 100) is True
        assert os.read(read_fd, 200) == b"x" * 100
        assert stream.try_write(b"y" * 5000) is False  # above PIPE_BUF: not atomic, left to the writer
        os.set_blocking(write_fd, False)
        try:
            while True:
                os.write(write_fd, b"z" * 4096)  # fill the pipe
        except BlockingIOError:
            pass
        os.set_blocking(write_fd, True)
        assert stream.try_write(b"w" * 100) is False  # full: refused at once (a blocking write would hang here)
    finally:
        stream.close()
        bridge_b.close()
