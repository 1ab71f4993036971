"""A lab's agents as processes of their own (the default): started, watched, killed, restarted, stopped.

The lab process serves its clock, network and journal on the control channel (`an_agent.lab.control`,
handlers of `an_agent.lab.conductor`), on 127.0.0.1 and a free port, authenticated by a secret in
``STATE/control.secret`` (0600). Each agent is ``an-agent serve --topology ... --lab-control ...``
(`an_agent.lab.processes`) with its own state directory ``STATE/agents/NAME`` (databases, host key,
``agent.log``) and port, forked from the lab's template process (`an_agent.lab.zygote`, its output in
``STATE/zygote.log``; started again if it died) and, with ``--netns``, moved into its namespace; with
a command ``prefix`` other than a namespace's, each agent is a new interpreter behind it instead.
`start` returns once every agent serves, waiting as long as agents keep arriving (`an_agent.lab.bringup`).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from an_agent.agents.environment import RoleName
from an_agent.errors import ConfigError
from an_agent.lab.bringup import PROGRESS_FILE, wait_serving
from an_agent.lab.conductor import Conductor
from an_agent.lab.control import ControlServer, create_certificate, create_secret, read_secret
from an_agent.lab.owner import FleetOwner
from an_agent.lab.placement import lab_host
from an_agent.lab.processes import LOG_FILE, STOP_GRACE, AgentLaunch, AgentProcess, serve_args, start_agent, stop_agents
from an_agent.lab.spec import AgentSpec
from an_agent.lab.zygote import Zygote

ZYGOTE_LOG = "zygote.log"
HOST_KEY_FILE = "ssh_host_rsa_key"
"""The lab's SSH host key in its state directory (`an_agent.lab.agent.lab_host_key`), copied to each agent."""

log = logging.getLogger(__name__)

SECRET_FILE = "control.secret"
NETNS_PORT = 8830
"""Every agent's NETCONF port in a ``netns`` lab (unless the topology gives one)."""


@dataclass
class AgentHandle:
    """An agent of the lab running in its own process."""

    spec: AgentSpec
    process: AgentProcess
    port: int
    a2a_port: int | None

    @property
    def pid(self) -> int:
        return self.process.pid


