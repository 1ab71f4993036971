"""The reference NETCONF server: yuma123 netconfd behind its own sshd, set up and torn down here.

`NetconfdReference` is a context manager. On entry it

1. makes a private temporary directory (`/tmp/an-bench-*`) holding everything:
   the rewritten YANG modules (bench/reference_yang.py says what changes and
   why), the startup configuration, an sshd host key, a client key pair and
   its authorized_keys file, sshd_config, the netconfd socket and the logs;
2. starts `netconfd --port=P --ncxserver-sockname=<socket> --modpath=...
   --module=... --startup=<file>` and waits for its socket;
3. starts `/usr/sbin/sshd -D -f <sshd_config>` listening on 127.0.0.1:P (a free
   non-default port) with `Subsystem netconf /usr/sbin/netconf-subsystem
   --ncxserver-sockname=P@<socket>` (netconf-subsystem needs the `P@` prefix
   to tell netconfd which port the session came in on);
4. waits until a NETCONF hello succeeds.
On exit (also after an error) it kills every process of the stack, sshd's
per-connection children included, and removes the directory.

Which account: sshd and netconfd run unprivileged, as the account the
client logs in as, authenticated by the generated key (sshd can only
authenticate its own user when it is not root, which is all we need, and
needs no privilege-separation directory, PAM, or change to /etc/ssh):
- run as root (CI containers), the harness uses a dedicated system account
  `an-bench` (shell /bin/sh, which reads no rc file for the subsystem
  command; home /var/lib/an-bench, where netconfd insists on creating its
  ~/.yuma work directory) and creates it with `useradd` if it is missing;
- run as any other user, it uses that user; sshd then starts the subsystem
  through that user's login shell, so keep its rc files light.

netconfd options, chosen for its best showing: no access control
(`--access-control=off`, as an-agent has none), no notification rate limit
(`--max-burst=0`, the default 10/s would throttle the notification benchmark),
no pretty-printing (`--indent=0`), errors-only logging, edits on running.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bench import procs
from bench.reference_yang import DEFAULT_MAKE_CONFIG, YUMA_MODULES, derive_reference_modules
from bench.wire import BASE_NS, BenchError, Credentials, Session

BENCH_USER = "an-bench"
BENCH_HOME = Path("/var/lib/an-bench")
NETCONFD = "/usr/sbin/netconfd"
SSHD = "/usr/sbin/sshd"
NETCONF_SUBSYSTEM = "/usr/sbin/netconf-subsystem"


@dataclass(frozen=True)
class Account:
    """The unprivileged account that runs sshd and netconfd and that the client logs in as."""

    name: str
    uid: int
    gid: int
    home: Path


def bench_account() -> Account:
    """The account to use: `an-bench` (created if needed) when root, else the current user."""
    if os.geteuid() != 0:
        entry = pwd.getpwuid(os.getuid())
        return Account(entry.pw_name, entry.pw_uid, entry.pw_gid, Path(entry.pw_dir))
    try:
        entry = pwd.getpwnam(BENCH_USER)
    except KeyError:
        _run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--shell",
                "/bin/sh",
                "--home-dir",
                str(BENCH_HOME),
                "--no-create-home",
                "--comment",
                "an-agent benchmark reference (netconfd)",
                BENCH_USER,
            ],
            "create the benchmark account",
        )
        entry = pwd.getpwnam(BENCH_USER)
    home = Path(entry.pw_dir)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    if home.stat().st_uid != entry.pw_uid:  # e.g. left by an account of the same name that was deleted
        for path in [home, *home.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid, follow_symlinks=False)
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid, home)


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free a moment ago on `host`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class NetconfdReference:
    """yuma123 netconfd behind a private sshd on 127.0.0.1, serving `config_xml`.

    `modules_dir` holds the shipped YANG modules; `modules` names the ones to
    load (their imports follow); `config_xml` is the XML of the top-level data
    nodes (e.g. `<agent xmlns=...>...</agent><tasks xmlns=...>...</tasks>`)
    written as netconfd's startup configuration; `make_config` lists the
    `module:container` nodes that are config false in the module and are
    made config true in the reference copy (see bench/reference_yang.py).
    After entering: `host`, `port`, `credentials`, `netconfd_pid`,
    `sshd_pid`, and `pids()` for the whole server-side process tree.
    """

    def __init__(
        self,
        modules_dir: Path,
        modules: Sequence[str],
        config_xml: str,
        *,
        make_config: Sequence[str] = DEFAULT_MAKE_CONFIG,
        host: str = "127.0.0.1",
        port: int | None = None,
        start_timeout: float = 30.0,
        log_level: str = "error",
    ) -> None:
        self.modules_dir = modules_dir
        self.modules = list(modules)
        self.config_xml = config_xml
        self.make_config = list(make_config)
        self.host = host
        self.port = port or 0
        self.start_timeout = start_timeout
        self.log_level = log_level  # netconfd --log-level; "debug" to see why a session misbehaves
        self.workdir: Path | None = None
        self.account: Account | None = None
        self._netconfd: subprocess.Popen[bytes] | None = None
        self._sshd: subprocess.Popen[bytes] | None = None

    # -- public -----------------------------------------------------------

    @property
    def credentials(self) -> Credentials:
        """How the client logs in (the account and the generated private key)."""
        if self.account is None or self.workdir is None:
            raise BenchError("the reference server is not running")
        return Credentials(self.account.name, key_file=self.workdir / "client_key")

    @property
    def netconfd_pid(self) -> int:
        if self._netconfd is None:
            raise BenchError("the reference server is not running")
        return self._netconfd.pid

    @property
    def sshd_pid(self) -> int:
        if self._sshd is None:
            raise BenchError("the reference server is not running")
        return self._sshd.pid

    def pids(self) -> list[int]:
        """netconfd, the sshd listener, and their live children (per-session sshd, netconf-subsystem)."""
        return procs.tree([self.netconfd_pid, self.sshd_pid])

    def connect(self, timeout: float = 30.0) -> Session:
        """A new NETCONF session to the reference server."""
        return Session.connect(self.host, self.port, self.credentials, timeout=timeout)

    def start(self) -> NetconfdReference:
        """Set everything up and wait until netconfd answers a hello; tears down on failure."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Kill every process of the stack and remove the temporary directory (idempotent)."""
        roots = [p.pid for p in (self._sshd, self._netconfd) if p is not None]
        if roots:
            procs.terminate(procs.tree(roots))
        for proc in (self._sshd, self._netconfd):
            if proc is not None:
                proc.wait()
        self._sshd = self._netconfd = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> NetconfdReference:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- set-up -----------------------------------------------------------

    def _start(self) -> None:
        for tool in (NETCONFD, SSHD, NETCONF_SUBSYSTEM):
            if not Path(tool).exists():
                raise BenchError(f"{tool} is missing: install the Debian packages netconfd and openssh-server")
        self.account = bench_account()
        self.workdir = work = Path(tempfile.mkdtemp(prefix="an-bench-"))
        if not self.port:
            self.port = free_port(self.host)
        modpath = work / "modules"
        derive_reference_modules(self.modules_dir, self.modules, modpath, self.make_config)
        (work / "startup.xml").write_text(f'<config xmlns="{BASE_NS}">{self.config_xml}</config>\n')
        self._write_keys(work)
        self._write_sshd_config(work)
        _chown_tree(work, self.account)
        socket_path = work / "ncxserver.sock"
        self._netconfd = self._spawn(
            [
                NETCONFD,
                f"--port={self.port}",
                f"--ncxserver-sockname={socket_path}",
                f"--modpath={modpath}:{YUMA_MODULES}",
                *(f"--module={name}" for name in self.modules),
                f"--startup={work / 'startup.xml'}",
                "--access-control=off",
                "--target=running",
                "--max-burst=0",
                "--indent=0",
                "--idle-timeout=0",
                f"--log-level={self.log_level}",
                f"--log={work / 'netconfd.log'}",
            ],
            work / "netconfd.out",
        )
        self._wait(lambda: socket_path.exists(), "netconfd to open its socket", self._netconfd, "netconfd.log")
        self._sshd = self._spawn([SSHD, "-D", "-e", "-f", str(work / "sshd_config")], work / "sshd.log")
        self._wait(self._answers, "netconfd to answer a hello through sshd", self._sshd, "sshd.log")

    def _write_keys(self, work: Path) -> None:
        for name in ("host_key", "client_key"):
            key = Ed25519PrivateKey.generate()
            private = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
            )
            public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
            (work / name).write_bytes(private)
            (work / name).chmod(0o600)
            (work / f"{name}.pub").write_bytes(public + b"\n")
        shutil.copy(work / "client_key.pub", work / "authorized_keys")

    def _write_sshd_config(self, work: Path) -> None:
        # StrictModes no: the key files live in /tmp, not in the account's home.
        lines = [
            f"ListenAddress {self.host}",
            f"Port {self.port}",
            f"HostKey {work / 'host_key'}",
            f"PidFile {work / 'sshd.pid'}",
            f"AuthorizedKeysFile {work / 'authorized_keys'}",
            "AuthenticationMethods publickey",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "PermitTTY no",
            "X11Forwarding no",
            "AllowTcpForwarding no",
            "AllowAgentForwarding no",
            "PrintMotd no",
            "PrintLastLog no",
            "UseDNS no",
            "LogLevel ERROR",
            "MaxStartups 200",
            "LoginGraceTime 60",
            f"Subsystem netconf {NETCONF_SUBSYSTEM} --ncxserver-sockname={self.port}@{work / 'ncxserver.sock'}",
        ]
        (work / "sshd_config").write_text("\n".join(lines) + "\n")

    def _spawn(self, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        assert self.account is not None
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(self.account.home), "LANG": "C"}
        drop = os.geteuid() == 0
        with log.open("wb") as out:
            return subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(self.workdir),
                start_new_session=True,
                user=self.account.uid if drop else None,
                group=self.account.gid if drop else None,
                extra_groups=[] if drop else None,
            )

    def _answers(self) -> bool:
        try:
            self.connect(timeout=5.0).close()
        except BenchError:
            return False
        return True

    def _wait(self, ready: Callable[[], bool], what: str, proc: subprocess.Popen[bytes], log: str) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise BenchError(f"gave up waiting for {what}: it exited ({proc.returncode}). {self._tail(log)}")
            if ready():
                return
            time.sleep(0.05)
        raise BenchError(f"gave up waiting for {what} after {self.start_timeout} s. {self._tail(log)}")

    def _tail(self, name: str) -> str:
        assert self.workdir is not None
        texts = []
        for path in (self.workdir / name, self.workdir / "netconfd.out"):
            if path.exists():
                texts.append(f"{path.name}: " + " | ".join(path.read_text(errors="replace").split("\n")[-12:]))
        return " ".join(texts)


def _chown_tree(root: Path, account: Account) -> None:
    if os.geteuid() != 0:
        return
    for path in [root, *root.rglob("*")]:
        os.chown(path, account.uid, account.gid)


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchError(f"failed to {what}: {' '.join(argv)}: {done.stderr.strip() or done.stdout.strip()}")
