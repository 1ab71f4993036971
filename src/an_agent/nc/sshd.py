"""The sshd path: OpenSSH carries SSH, the agent gets each session's byte stream over a Unix socket.

paramiko does SSH in Python, under the interpreter lock, on every packet; a
fleet of agents answering many small requests pays for it. As netconfd does,
`SshdTransport` lets OpenSSH's ``sshd`` (C, a process per connection) do the
SSH work: the agent starts its own sshd with its own config, port and host
key (nothing in ``/etc/ssh`` is used or changed), and a ``netconf``
subsystem whose forced command (`an_agent.nc.sshd_bridge`) hands the
session's stdin/stdout to the agent over a Unix socket in the state directory
(mode 0600). The agent then runs the same `NetconfSession` on them as on a
paramiko channel: same users, NACM, hello and idle timeouts, message limits.

Who logs in: sshd authenticates system accounts, so every user is mapped onto
one account, the one the agent runs as. ``AuthorizedKeysCommand`` prints each
user's public keys (from the users file; ``--authorized-keys`` keys map to
the account's own name) with ``restrict`` and a forced command naming the
user, so the key decides the user whatever login name the client gave. Key
login only: passwords stay on the paramiko path.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from an_agent.errors import ConfigError
from an_agent.nc import sshd_bridge
from an_agent.nc.server import NetconfSshServer
from an_agent.store.sqlite import private_directory

log = logging.getLogger(__name__)

SSHD = "/usr/sbin/sshd"
_SAFE_NAME = re.compile(r"[A-Za-z0-9._@+-]{1,64}")
_SAFE_PATH = re.compile(r"[A-Za-z0-9._/+-]+")
_START_TIMEOUT = 10.0


class _FdStream:
    """A session's byte stream on the two descriptors sshd gave the bridge (its stdin and stdout).

    `recv` waits with poll, so that `close` from another thread (idle
    timeout, kill-session, stop) ends a blocked read within the poll period.
    """

    _POLL_MS = 500

    def __init__(self, read_fd: int, write_fd: int, bridge: socket.socket) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._bridge = bridge
        self._closed = False
        self._lock = threading.Lock()
        self._poller = select.poll()  # used by the session's reader thread only
        self._poller.register(read_fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def recv(self, size: int) -> bytes:
        while not self._closed:
            if self._poller.poll(self._POLL_MS):
                try:
                    return os.read(self._read_fd, size)
                except OSError:
                    return b""
        return b""

    def sendall(self, data: bytes | str) -> None:
        # The netconf package hands base:1.0 messages over as text (paramiko channels accept both).
        view = memoryview(data.encode("utf-8") if isinstance(data, str) else data)
        while view:
            if self._closed:
                raise EOFError("stream closed")
            written = os.write(self._write_fd, view)
            view = view[written:]

    def try_write(self, data: bytes) -> bool:
        """Write all of ``data`` if that cannot block, else nothing (False).

        A write of at most PIPE_BUF bytes to a pipe is atomic, and when poll
        says the pipe is writable it has room for it: no wait. Bigger
        messages go through `sendall` on the session's writer thread.
        """
        if self._closed or len(data) > select.PIPE_BUF:
            return False
        poller = select.poll()
        poller.register(self._write_fd, select.POLLOUT)
        if not poller.poll(0):
            return False
        view = memoryview(data)
        while view:  # one write for a pipe; a socket (if sshd gave one) may take it in parts
            view = view[os.write(self._write_fd, view) :]
        return True

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        # Closing our ends of the pipes and the bridge connection lets the
        # bridge (cat) exit, and sshd then ends the SSH session.
        for fd in (self._read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(OSError):
            self._bridge.close()


def authorized_keys_lines(
    keys_by_user: Mapping[str, Sequence[str]], socket_path: Path, python: str = sys.executable
) -> list[str]:
    """One ``authorized_keys`` line per key: ``restrict`` and the forced command that names its user.

    Raises `ConfigError` for a user name or path that cannot be put in a
    forced command safely (no quoting is attempted: only plain names pass).
    """
    bridge = Path(sshd_bridge.__file__).resolve()
    for path in (python, str(bridge), str(socket_path)):
        if not _SAFE_PATH.fullmatch(path):
            raise ConfigError(f"the sshd path needs a plain path (letters, digits, ._/+-), not {path!r}")
    lines = []
    for user, keys in keys_by_user.items():
        if not _SAFE_NAME.fullmatch(user):
            raise ConfigError(f"user name {user!r} cannot be used on the sshd path (letters, digits, ._@+- only)")
        command = f"{python} -I -S {bridge} {socket_path} {user}"
        for key in keys:
            kind, blob = key.split()[:2]
            lines.append(f'restrict,command="{command}" {kind} {blob} {user}')
    return lines


class SshdTransport:
    """Runs a private sshd on ``host:port`` that feeds SSH sessions into ``server`` (see the module docstring)."""

    def __init__(
        self,
        server: NetconfSshServer,
        state_dir: Path,
        host: str,
        port: int,
        keys_by_user: Mapping[str, Sequence[str]],
    ) -> None:
        self.server = server
        self.dir = state_dir / "sshd"
        self.host = host
        self.port = port
        self.account = service_account()
        self._keys_by_user = keys_by_user
        self.socket_path = self.dir / "netconf.sock"
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self._sshd: subprocess.Popen[bytes] | None = None
        self._stopping = threading.Event()

    @property
    def pid(self) -> int | None:
        """The sshd listener's process id (None when not running)."""
        return self._sshd.pid if self._sshd is not None else None

    def start(self) -> None:
        """Listen on the Unix socket, start sshd, and wait until it accepts connections; `ConfigError` if not."""
        if not Path(SSHD).exists():
            raise ConfigError(f"the sshd path needs OpenSSH's {SSHD} (Debian package openssh-server)")
        if not any(self._keys_by_user.values()):
            raise ConfigError("the sshd path logs in by public key only: give users authorized-keys")
        private_directory(self.dir)
        self._listen()
        if self.port == 0:
            self.port = _free_port(self.host)
        config = self._write_config()
        log_file = (self.dir / "sshd.log").open("ab")
        if os.geteuid() == 0:
            # sshd run as root drops privileges into this directory (the Debian service creates it).
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self._sshd = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file
        )
        log_file.close()
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if self._sshd.poll() is not None:
                tail = (self.dir / "sshd.log").read_text(errors="replace").strip().splitlines()[-3:]
                self.stop()
                raise ConfigError(f"sshd exited ({' | '.join(tail)})")
            with contextlib.suppress(OSError), socket.create_connection((self.host, self.port), timeout=1):
                return
            time.sleep(0.02)
        self.stop()
        raise ConfigError(f"sshd did not listen on {self.host}:{self.port} within {_START_TIMEOUT:g} s")

    def stop(self) -> None:
        """Stop sshd (its per-connection processes end with their sessions) and the Unix listener."""
        self._stopping.set()
        if self._sshd is not None:
            self._sshd.send_signal(signal.SIGTERM)
            try:
                self._sshd.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._sshd.kill()
                self._sshd.wait()
            self._sshd = None
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)
            self._listener.close()
            self._listener = None
        with contextlib.suppress(OSError):
            self.socket_path.unlink()
        if self._accept_thread is not None:
            self._accept_thread.join(timeout=5)

    # -- internals ------------------------------------------------------------
    def _listen(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()  # left by an agent that was killed
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # the socket is created 0600: only the agent's account may connect
        try:
            sock.bind(str(self.socket_path))
        except OSError as exc:
            sock.close()
            raise ConfigError(f"cannot listen on {self.socket_path}: {exc.strerror}") from None
        finally:
            os.umask(old)
        sock.listen(512)
        self._listener = sock
        self._accept_thread = threading.Thread(target=self._accept_loop, name="nc-sshd-accept", daemon=True)
        self._accept_thread.start()

    def _accept_loop(self) -> None:
        assert self._listener is not None
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                if self._stopping.is_set():
                    return
                time.sleep(0.05)
                continue
            threading.Thread(target=self._adopt, args=(conn,), name="nc-sshd-session", daemon=True).start()

    def _adopt(self, conn: socket.socket) -> None:
        try:
            message, fds, _, _ = socket.recv_fds(conn, 256, 2)
        except OSError as exc:
            log.info("sshd bridge connection failed: %s", exc)
            conn.close()
            return
        if len(fds) != 2 or not message:
            for fd in fds:
                os.close(fd)
            conn.close()
            log.warning("sshd bridge sent no session (descriptors %d, user %r)", len(fds), message)
            return
        for fd in fds:
            os.set_inheritable(fd, False)  # never leaked into a process the agent starts
        user = message.decode("utf-8", "replace")
        stream = _FdStream(fds[0], fds[1], conn)
        self.server.serve_stream(stream, user, f"sshd:{user}", stream, stream.close)

    def _write_config(self) -> Path:
        keys_file = self.dir / "authorized_keys"
        lines = authorized_keys_lines(self._keys_by_user, self.socket_path)
        _write_private(keys_file, "".join(line + "\n" for line in lines))
        host_key = self.dir / "ssh_host_ed25519_key"
        if not host_key.exists():
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "an-agent", "-f", str(host_key)],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        config = self.dir / "sshd_config"
        root = self.account == "root"
        _write_private(
            config,
            "\n".join(
                [
                    f"ListenAddress {self.host}:{self.port}"
                    if ":" not in self.host
                    else f"ListenAddress [{self.host}]:{self.port}",
                    f"HostKey {host_key}",
                    "PidFile none",
                    f"AllowUsers {self.account}",
                    "PubkeyAuthentication yes",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    # The key file is written by the agent into its own private directory.
                    "StrictModes no",
                    "AuthorizedKeysFile none",
                    f"AuthorizedKeysCommand {shutil.which('cat') or '/bin/cat'} {keys_file}",
                    f"AuthorizedKeysCommandUser {self.account}",
                    f"PermitRootLogin {'forced-commands-only' if root else 'no'}",
                    "DisableForwarding yes",
                    "PermitTTY no",
                    f"Subsystem netconf {sshd_bridge.SUBSYSTEM_COMMAND}",
                    f"LoginGraceTime {max(1, int(self.server.hello_timeout))}",
                    "MaxStartups 100:30:1000",
                    "LogLevel ERROR",
                    "",
                ]
            ),
        )
        return config


def service_account() -> str:
    """The system account every sshd-path user logs in as: the one the agent runs as."""
    return pwd.getpwuid(os.geteuid()).pw_name


def _free_port(host: str) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    os.chmod(path, 0o600)