class ProcessFleet:
    """Starts the agents of ``lab`` as processes and keeps the control channel they talk to.

    ``env``: the environment of each agent's command (`start_agent`); what the command runs behind, the
    address it listens on and where the control channel is come from the lab (``prefix_of``, ``host_of``,
    ``control_host``: a network namespace each with ``--netns``).
    """

    def __init__(self, lab: FleetOwner, env: Mapping[str, str] | None = None) -> None:
        self.lab = lab
        self.env = env
        self.agents: dict[str, AgentHandle] = {}
        self._processes: dict[str, AgentProcess] = {}
        self._server: ControlServer | None = None
        self.conductor: Conductor | None = None
        self._zygote: Zygote | None = None
        self._started: dict[str, float] = {}
        """When each agent's current process was started (monotonic), for `an_agent.lab.bringup`."""

    def prepare(self) -> Zygote:
        """Start the lab's template process unless it runs (it loads while the lab makes its network and
        certificates; `start` forks the agents from it). Needs the lab's host key in place."""
        if self._zygote is None or not self._zygote.alive():
            if self._zygote is not None:
                log.warning("the lab's template process is gone: starting a new one")
                self._zygote.close()
            self._zygote = Zygote.start(
                self.lab.topology.source, self.lab.state_dir / ZYGOTE_LOG, self.env, self.lab.state_dir / HOST_KEY_FILE
            )
        return self._zygote

    def start(self, logins: dict[str, object]) -> None:
        lab = self.lab
        topology_file = lab.topology.source
        if topology_file is None:
            raise ConfigError("a lab of agent processes needs its topology in a file (each agent loads it)")
        secret_file = lab.secret_file or lab.state_dir / SECRET_FILE
        secret = read_secret(secret_file) if lab.secret_file and secret_file.exists() else create_secret(secret_file)
        lab.kernel.publish_clock(lab.state_dir)  # before any agent says hello: `hello` gives them the file
        self.conductor = Conductor(
            lab.kernel,
            lab.network,
            lab.journal,
            lab.address_of,
            lab.a2a_url_of,
            logins,
            on_ready=lab.serving,
            hello_files=lab.hello_files,
        )
        first = lab_host(lab.topology)  # a lab over several hosts: its channel where the other hosts reach it
        where = (first.address, first.control_port) if first is not None else (lab.control_host, 0)
        tls = create_certificate(lab.state_dir, where[0])  # a new one each run; agents pin it by the secret
        self._server = ControlServer(secret, self.conductor.handlers(), tls, host=where[0], port=where[1]).start()
        control = self._server.address
        # The directory agent first, on its own: the others register with it as they start.
        first_wave = [a for a in lab.local_agents if a.role == RoleName.DIRECTORY]
        for wave in (first_wave, [a for a in lab.local_agents if a not in first_wave]):
            if not wave:
                continue
            self._launch(wave, topology_file, control, secret_file)
            ready = self._wait_serving([a.name for a in wave])
            for spec in wave:
                info = ready[spec.name]
                self._serving(spec, info["port"], info.get("a2a_port"))

    def _launch(self, specs: list[AgentSpec], topology_file: Path, control: tuple[str, int], secret_file: Path) -> None:
        lab = self.lab
        for spec in specs:
            launch = AgentLaunch(
                name=spec.name,
                topology_file=topology_file,
                control=control,
                secret_file=secret_file,
                state_dir=lab.agent_dir(spec.name),
                host=lab.host_of(spec.name),
                # alone in its namespace, every agent can have NETCONF's usual port
                port=spec.port if lab.use_topology_ports and spec.port else NETNS_PORT if lab.netns else 0,
                a2a_port=None if spec.a2a_port is None else spec.a2a_port if lab.use_topology_ports else 0,
                otlp=lab.otlp,
                metrics=lab.netns_of(spec.name) is None,
            )
            self._start(launch)

    def _start(self, launch: AgentLaunch, append_log: bool = False) -> None:
        """Start agent ``launch.name``: forked from the template (module docstring), else exec'd behind its prefix."""
        lab, name = self.lab, launch.name
        netns = lab.netns_of(name)
        prefix = lab.prefix_of(name)
        self._started[name] = time.monotonic()
        if netns is None and prefix:
            self._processes[name] = start_agent(launch, prefix, self.env, append_log=append_log)
            return
        zygote = self.prepare()
        log_path = launch.state_dir / LOG_FILE
        process = zygote.spawn(
            serve_args(launch),
            launch.state_dir,
            log_path,
            self.env if self.env is not None else os.environ,
            netns=netns,
            append_log=append_log,
            title=name,
        )
        self._processes[name] = AgentProcess(launch, process, log_path)

    def _wait_serving(self, names: list[str]) -> dict[str, dict[str, Any]]:
        assert self.conductor is not None
        started = {name: self._started[name] for name in names}
        return wait_serving(self.conductor, started, self._dead, self.lab.state_dir / PROGRESS_FILE)

    def _serving(self, spec: AgentSpec, port: int, a2a_port: int | None) -> None:
        self.agents[spec.name] = AgentHandle(spec, self._processes[spec.name], port, a2a_port)
        self.lab.serving(spec.name, port, a2a_port)

    def _dead(self) -> str | None:
        for name, process in self._processes.items():
            if not process.alive():
                return (
                    f"agent {name} exited with code {process.process.returncode} before serving:\n" + process.log_tail()
                )
        return None

    def kill_and_restart(self, name: str) -> tuple[int, int]:
        """SIGKILL agent ``name``'s process, forget what the lab counted for it, start it again.

        The new process has the same state directory, port and A2A port (peers find it where it was);
        returns once it serves, with the old and the new pid.
        """
        old = self._processes[name]
        conductor = self.conductor
        assert conductor is not None
        old.kill()
        conductor.forget_agent(name)
        handle = self.agents[name]
        a2a_port = handle.a2a_port if old.launch.a2a_port is not None else None
        launch = replace(old.launch, port=handle.port, a2a_port=a2a_port)
        self._start(launch, append_log=True)
        info = self._wait_serving([name])[name]
        self._serving(handle.spec, info["port"], info.get("a2a_port"))
        return old.pid, self._processes[name].pid

    def unfinished_tasks(self, name: str) -> list[str]:
        from an_agent.nc.agent_client import AgentClient

        admin = self.lab.admin
        with AgentClient.connect(
            self.lab.host_of(name), self.agents[name].port, username=admin[0], password=admin[1]
        ) as client:
            return sorted(t.task_id for t in client.list_tasks() if t.status is None or not t.status.terminal)

    def drop_control(self, name: str) -> int:
        """Cut agent ``name``'s connections to the lab's control channel (a soak's chaos); how many were cut."""
        from an_agent.lab.chaos import control_peers

        assert self._server is not None
        peers = control_peers(self._processes[name].pid, self._server.address[1])
        return self._server.drop(peers)

    def alive(self, name: str) -> bool:
        """Agent ``name``'s process is running (it may be stopped by SIGSTOP)."""
        return self._processes[name].alive()

    def exit_report(self, name: str) -> str:
        """How agent ``name``'s process ended: its exit code and the tail of its log."""
        process = self._processes[name]
        return f"agent {name} (pid {process.pid}) exited with code {process.process.returncode}:\n{process.log_tail()}"

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self._processes.items()}

    def stop(self) -> list[str]:
        """Stop every agent process (their clocks were closed by the lab's kernel), then the channel; returns
        those killed after the stop grace (`an_agent.lab.processes.STOP_GRACE`), as ``"NAME (pid N) killed
        ..."`` lines."""
        # The directory after the others: they deregister as they stop.
        last = [p for name, p in self._processes.items() if self.lab.topology.agent(name).role == RoleName.DIRECTORY]
        killed = stop_agents([p for p in self._processes.values() if p not in last]) + stop_agents(last)
        if self._zygote is not None:
            self._zygote.close()
        if self._server is not None:
            self._server.stop()
        if killed:
            log.warning("agents killed after the stop grace: %s", ", ".join(killed))
        return [f"{agent} killed after the {STOP_GRACE:g} s stop grace" for agent in killed]

    def leftovers(self) -> list[str]:
        """Agent processes still running (none after a clean `stop`)."""
        left = [f"process of {name} (pid {p.pid})" for name, p in self._processes.items() if p.alive()]
        if self._zygote is not None and self._zygote.alive():
            left.append(f"the lab's template process (pid {self._zygote.pid})")
        return left
