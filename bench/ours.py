"""Our server under test: `an-agent serve` in its own process, so its CPU and memory are its own.

`AgentProcess` runs `an-agent serve --host 127.0.0.1 --port 0 --state-dir D
--user admin:admin [--profile F]` (through `an_agent.cli.main`, the console
script's entry point) with a fresh state directory, waits until it answers
a NETCONF hello, and stops it (SIGTERM, then SIGKILL) on exit. `start_fleet`
brings up many at once for the agents-per-machine benchmark.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from bench import procs
from bench.wire import BenchError, Credentials, Session

USER, PASSWORD = "admin", "admin"
# The CLI is a package without __main__: call its entry point the way the console script does.
_CLI = [sys.executable, "-c", "import sys; from an_agent.cli import main; sys.exit(main())"]
_SERVING = re.compile(r"serving .* on [^ ]+:(\d+)")
_SSHD = re.compile(r"NETCONF by sshd at [^ ]+:(\d+)")


class AgentProcess:
    """One `an-agent serve` process on 127.0.0.1 with its own temporary state directory."""

    def __init__(
        self,
        profile_json: str | None = None,
        start_timeout: float = 60.0,
        sshd: bool = False,
        entry: Sequence[str] = _CLI,
        env: Mapping[str, str] | None = None,
        metrics: bool = False,
    ) -> None:
        """``metrics``: record and serve Prometheus metrics (``--metrics-port 0``), as a scraped agent does.

        ``sshd``: also serve through the agent's own OpenSSH sshd (`sshd_target`), with a generated key.

        ``entry``: the command before ``serve ...`` (default: the console script's entry point; the
        notification floor, `bench.notify_floor`, starts the same server with its own handler).
        ``env``: variables added to the process's environment (e.g. `an_agent.stages`'s).
        """
        self.env = dict(env or {})
        self.entry = list(entry)
        self.host = "127.0.0.1"
        self.port = 0
        self.sshd = sshd
        self.sshd_port = 0
        self.profile_json = profile_json
        self.metrics = metrics
        self.start_timeout = start_timeout
        self._credentials = Credentials(USER, password=PASSWORD)
        self.workdir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0

    def launch(self) -> None:
        """Start the process without waiting for it to answer (see `wait_ready`)."""
        self.workdir = Path(tempfile.mkdtemp(prefix="an-bench-ours-"))
        self.port = 0
        argv = [
            *self.entry,
            "serve",
            "--host",
            self.host,
            "--port",
            "0",
            "--state-dir",
            str(self.workdir / "state"),
            "--user",
            f"{USER}:{PASSWORD}",
            # netconfd serves irtf-agent only: without our an-agent-schema augmentation
            # (templates under /agent) both servers hold the same data, as the comparison needs.
            "--schemas",
            "off",
        ]
        if self.sshd:
            key = self.workdir / "client_key"
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
            users = self.workdir / "users.yaml"
            public = key.with_suffix(".pub").read_text().strip()
            users.write_text(f"users:\n  - name: {USER}\n    groups: [admin]\n    authorized-keys: ['{public}']\n")
            users.chmod(0o600)
            argv += ["--users", str(users), "--sshd-port", "0"]
        if self.metrics:
            argv += ["--metrics-port", "0"]
        if self.profile_json is not None:
            profile = self.workdir / "profile.json"
            profile.write_text(self.profile_json)
            argv += ["--profile", str(profile)]
        self.started_at = time.monotonic()
        with (self.workdir / "serve.log").open("wb") as log:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **self.env},
            )

    def wait_ready(self) -> float:
        """Wait until a NETCONF hello succeeds; returns seconds since `launch`."""
        assert self._proc is not None
        deadline = self.started_at + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BenchError(f"an-agent serve exited ({self._proc.returncode}): {self.log_tail()}")
            if not self.port:
                self.port = self._announced_port()
                if self.sshd:
                    self.sshd_port = self._announced_port(_SSHD)
                if not self.port:
                    time.sleep(0.05)
                    continue
            try:
                self.connect(timeout=5.0).close()
                return time.monotonic() - self.started_at
            except BenchError:
                time.sleep(0.05)
        raise BenchError(f"an-agent serve did not answer within {self.start_timeout} s: {self.log_tail()}")

    def _announced_port(self, pattern: re.Pattern[str] = _SERVING) -> int:
        # `an-agent serve --port 0` picks a free port and says "serving NAME on HOST:PORT" on stderr.
        assert self.workdir is not None
        match = pattern.search((self.workdir / "serve.log").read_text(errors="replace"))
        return int(match.group(1)) if match else 0

    def sshd_target(self) -> SshdPath:
        """The same agent reached through its sshd (key login as this account, mapped to user admin)."""
        if not self.sshd or not self.sshd_port or self.workdir is None:
            raise BenchError("the agent was not started with its sshd")
        # sshd logs in the account the agent runs as (ours); the key says which agent user it is.
        account = pwd.getpwuid(os.geteuid()).pw_name
        return SshdPath(self, self.sshd_port, Credentials(account, key_file=self.workdir / "client_key"))

    def start(self) -> AgentProcess:
        """Launch and wait until ready; stops the process if that fails."""
        try:
            self.launch()
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def connect(self, timeout: float = 30.0) -> Session:
        """A new NETCONF session to this agent."""
        return Session.connect(self.host, self.port, self.credentials, timeout=timeout)

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise BenchError("the agent is not running")
        return self._proc.pid

    @property
    def credentials(self) -> Credentials:
        return self._credentials

    @property
    def running(self) -> bool:
        return self._proc is not None

    def pids(self) -> list[int]:
        """The server process and any children it started."""
        return procs.tree([self.pid])

    def log_tail(self, lines: int = 15) -> str:
        if self.workdir is None or not (self.workdir / "serve.log").exists():
            return ""
        return " | ".join((self.workdir / "serve.log").read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        """Terminate the process and remove its state directory (idempotent)."""
        if self._proc is not None:
            procs.terminate(procs.tree([self._proc.pid]), grace=10.0)
            self._proc.wait()
            self._proc = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> AgentProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class SshdPath:
    """An `AgentProcess` as reached through its sshd: another port and key login, the same processes."""

    def __init__(self, agent: AgentProcess, port: int, credentials: Credentials) -> None:
        self.agent = agent
        self.host = agent.host
        self.port = port
        self._credentials = credentials

    @property
    def credentials(self) -> Credentials:
        return self._credentials

    def connect(self, timeout: float = 30.0) -> Session:
        return Session.connect(self.host, self.port, self._credentials, timeout=timeout)

    def pids(self) -> list[int]:
        """The agent, its sshd and every per-connection sshd process and bridge."""
        return self.agent.pids()


def start_fleet(count: int, profile_json: str | None = None) -> tuple[list[AgentProcess], float]:
    """Launch `count` agents at once; returns them and the seconds until the last one answered.

    On failure every agent launched so far is stopped before the error propagates.
    """
    fleet: list[AgentProcess] = []
    try:
        began = time.monotonic()
        for _ in range(count):
            agent = AgentProcess(profile_json, start_timeout=max(60.0, count * 3.0))
            agent.launch()
            fleet.append(agent)
        for agent in fleet:
            agent.wait_ready()
        return fleet, time.monotonic() - began
    except BaseException:
        stop_all(fleet)
        raise


def stop_all(agents: Sequence[AgentProcess]) -> None:
    """Stop every agent of a fleet: signal them all first, so they shut down in parallel."""
    procs.terminate(procs.tree([a.pid for a in agents if a.running]), grace=20.0)
    for agent in agents:
        agent.stop()
