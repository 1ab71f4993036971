"""What a lab brings up around its agents: outside programs (``services``), and checks of its ``external`` agents.

`start_services` starts each service of the topology in order — argv without a shell, from the topology's
directory, its own process group, output in ``STATE/services/<name>.log`` (0600) — and waits until it is
ready (an HTTP GET of its ``ready.http`` path answers 2xx, else its port accepts connections); a service
that exits or is not ready in time stops the start with a `ConfigError` naming it and quoting its log.
`stop_services` stops them in reverse order: SIGTERM to the group, SIGKILL after a grace.

`check_external` asks an external agent whether it answers — its NETCONF profile (with the login the
topology gives), its A2A agent card — and raises a `ConfigError` naming the agent when it does not;
`register_externals` registers them in the lab's directory agent on their behalf.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from an_agent.agents.command import expand_devices
from an_agent.errors import AnAgentError, ConfigError
from an_agent.lab.spec import AgentSpec, ExternalSpec, ServiceSpec, Topology
from an_agent.model import AgentProfile
from an_agent.nc.directory_client import DirectoryLogin
from an_agent.nc.registration import DirectoryRegistration
from an_agent.runtime.directory import entry_of_profile

STOP_GRACE = 5.0
"""Seconds a service has to stop after SIGTERM before its process group is killed."""


@dataclass
class Service:
    """A started service."""

    spec: ServiceSpec
    process: subprocess.Popen[bytes]
    log_path: Path

    def log_tail(self, lines: int = 8) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def start_services(
    specs: tuple[ServiceSpec, ...], cwd: Path, state_dir: Path, address_of: Callable[[str], tuple[str, int] | None]
) -> list[Service]:
    """Start ``specs`` in order, each ready before the next (module docstring); all stopped on a failure.

    ``{device:NAME}`` in an argv is the address of the lab's element manager NAME (``address_of``).
    """
    started: list[Service] = []
    try:
        for spec in specs:
            try:
                argv = expand_devices(spec.argv, address_of)
            except LookupError as exc:
                raise ConfigError(
                    f"service {spec.name}: {{device:{exc}}}: the lab serves no element manager {exc}"
                ) from None
            started.append(_start(replace(spec, argv=tuple(argv)), cwd, state_dir))
            _wait_ready(started[-1])
    except BaseException:
        stop_services(started)
        raise
    return started


def _start(spec: ServiceSpec, cwd: Path, state_dir: Path) -> Service:
    logs = state_dir / "services"
    logs.mkdir(mode=0o700, parents=True, exist_ok=True)
    log_path = logs / f"{spec.name}.log"
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    argv = list(spec.argv)
    try:
        process = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, close_fds=True, start_new_session=True
        )
    except OSError as exc:
        raise ConfigError(f"service {spec.name}: {argv[0]} cannot be started: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return Service(spec, process, log_path)


def _wait_ready(service: Service) -> None:
    spec = service.spec
    deadline = time.monotonic() + spec.ready_seconds
    what = f"GET http://127.0.0.1:{spec.port}{spec.ready_http}" if spec.ready_http else f"port {spec.port}"
    while True:
        code = service.process.poll()
        if code is not None:
            raise ConfigError(
                f"service {spec.name} exited (status {code}) before it was ready; its log:\n{service.log_tail()}"
            )
        if _ready(spec):
            return
        if time.monotonic() > deadline:
            raise ConfigError(
                f"service {spec.name} is not ready ({what}) after {spec.ready_seconds:g} s; its log:\n"
                f"{service.log_tail()}"
            )
        time.sleep(0.1)


def _ready(spec: ServiceSpec) -> bool:
    if spec.ready_http is None:
        with socket.socket() as probe:
            probe.settimeout(0.5)
            return probe.connect_ex(("127.0.0.1", spec.port)) == 0
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{spec.port}{spec.ready_http}", timeout=1.0) as reply:
            return 200 <= int(reply.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def stop_services(services: list[Service], grace: float = STOP_GRACE) -> list[str]:
    """Stop ``services`` last-started first; returns those that had to be killed."""
    killed = []
    for service in reversed(services):
        process = service.process
        if process.poll() is None:
            _group(process, signal.SIGTERM)
            try:
                process.wait(grace)
            except subprocess.TimeoutExpired:
                killed.append(f"service {service.spec.name} (pid {process.pid})")
                _group(process, signal.SIGKILL)
                process.wait()
        _group(process, signal.SIGKILL)  # what it left behind in its group
    return killed


def _group(process: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def check_external(agent: AgentSpec, timeout: float = 10.0) -> AgentProfile:
    """The profile ``agent`` answers with (its NETCONF profile, else one read from its A2A card); `ConfigError`
    naming ``agent`` when its NETCONF face or A2A face (those given) does not answer."""
    external = agent.external
    assert external is not None
    problems: list[str] = []
    profiles: list[AgentProfile] = []
    if external.netconf is not None:
        _answer(_netconf_profile, external, timeout, problems, profiles)
    if external.a2a is not None:
        _answer(_a2a_profile, external, timeout, problems, profiles)
    if problems:
        raise ConfigError(
            f"external agent {agent.name} does not answer: "
            + "; ".join(problems)
            + " (the lab does not start external agents: start it first, docs/bring-your-own-agent.md)"
        )
    return profiles[0]


def _answer(
    ask: Callable[[ExternalSpec, float], AgentProfile],
    external: ExternalSpec,
    timeout: float,
    problems: list[str],
    profiles: list[AgentProfile],
) -> None:
    try:
        profiles.append(ask(external, timeout))
    except AnAgentError as exc:
        problems.append(str(exc))


def external_login(external: ExternalSpec) -> tuple[str, str]:
    """The login on an external agent: its ``credentials`` file (``user:password``), else admin/admin."""
    return ("admin", "admin") if external.credentials is None else read_login(external.credentials, "credentials")


def read_login(path: Path, label: str) -> tuple[str, str]:
    """``(user, password)`` from a file of one line ``user:password``; `ConfigError` saying what is wrong."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{label} {path}: {exc.strerror}") from None
    user, sep, password = text.partition(":")
    if not sep or not user or not password:
        raise ConfigError(f"{label} {path}: expected one line user:password")
    return (user, password)


