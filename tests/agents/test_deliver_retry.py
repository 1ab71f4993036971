"""A report that must not be lost (an incident) is sent again while the peer refuses for a passing reason:
here its state directory is full, then freed (found by lab soak: the IP agent's only report of a link cut
was refused once, its alarm monitor died with it, and the loop never closed)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from an_agent.agents import payloads
from an_agent.agents.conversation import DELIVERY_RETRY_S, PeerConversation
from an_agent.agents.environment import AgentEnvironment
from an_agent.agents.peers import Peers
from an_agent.lab.chaos import fill, free
from an_agent.lab.journal import Journal
from an_agent.lab.kernel import SimKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.spec import NetworkSpec
from an_agent.model import AgentProfile, TaskStatus
from an_agent.server import AgentServer, ServerConfig

START = 1_000_000.0


class Reporter(PeerConversation):
    def __init__(self, env: AgentEnvironment, peers: Peers) -> None:
        self.env, self.peers, self._lock, self._ids = env, peers, threading.Lock(), {}


@pytest.fixture
def full_peer(small_disk: Path, profile: AgentProfile) -> Iterator[tuple[AgentServer, Path]]:
    server = AgentServer(ServerConfig(state_dir=small_disk, port=0, profile=profile))
    server.start()
    try:
        yield server, small_disk
    finally:
        server.stop()


def test_an_incident_refused_by_a_full_peer_is_delivered_once_space_returns(
    full_peer: tuple[AgentServer, Path],
) -> None:
    server, state = full_peer
    kernel = SimKernel(START, stall_timeout=60.0, peers_elsewhere=True)  # the peer is a server of its own
    journal = Journal(kernel.now)
    peers = Peers(
        "me", kernel, lambda name: ("127.0.0.1", server.port), ["peer"], journal.record, credentials=("admin", "admin")
    )
    env = AgentEnvironment(
        name="me", role="ip-fault", regions=(), scheduler=kernel,
        network=SimNetwork(NetworkSpec((), (), (), ()), 0, kernel.now, kernel.call_at), journal=journal, directory=(),
    )  # fmt: skip
    reporter = Reporter(env, peers)
    value = payloads.envelope(
        "fault_diagnosis_v1", {"fault_type": "transmission_failure", "domain": "ip_transport", "severity": "critical"}
    )
    fill(state)
    kernel.call_at(START + 1.5 * DELIVERY_RETRY_S, "space freed", lambda: free(state))
    outcome: dict[str, Any] = {}
    ended = threading.Event()

    def report() -> None:
        try:
            outcome["done"] = reporter.deliver(
                "peer", "incident.LINK-1", "LINK-1", "Report incident: fault diagnosis of LINK-1", value
            )
        except Exception as exc:  # shown by the assertion below
            outcome["done"] = exc
        ended.set()

    kernel.spawn("report", report)
    # forever: the peer's work runs on its own (wall) clock, which this kernel does not see
    clock = threading.Thread(target=kernel.run, kwargs={"forever": True}, daemon=True)
    clock.start()
    try:
        assert ended.wait(60.0)
    finally:
        peers.close()
        kernel.close()
        clock.join(10.0)
    done = outcome["done"]
    assert not isinstance(done, Exception), done
    assert done is not None and done.task is not None and done.task.status == TaskStatus.FINISHED
    notes = [(n.kind, n.text) for n in journal.notes()]
    retries = [text for kind, text in notes if kind == "retry"]
    assert len(retries) == 2 and "resource-denied" in retries[0] and "no space left" in retries[0]
    assert not [n for n in notes if n[0] == "report_failed"]
