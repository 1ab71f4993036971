"""Shared fixtures: a real agent server on a free loopback port, clients for it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))  # tests' own helpers (rawnc)

from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig
from support import TEST_PROFILE

# Hypothesis' per-example deadline (200 ms) measures the machine's load, not our code: a CI runner
# or a shared 2-core machine misses it now and then. Examples stay bounded by max_examples.
settings.register_profile("an-agent", deadline=None)
settings.load_profile("an-agent")


@pytest.fixture
def profile() -> AgentProfile:
    return AgentProfile.from_dict(TEST_PROFILE)


@pytest.fixture
def agent_server(tmp_path: Path, profile: AgentProfile) -> Iterator[AgentServer]:
    server = AgentServer(ServerConfig(state_dir=tmp_path / "state", port=0, profile=profile))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def nc(agent_server: AgentServer):  # type: ignore[no-untyped-def]
    """A stock ncclient manager on the agent (the third-party client view)."""
    from outsider import netconf

    m = netconf(agent_server.port)
    m.raise_mode = 0  # RaiseMode.NONE: tests look at rpc-errors themselves
    try:
        yield m
    finally:
        if m.connected:
            m.close_session()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A state directory on its own 8 MiB tmpfs (root only: the test is skipped otherwise), to fill with
    `an_agent.lab.chaos.fill`; emptied and unmounted at the end."""
    import os

    from an_agent.lab.chaos import free, mount_tmpfs, unmount

    if os.geteuid() != 0:
        pytest.skip("mounts a small tmpfs (needs root)")
    directory = tmp_path / "state"
    mount_tmpfs(directory, 8)
    try:
        yield directory
    finally:
        free(directory)
        assert unmount(directory) is None
