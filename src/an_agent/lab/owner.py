"""`FleetOwner`: what the two ways of running a lab's agents (`an_agent.lab.inprocess`, `an_agent.lab.fleet`)
need from the lab that owns them (`an_agent.lab.runner.Lab` implements it)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from an_agent.lab.journal import Journal
from an_agent.lab.lockstep import LabKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.spec import AgentSpec, Topology


class FleetOwner(Protocol):
    topology: Topology
    state_dir: Path
    use_topology_ports: bool
    kernel: LabKernel
    network: SimNetwork
    journal: Journal
    admin: tuple[str, str]
    local_agents: tuple[AgentSpec, ...]
    """The agents this lab process starts (all, or its host's)."""
    secret_file: Path | None
    """The lab's own login on its agents."""
    netns: bool
    a2a_trust: Path | None
    """The certificates A2A peers are verified against (`an_agent.lab.certs`); None: plain HTTP."""
    otlp: str | None
    """The OpenTelemetry collector every agent process sends its spans to (``--otlp``); None: none."""

    @property
    def control_host(self) -> str: ...

    def host_of(self, name: str) -> str: ...

    def prefix_of(self, name: str) -> list[str]: ...

    def netns_of(self, name: str) -> str | None:
        """The network namespace agent ``name`` runs in (None: this host's network)."""
        ...

    def login_of(self, name: str) -> tuple[str, str]: ...

    def address_of(self, name: str) -> tuple[str, int] | None: ...

    def a2a_url_of(self, name: str) -> str | None: ...

    def agent_dir(self, name: str) -> Path: ...

    def hello_files(self, name: str) -> dict[str, str]: ...

    def serving(self, name: str, port: int, a2a_port: int | None) -> None:
        """Agent ``name`` serves on ``port`` (and A2A on ``a2a_port``)."""
        ...
