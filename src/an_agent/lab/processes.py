"""Agent processes of a lab: the command line of one agent, starting it, killing it, stopping them all.

An agent of a lab runs ``an-agent serve --topology T --agent NAME --lab-control
HOST:PORT --lab-secret-file F --state-dir DIR --host H --port P`` (`serve_args`), its output in
``DIR/agent.log``: forked from the lab's template process (`an_agent.lab.zygote`, the default) or, with
`start_agent`, as a new interpreter (`agent_argv`) behind an optional ``prefix`` (e.g. ``ip netns exec
NS`` to put the agent in a network namespace) with an optional environment. Nothing here knows the lab's
protocol: `an_agent.lab.conductor` and `an_agent.lab.remote` speak it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

LOG_FILE = "agent.log"
STOP_GRACE = 20.0
"""Real seconds an agent has to stop after SIGTERM before it is killed."""


@dataclass(frozen=True)
class AgentLaunch:
    """What one agent process needs to be started (and started again after a kill)."""

    name: str
    topology_file: Path
    control: tuple[str, int]
    secret_file: Path
    state_dir: Path
    host: str
    port: int
    """0 for a free port (the agent reports the one it got)."""
    a2a_port: int | None = None
    """The A2A face's port (0 a free one), None without one."""
    schemas: str | None = None
    otlp: str | None = None
    """The OpenTelemetry collector the agent sends its spans to (``--otlp``), None: none."""
    metrics: bool = True
    """Serve Prometheus metrics on the agent's loopback; off in a namespace, where no scraper reaches that
    loopback (such agents are left out of the lab's targets) and the agent listens on its lab address only."""


def agent_argv(launch: AgentLaunch) -> list[str]:
    """The command line of one lab agent (module docstring); secrets only by file, never on it."""
    return [sys.executable, "-m", "an_agent.cli", *serve_args(launch)]


def serve_args(launch: AgentLaunch) -> list[str]:
    """The ``an-agent`` arguments of one lab agent (``serve ...``), as exec'd or forked (`an_agent.lab.zygote`)."""
    argv = [
        "serve",
        "--topology",
        str(launch.topology_file.resolve()),
        "--agent",
        launch.name,
        "--lab-control",
        f"{launch.control[0]}:{launch.control[1]}",
        "--lab-secret-file",
        str(launch.secret_file.resolve()),
        "--state-dir",
        str(launch.state_dir.resolve()),
        "--host",
        launch.host,
        "--port",
        str(launch.port),
    ]
    if launch.a2a_port is not None:
        argv += ["--a2a-port", str(launch.a2a_port)]
    # Scraped by Prometheus (a free port on the agent's loopback, told to the lab when ready) and traced.
    if launch.metrics:
        argv += ["--metrics-port", "0"]
    argv += ["--log-format", "json"]
    if launch.otlp is not None:
        argv += ["--otlp", launch.otlp]
    if launch.schemas is not None:
        argv += ["--schemas", launch.schemas]
    return argv


class ProcessHandle(Protocol):
    """What the lab uses of an agent process: a `subprocess.Popen`, or a `an_agent.lab.zygote.ForkedProcess`."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...

    def send_signal(self, signum: int) -> None: ...


@dataclass
class AgentProcess:
    """A started agent process."""

    launch: AgentLaunch
    process: ProcessHandle
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL, and reap it (a chaos fault: no chance to clean up)."""
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def log_tail(self, lines: int = 15) -> str:
        return log_tail(self.log_path, lines)


def log_tail(path: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a log file, "(no log)" when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def start_agent(
    launch: AgentLaunch, prefix: Sequence[str] = (), env: Mapping[str, str] | None = None, append_log: bool = False
) -> AgentProcess:
    """Start one agent process: ``prefix + agent_argv(launch)``, output to ``state_dir/agent.log`` (0600).

    ``env`` replaces the environment (default: this process's). The state directory is made 0700.
    """
    launch.state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = launch.state_dir / LOG_FILE
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append_log else os.O_TRUNC)
    fd = os.open(log_path, flags, 0o600)
    try:
        process = subprocess.Popen(
            [*prefix, *agent_argv(launch)],
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            close_fds=True,
            env=dict(env) if env is not None else None,
        )
    finally:
        os.close(fd)
    return AgentProcess(launch, process, log_path)


def stop_agents(processes: Sequence[AgentProcess], grace: float = STOP_GRACE) -> list[str]:
    """SIGTERM every process at once, SIGKILL those still running after ``grace``; returns those killed."""
    for agent in processes:
        if agent.alive():
            with contextlib.suppress(ProcessLookupError):
                agent.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    killed = []
    for agent in processes:
        try:
            agent.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            killed.append(f"{agent.launch.name} (pid {agent.pid})")
            agent.kill()
    return killed
