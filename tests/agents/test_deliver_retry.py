"""A report that must not be lost (an incident) is sent again while the peer refuses for a passing reason:
here its state directory is full, then freed (found by lab soak: the IP agent's only report of a link cut
was refused once, its alarm monitor died with it, and the loop never closed)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from an_agent.agents import payloads
from an_agent.agents.conversation import DELIVERY_RETRY_S, Outcome, PeerConversation
from an_agent.agents.engineer import ENGINEER, FieldEngineer
from an_agent.agents.environment import AgentEnvironment
from an_agent.agents.peers import Peers
from an_agent.lab.chaos import fill, free
from an_agent.lab.journal import Journal
from an_agent.lab.kernel import SimKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.spec import NetworkSpec
from an_agent.model import AgentProfile, TaskStatus
from an_agent.nc.agent_client import AgentClient
from an_agent.server import AgentServer, ServerConfig

START = 1_000_000.0


class Reporter(PeerConversation):
    def __init__(self, env: AgentEnvironment, peers: Peers) -> None:
        self.env, self.peers, self._lock, self._ids = env, peers, threading.Lock(), {}


def talking_to(server: AgentServer, me: str) -> tuple[SimKernel, Journal, Peers, AgentEnvironment]:
    """A clock, journal, NETCONF client (named ``me``) of ``server`` (as agent ``peer``) and environment."""
    kernel = SimKernel(START, stall_timeout=60.0, peers_elsewhere=True)  # the peer is a server of its own
    journal = Journal(kernel.now)
    peers = Peers(
        me, kernel, lambda name: ("127.0.0.1", server.port), ["peer"], journal.record, credentials=("admin", "admin")
    )
    env = AgentEnvironment(
        name=me, role="ip-fault", regions=(), scheduler=kernel,
        network=SimNetwork(NetworkSpec((), (), (), ()), 0, kernel.now, kernel.call_at), journal=journal, directory=(),
    )  # fmt: skip
    return kernel, journal, peers, env


def played(kernel: SimKernel, peers: Peers, work: Callable[[], object]) -> object:
    """``work()`` run as an activity of ``kernel`` until it ends: what it returned or raised."""
    outcome: dict[str, object] = {}
    ended = threading.Event()

    def activity() -> None:
        try:
            outcome["done"] = work()
        except Exception as exc:  # shown by the caller's assertions
            outcome["done"] = exc
        ended.set()

    kernel.spawn("work", activity)
    # forever: the peer's work runs on its own (wall) clock, which this kernel does not see
    clock = threading.Thread(target=kernel.run, kwargs={"forever": True}, daemon=True)
    clock.start()
    try:
        assert ended.wait(60.0)
    finally:
        peers.close()
        kernel.close()
        clock.join(10.0)
    return outcome["done"]


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
    kernel, journal, peers, env = talking_to(server, "me")
    reporter = Reporter(env, peers)
    value = payloads.envelope(
        "fault_diagnosis_v1", {"fault_type": "transmission_failure", "domain": "ip_transport", "severity": "critical"}
    )
    fill(state)
    kernel.call_at(START + 1.5 * DELIVERY_RETRY_S, "space freed", lambda: free(state))
    done = played(
        kernel,
        peers,
        lambda: reporter.deliver(
            "peer", "incident.LINK-1", "LINK-1", "Report incident: fault diagnosis of LINK-1", value
        ),
    )
    assert not isinstance(done, Exception), done
    assert isinstance(done, Outcome) and done.task is not None and done.task.status == TaskStatus.FINISHED
    notes = [(n.kind, n.text) for n in journal.notes()]
    retries = [text for kind, text in notes if kind == "retry"]
    assert len(retries) == 2 and "resource-denied" in retries[0] and "no space left" in retries[0]
    assert not [n for n in notes if n[0] == "report_failed"]


def test_a_question_refused_by_a_full_copilot_is_asked_again_once_space_returns(
    full_peer: tuple[AgentServer, Path],
) -> None:
    """The field engineer's question to a copilot whose state directory is full is asked again once space
    returns (found by lab soak: a copilot restarted on a full disk refused the first question of the ticket it
    resumed, the engineer's refusal failed the ticket, and the fibre was never spliced)."""
    server, state = full_peer
    kernel, journal, peers, env = talking_to(server, ENGINEER)
    engineer = FieldEngineer(env, peers, "peer")
    fill(state)
    kernel.call_at(START + 1.5 * DELIVERY_RETRY_S, "space freed", lambda: free(state))
    reply = played(kernel, peers, lambda: engineer.ask("TT-000042", "What do we know about LINK-A4?"))
    assert not isinstance(reply, Exception), reply
    retries = [n.text for n in journal.notes() if n.kind == "retry"]
    assert len(retries) == 2 and "resource-denied" in retries[0] and "no space left" in retries[0], retries
    assert len(engineer.dialogue) == 1, engineer.dialogue  # one question, answered once
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as client:
        assert client.get_task("fme.TT-000042.q3").status == TaskStatus.FINISHED  # asked three times, taken once