def read_token(path: Path, label: str) -> str:
    """A bearer token: the first line of a file; `ConfigError` saying what is wrong."""
    try:
        lines = path.read_text(encoding="utf-8").strip().splitlines()
    except OSError as exc:
        raise ConfigError(f"{label} {path}: {exc.strerror}") from None
    if not lines or not lines[0].strip():
        raise ConfigError(f"{label} {path}: the file holds no token")
    return lines[0].strip()


def _netconf_profile(external: ExternalSpec, timeout: float) -> AgentProfile:
    from an_agent.nc.agent_client import AgentClient

    assert external.netconf is not None
    host, port = external.netconf
    user, password = external_login(external)
    try:
        with AgentClient.connect(host, port, username=user, password=password, timeout=timeout) as client:
            return client.profile()
    except AnAgentError as exc:
        raise ConfigError(f"NETCONF {host}:{port} ({user}): {exc}") from None


def _a2a_profile(external: ExternalSpec, timeout: float) -> AgentProfile:
    from an_agent.a2a.client import A2AAgentClient
    from an_agent.agents.gateway import card_profile

    assert external.a2a is not None
    try:
        with A2AAgentClient.connect(external.a2a, timeout=timeout, trust=external.trust) as client:
            return card_profile(client.card)
    except AnAgentError as exc:
        raise ConfigError(f"A2A {external.a2a}: {exc}") from None


def register_externals(
    profiles: dict[str, AgentProfile], topology: Topology, address_of: Callable[[str], tuple[str, int] | None]
) -> list[DirectoryRegistration]:
    """Register each external agent (by its topology name, with the profile it answered) in the lab's directory
    agent, as the lab's admin; none without a directory. The registrations end with `DirectoryRegistration.stop`."""
    directory = topology.directory_agent
    where = None if directory is None else address_of(directory)
    if where is None:
        return []
    registrations = []
    for name, profile in profiles.items():
        external = topology.agent(name).external
        assert external is not None
        host, port = external.netconf or ("", 0)
        entry = entry_of_profile(replace(profile, name=name), host, port, external.a2a)
        registration = DirectoryRegistration(DirectoryLogin(where[0], where[1], "admin", "admin"), entry)
        registration.start()
        registrations.append(registration)
    return registrations
