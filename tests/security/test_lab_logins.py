"""Lab agents log in to their peers as themselves: ownership and task-sendFrom hold between agents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from an_agent.errors import AuthError, RpcError
from an_agent.lab.runner import Lab
from an_agent.lab.topology import load_topology
from an_agent.model import CommuType, Task
from an_agent.nc.agent_client import AgentClient

TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "cross-domain-fault.yaml"
PROMPT = "## target object\nSITE-07\n## task description\ncheck the site"


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[Lab]:
    running = Lab(load_topology(TOPOLOGY), tmp_path / "lab")
    running.start()
    try:
        yield running
    finally:
        running.stop()


def _client(lab: Lab, target: str, login: tuple[str, str]) -> AgentClient:
    host, port = lab.address_of(target) or ("", 0)
    return AgentClient.connect(host, port, username=login[0], password=login[1], timeout=10)


def test_each_agent_has_its_own_login_and_owns_what_it_assigns(lab: Lab) -> None:
    service, ran, ip = lab.login_of("service-fault"), lab.login_of("ran-fault"), lab.login_of("ip-fault")
    assert len({service[1], ran[1], ip[1]}) == 3  # a password per agent, made for this run
    with _client(lab, "ran-fault", service) as as_service, _client(lab, "ran-fault", ip) as as_ip:
        as_service.assign_task(
            Task("own-1", send_from="service-fault", commu_type=CommuType.TASK_ASSIGN, content=PROMPT)
        )
        # (the agent runs in its own process: its store's owner shows in the denial below)
        with pytest.raises(RpcError) as posing:
            as_ip.assign_task(
                Task("own-2", send_from="service-fault", commu_type=CommuType.TASK_ASSIGN, content=PROMPT)
            )
        assert posing.value.error_tag == "access-denied" and "service-fault" in posing.value.message
        with pytest.raises(RpcError) as foreign:
            as_ip.cancel_task("own-1")
        assert foreign.value.error_tag == "access-denied" and "belongs to 'service-fault'" in foreign.value.message


def test_an_agent_password_does_not_open_another_agents_login(lab: Lab) -> None:
    _, service_password = lab.login_of("service-fault")
    with pytest.raises(AuthError):
        _client(lab, "ran-fault", ("ip-fault", service_password))
