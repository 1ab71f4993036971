"""A restarted agent's task ids never take those it gave before it died (found by lab soak: the counter
started again at 1, the next incident report took an id its peer had, ``data-exists``, the decision lost)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from an_agent.agents.conversation import PeerConversation
from an_agent.agents.environment import AgentEnvironment
from an_agent.errors import StateFull
from an_agent.lab.chaos import fill, free
from an_agent.lab.incarnation import next_incarnation
from an_agent.lab.journal import Journal
from an_agent.lab.kernel import SimKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.spec import NetworkSpec


class Conversation(PeerConversation):
    def __init__(self, env: AgentEnvironment) -> None:
        self.env, self._lock, self._ids = env, threading.Lock(), {}


def ids_of_a_start(state_dir: Path) -> list[str]:
    kernel = SimKernel(0.0)
    env = AgentEnvironment(
        name="ran-fault", role="ran-fault", regions=(), scheduler=kernel,
        network=SimNetwork(NetworkSpec((), (), (), ()), 0, kernel.now, kernel.call_at), journal=Journal(kernel.now),
        directory=(), incarnation=next_incarnation(state_dir),
    )  # fmt: skip
    talk = Conversation(env)
    return [talk.new_task_id("incident.SITE-01"), talk.new_task_id("incident.SITE-01")]


def test_each_start_on_a_state_directory_gives_new_task_ids(tmp_path: Path) -> None:
    first, second, third = (ids_of_a_start(tmp_path) for _ in range(3))
    assert first == ["ran-fault.incident.SITE-01", "ran-fault.incident.SITE-01.2"]  # a run is as before
    assert second == ["ran-fault.incident.SITE-01.r2", "ran-fault.incident.SITE-01.r2.2"]
    assert third[0] == "ran-fault.incident.SITE-01.r3"
    assert (tmp_path / "incarnation").stat().st_mode & 0o777 == 0o600


def test_starts_during_a_full_disk_are_counted_too(small_disk: Path) -> None:
    """Two starts while the state directory is full count as two (found by lab soak: both read the count the
    full disk had kept from being written, took the same ids, and the second one's were refused)."""
    assert [next_incarnation(small_disk) for _ in range(2)] == [1, 2]
    fill(small_disk)
    try:
        assert [next_incarnation(small_disk) for _ in range(2)] == [3, 4]
    finally:
        free(small_disk)
    assert next_incarnation(small_disk) == 5
    assert not list(small_disk.glob(".incarnation*"))  # no half-written file left behind


def test_a_first_start_on_a_full_disk_is_counted_once_there_is_space(small_disk: Path) -> None:
    """No count written yet and no space to write one: the start is not counted (`StateFull`; ``an-agent
    serve`` waits for space and tries again), so no start can go without its own ids."""
    fill(small_disk)
    try:
        with pytest.raises(StateFull, match="no space left"):
            next_incarnation(small_disk)
        assert not (small_disk / "incarnation").exists()
    finally:
        free(small_disk)
    assert next_incarnation(small_disk) == 1


def test_an_agent_without_a_state_directory_counts_in_memory(tmp_path: Path) -> None:
    """An agent the lab does not run has no state directory there: nothing to count in, and not a full
    disk (found by the clean check: such an agent was refused as if its disk were full)."""
    assert next_incarnation(tmp_path / "no-such-agent") == 1
    assert not (tmp_path / "no-such-agent").exists()
