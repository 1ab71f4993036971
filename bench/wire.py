"""A minimal NETCONF-over-SSH client used to measure both servers the same way.

Why not ncclient: stock ncclient 0.7.1 sends a queued request only at its next
100 ms selector tick and leaves Nagle on, which would hide the servers behind
~100 ms of client delay (DESIGN.md, "Known traps"). This client sends each
request at once on a TCP_NODELAY socket, speaks both framings (RFC 6242 end-of-
message for 1.0, chunked for 1.1), and does nothing else: no schema, no XML
parsing beyond recognising replies and notifications. The same code drives
an-agent and netconfd, so client costs cancel out in the ratios.

Two SSH clients under the same NETCONF code: paramiko (`Session.connect`, the
default), and OpenSSH's ``ssh -s ... netconf`` as a child process
(`Session.connect_openssh`), whose SSH work (decryption, MAC, windows) is C in
its own process and whose stdout the session reads: the notification
benchmark's subscribers use it so that fifty Python SSH stacks on the
server's two cores weigh less in the measurement (bench/README.md, "The floor").

Contract: `Session.connect(...)` returns an open session after the hello
exchange (NETCONF 1.1 when the server offers it); `request(body)` sends one
`<rpc>` and returns the raw `<rpc-reply>` text, raising `BenchRpcError` when it
carries `<rpc-error>`; `next_notification(timeout)` returns the next
`<notification>` with its arrival time. A session is used by one thread.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import socket
import subprocess
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Protocol

import paramiko

BASE_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
BASE_10 = "urn:ietf:params:netconf:base:1.0"
BASE_11 = "urn:ietf:params:netconf:base:1.1"
EOM = b"]]>]]>"


def _client_hello(base11: bool) -> bytes:
    caps = f"<capability>{BASE_10}</capability>" + (f"<capability>{BASE_11}</capability>" if base11 else "")
    hello = f'<hello xmlns="{BASE_NS}"><capabilities>{caps}</capabilities></hello>'
    return ('<?xml version="1.0" encoding="UTF-8"?>' + hello).encode()


_RECV = 65536
# netconfd (yuma123 2.13) defers input that arrives in the same read as the message before it and
# looks at it again only when more input comes: a first <rpc> that catches up with the client's
# <hello> can wait forever. Sending the first <rpc> a little after the hello avoids that; it is
# never inside a timed interval (set-up is timed to the hello, requests after a warm-up).
FIRST_RPC_GAP = 0.02


class BenchError(Exception):
    """The benchmark harness or a session failed; the message says where."""


class BenchRpcError(BenchError):
    """The server answered a request with <rpc-error>; `reply` holds the whole reply."""

    def __init__(self, reply: str) -> None:
        super().__init__(_error_summary(reply))
        self.reply = reply


@dataclass(frozen=True)
class Credentials:
    """How to log in: a password, or a private key file (OpenSSH or PEM format)."""

    username: str
    password: str | None = None
    key_file: Path | None = None


@dataclass(frozen=True)
class Notification:
    """One received <notification> and `time.monotonic()` when its last byte was read."""

    xml: str
    received: float


class _Framer:
    """Splits a byte stream into NETCONF messages (EOM framing until switched to chunked)."""

    def __init__(self) -> None:
        self.chunked = False
        self._buf = bytearray()
        self._parts: list[bytes] = []

    def feed(self, data: bytes) -> list[bytes]:
        self._buf += data
        out: list[bytes] = []
        while True:
            msg = self._next_chunked() if self.chunked else self._next_eom()
            if msg is None:
                return out
            out.append(msg)

    def _next_eom(self) -> bytes | None:
        end = self._buf.find(EOM)
        if end < 0:
            return None
        msg = bytes(self._buf[:end])
        del self._buf[: end + len(EOM)]
        return msg.strip()

    def _next_chunked(self) -> bytes | None:
        # RFC 6242 section 4.2: ("\n#" size "\n" data)+ "\n##\n"
        while True:
            if len(self._buf) < 4:
                return None
            if self._buf[:4] == b"\n##\n":
                del self._buf[:4]
                msg = b"".join(self._parts)
                self._parts = []
                return msg
            if self._buf[:2] != b"\n#":
                raise BenchError(f"bad chunk header {bytes(self._buf[:16])!r}")
            nl = self._buf.find(b"\n", 2)
            if nl < 0:
                return None
            size = int(self._buf[2:nl])
            if len(self._buf) < nl + 1 + size:
                return None
            self._parts.append(bytes(self._buf[nl + 1 : nl + 1 + size]))
            del self._buf[: nl + 1 + size]


class _Channel(Protocol):
    """The session's byte stream (a paramiko channel, or `_OpenSshChannel`)."""

    def sendall(self, data: bytes) -> None: ...

    def recv(self, size: int) -> bytes: ...

    def settimeout(self, timeout: float | None) -> None: ...


