"""`an-agent conformance` against every shipped role, over both faces, with --allow-writes.

One agent per role (the role's behaviour on the quick-tour network, NETCONF and A2A faces on free
loopback ports), started and stopped in turn: every check must pass, and what the run created must
be gone afterwards (the tasks, data-params and context records <get-config> shows are the same
before and after). Measured: a run takes 0.3-1.8 s per role (median 0.4 s); the file 28-47 s on a loaded
2-core machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from an_agent.agents.environment import Layer, RoleName
from an_agent.agents.roles import ROLES
from an_agent.conformance import Options, Outcome, Target, catalogue, run
from an_agent.lab.agent import assemble_agent
from an_agent.lab.spec import AgentSpec
from an_agent.lab.tour import tour_topology
from an_agent.model._xml import root
from an_agent.nc.client import NetconfClient
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder


@pytest.fixture(params=sorted(ROLES), ids=str)
def role_agent(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[AgentServer]:
    role: RoleName = request.param
    spec = AgentSpec(
        name=str(role),
        role=role,
        regions=("city-north",),
        schemas="validate",
        layer=Layer.SERVICE if role == RoleName.FME_COPILOT else None,
    )
    topology = replace(tour_topology(), agents=(spec,), talks_to={})
    agent = assemble_agent(topology, spec.name)
    agent.start_clock()
    config = ServerConfig(
        tmp_path / "state",
        port=0,
        profile=agent.profile,
        behaviour=agent.behaviour,
        schemas="validate",
        a2a_port=0,
        # The A2A face warms its text mapping up in a thread; with the real model that is torch, and a test
        # process that ends while torch loads aborts (std::terminate). The kit never sends text.
        embedder=FakeEmbedder(),
    )
    with AgentServer(config) as server:
        yield server


def _stored(server: AgentServer) -> dict[str, list[str]]:
    """The ids of the tasks, data-params and context records of running (an empty container is none)."""
    irtf = "{urn:ietf:params:xml:ns:yang:irtf-agent}"
    with NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin") as nc:
        return {
            top: sorted(e.text or "" for e in nc.get_config(filter=root(top)).iter(irtf + key))
            for top, key in (("tasks", "task-id"), ("data-params", "id"), ("context", "id"))
        }


def test_every_check_passes_against_the_role_and_nothing_is_left_behind(role_agent: AgentServer) -> None:
    before = _stored(role_agent)
    assert role_agent.a2a is not None
    target = Target(netconf=("127.0.0.1", role_agent.port), a2a=role_agent.a2a.url, user="admin", password="admin")
    report = run(target, Options(allow_writes=True, timeout=20))

    assert {f.check.id for f in report.findings} == {c.id for c in catalogue()}  # every section ran, both faces
    not_passed = [
        f"{f.check.id} [{f.check.level}] {f.outcome}: {f.reason}"
        for f in report.findings
        if f.outcome is not Outcome.PASS
    ]
    assert not not_passed, "\n".join(not_passed)
    assert not report.must_failed
    assert _stored(role_agent) == before
