"""A deliberately dumb NETCONF-over-SSH client for tests that must send what no
real client would (malformed XML, no message-id, oversized messages) and read
the exact bytes that come back."""

from __future__ import annotations

import contextlib
import re
import socket
import time

import paramiko
from lxml import etree

NC_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
NS = {"nc": NC_NS}
CLIENT_HELLO = (
    f'<hello xmlns="{NC_NS}"><capabilities><capability>urn:ietf:params:netconf:base:{{version}}</capability>'
    "</capabilities></hello>]]>]]>"
)


class RawSession:
    def __init__(self, port: int, base: str = "1.1", user: str = "admin", password: str = "admin") -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.transport = paramiko.Transport(self.sock)
        self.transport.connect(username=user, password=password)
        self.channel = self.transport.open_session()
        self.channel.settimeout(10)
        self.channel.invoke_subsystem("netconf")
        self.buffer = b""
        hello = self._read_until(b"]]>]]>")
        root = etree.fromstring(hello)
        self.session_id = int(root.findtext("nc:session-id", namespaces=NS) or "0")
        self.server_hello = root
        self.base = base
        self.channel.sendall(CLIENT_HELLO.format(version=base).encode())

    def _read_until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            data = self.channel.recv(65536)
            if not data:
                raise EOFError("server closed the channel")
            self.buffer += data
        msg, _, self.buffer = self.buffer.partition(marker)
        return msg

    def send_raw(self, payload: bytes) -> None:
        """Send one message body with the session's framing."""
        if self.base == "1.1":
            self.channel.sendall(b"\n#%d\n" % len(payload) + payload + b"\n##\n")
        else:
            self.channel.sendall(payload + b"]]>]]>")

    def receive(self) -> etree._Element:
        if self.base == "1.0":
            return etree.fromstring(self._read_until(b"]]>]]>"))
        body = b""
        while True:
            while not re.match(rb"\n#(#|\d+)\n", self.buffer):
                data = self.channel.recv(65536)
                if not data:
                    raise EOFError("server closed the channel")
                self.buffer += data
            m = re.match(rb"\n#(#|\d+)\n", self.buffer)
            assert m is not None
            self.buffer = self.buffer[m.end() :]
            if m.group(1) == b"#":
                return etree.fromstring(body)
            size = int(m.group(1))
            while len(self.buffer) < size:
                self.buffer += self.channel.recv(65536)
            body += self.buffer[:size]
            self.buffer = self.buffer[size:]

    def rpc(self, body: str, message_id: str = "1") -> etree._Element:
        self.send_raw(f'<rpc xmlns="{NC_NS}" message-id="{message_id}">{body}</rpc>'.encode())
        return self.receive()

    def is_open(self) -> bool:
        return not self.channel.closed and self.transport.is_active()

    def close(self) -> None:
        # The server may have closed it already (kill-session, close-session).
        with contextlib.suppress(EOFError, OSError):
            self.channel.close()
        self.transport.close()


def error_fields(reply: etree._Element) -> dict[str, str | None]:
    """The first <rpc-error>'s fields, for assertions."""
    err = reply.find("nc:rpc-error", NS)
    assert err is not None, etree.tostring(reply).decode()
    info = err.find("nc:error-info", NS)
    return {
        "type": err.findtext("nc:error-type", namespaces=NS),
        "tag": err.findtext("nc:error-tag", namespaces=NS),
        "path": err.findtext("nc:error-path", namespaces=NS),
        "message": err.findtext("nc:error-message", namespaces=NS),
        "app-tag": err.findtext("nc:error-app-tag", namespaces=NS),
        "bad-element": info.findtext("nc:bad-element", namespaces=NS) if info is not None else None,
    }


def wait_for(predicate, timeout: float = 10.0, interval: float = 0.02):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met within timeout")