class _Carrier(Protocol):
    """What carries the stream (a paramiko transport, or `_OpenSshChannel`)."""

    def is_active(self) -> bool: ...

    def close(self) -> None: ...


_ASKPASS = "#!/bin/sh\nprintf '%s\\n' \"$AN_BENCH_SSH_PASSWORD\"\n"


class _OpenSshChannel:
    """``ssh -s HOST netconf`` as a child process: its stdin and stdout are the session's stream."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdin is not None and proc.stdout is not None
        self._proc = proc
        self._in = proc.stdin.fileno()
        self._out = proc.stdout.fileno()
        self._timeout: float | None = None

    def sendall(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._in, view) :]

    def recv(self, size: int) -> bytes:
        ready, _, _ = select.select([self._out], [], [], self._timeout)
        if not ready:
            raise TimeoutError("timed out")
        return os.read(self._out, size)

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout

    def is_active(self) -> bool:
        return self._proc.poll() is None

    def close(self) -> None:
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                pipe.close()
        if self._proc.poll() is None:
            self._proc.terminate()
        try:
            self._proc.wait(5.0)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


class Session:
    """One NETCONF session over its own SSH connection."""

    def __init__(self, transport: _Carrier, channel: _Channel) -> None:
        self._transport = transport
        self._chan = channel
        self._framer = _Framer()
        self._ready: deque[bytes] = deque()  # split out of one recv() but not consumed yet
        self._pending: deque[bytes] = deque()  # notifications read while waiting for a reply
        self._arrival: deque[float] = deque()
        self._next_id = 1
        self._hello_at = 0.0
        self.server_hello = ""
        self.session_id = ""

    @classmethod
    def connect(cls, host: str, port: int, creds: Credentials, timeout: float = 30.0, base11: bool = True) -> Session:
        """TCP connect, SSH handshake and authentication, netconf subsystem, hello exchange.

        With `base11` False the client offers only base:1.0 (end-of-message framing).
        """
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise BenchError(f"cannot connect to {host}:{port}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        transport = paramiko.Transport(sock)
        try:
            transport.start_client(timeout=timeout)
            if creds.key_file is not None:
                transport.auth_publickey(creds.username, _load_key(creds.key_file))
            else:
                transport.auth_password(creds.username, creds.password or "")
            channel = transport.open_session(timeout=timeout)
            channel.settimeout(timeout)
            channel.invoke_subsystem("netconf")
            session = cls(transport, channel)
            session._hello(base11)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            transport.close()
            raise BenchError(f"NETCONF session to {host}:{port} failed: {exc}") from exc
        except BaseException:
            transport.close()
            raise
        return session

    @classmethod
    def connect_openssh(
        cls, host: str, port: int, creds: Credentials, timeout: float = 30.0, base11: bool = True
    ) -> Session:
        """As `connect`, but SSH is OpenSSH's ``ssh`` client in a child process (see the module docstring).

        No user or system ssh configuration is read (``-F /dev/null``), host keys are not checked
        (127.0.0.1, throw-away servers); a password is given through ``SSH_ASKPASS``.
        """
        ssh = shutil.which("ssh")
        if ssh is None:
            raise BenchError("the OpenSSH client (ssh) is not installed (Debian package openssh-client)")
        argv = [ssh, "-F", "/dev/null", "-T", "-x", "-a", "-e", "none", "-s", "-p", str(port), "-l", creds.username]
        argv += ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
        argv += ["-o", f"ConnectTimeout={max(1, int(timeout))}", "-o", "ServerAliveInterval=0"]
        env = dict(os.environ)
        askpass: Path | None = None
        if creds.key_file is not None:
            argv += ["-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-i", str(creds.key_file)]
            argv += ["-o", "PasswordAuthentication=no", "-o", "KbdInteractiveAuthentication=no"]
        else:
            fd, name = tempfile.mkstemp(prefix="an-bench-askpass-")
            askpass = Path(name)
            os.write(fd, _ASKPASS.encode())
            os.close(fd)
            askpass.chmod(0o700)
            env.update(SSH_ASKPASS=str(askpass), SSH_ASKPASS_REQUIRE="force")
            env["AN_BENCH_SSH_PASSWORD"] = creds.password or ""
            argv += ["-o", "PubkeyAuthentication=no", "-o", "PreferredAuthentications=password"]
            argv += ["-o", "NumberOfPasswordPrompts=1"]
        argv += [host, "netconf"]
        proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, bufsize=0
        )
        channel = _OpenSshChannel(proc)
        channel.settimeout(timeout)
        session = cls(channel, channel)
        try:
            session._hello(base11)
        except (BenchError, OSError, TimeoutError) as exc:
            channel.close()
            err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr is not None else ""
            raise BenchError(f"NETCONF session to {host}:{port} through ssh failed: {exc} {err}".strip()) from exc
        finally:
            if askpass is not None:
                askpass.unlink()
        channel.settimeout(30.0)
        return session

    def _hello(self, base11: bool) -> None:
        self._chan.sendall(_client_hello(base11) + EOM)
        hello = self._read_message().decode()
        self.server_hello = hello
        match = re.search(r"<(?:\w+:)?session-id>\s*(\d+)\s*<", hello)
        self.session_id = match.group(1) if match else ""
        self._framer.chunked = base11 and BASE_11 in hello
        self._hello_at = time.monotonic()

    def send(self, body: str) -> str:
        """Send one <rpc> wrapping `body` without waiting; returns its message-id."""
        mid = str(self._next_id)
        if self._next_id == 1:
            time.sleep(max(0.0, self._hello_at + FIRST_RPC_GAP - time.monotonic()))
        self._next_id += 1
        self._write(f'<rpc message-id="{mid}" xmlns="{BASE_NS}">{body}</rpc>'.encode())
        return mid

    def request(self, body: str) -> str:
        """Send one <rpc> and return its <rpc-reply>; notifications read meanwhile are kept."""
        mid = self.send(body)
        return self.wait_reply(mid)

    def wait_reply(self, mid: str) -> str:
        """Read until the reply to message-id `mid`; raise BenchRpcError if it is an error."""
        marker = f'message-id="{mid}"'
        while True:
            raw = self._read_message()
            text = raw.decode()
            if "rpc-reply" in text[:300] and marker in text[:500]:
                if "rpc-error>" in text:
                    raise BenchRpcError(text)
                return text
            self._pending.append(raw)
            self._arrival.append(time.monotonic())

    def next_notification(self, timeout: float) -> Notification:
        """Return the next <notification> (kept or newly read); BenchError after `timeout` s."""
        if self._pending:
            return Notification(self._pending.popleft().decode(), self._arrival.popleft())
        self._chan.settimeout(timeout)
        try:
            raw = self._read_message()
        except TimeoutError as exc:
            raise BenchError(f"no notification within {timeout} s") from exc
        finally:
            self._chan.settimeout(30.0)
        return Notification(raw.decode(), time.monotonic())

    def close(self) -> None:
        """Send <close-session> (best effort) and drop the connection."""
        try:
            if self._transport.is_active():
                self.send("<close-session/>")
        except (OSError, paramiko.SSHException):
            pass  # the peer is gone already: closing is all that is left
        self._transport.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _write(self, payload: bytes) -> None:
        if self._framer.chunked:
            self._chan.sendall(b"\n#%d\n" % len(payload) + payload + b"\n##\n")
        else:
            self._chan.sendall(payload + EOM)

    def _read_message(self) -> bytes:
        while True:
            if self._ready:
                return self._ready.popleft()
            data = self._chan.recv(_RECV)
            if not data:
                raise BenchError("the server closed the session")
            self._ready.extend(self._framer.feed(data))


def _load_key(path: Path) -> paramiko.PKey:
    for cls in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            key: paramiko.PKey = cls.from_private_key_file(str(path))
            return key
        except paramiko.SSHException:
            continue
    raise BenchError(f"cannot read the private key {path}")


def _error_summary(reply: str) -> str:
    parts = []
    for tag in ("error-tag", "error-path", "error-message"):
        match = re.search(rf"<(?:\w+:)?{tag}[^>]*>(.*?)</(?:\w+:)?{tag}>", reply, re.S)
        if match:
            parts.append(f"{tag}={match.group(1).strip()}")
    return "rpc-error: " + ("; ".join(parts) or reply[:300])
