"""NetconfClient and AgentClient against a real AgentServer on a free loopback port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree
from ncclient.transport import session as nc_session
from ncclient.transport import ssh as nc_ssh

from an_agent.agents.default import DefaultBehaviour
from an_agent.errors import RpcError
from an_agent.model import (
    IRTF_AGENT_NS,
    AgentProfile,
    Capability,
    CommuType,
    DataParam,
    NegotiationRequest,
    NegotiationType,
    Skill,
    Task,
    TaskStatus,
    build_prompt,
)
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.client import NetconfClient
from an_agent.server import AgentServer, ServerConfig
from an_agent.yang.context import YangContext

PROFILE = AgentProfile(
    name="IRTF-acme-ran-1.0",
    description="RAN fault agent under test",
    version="1.0.0",
    provider="acme",
    type="fault",
    skills=[Skill("diagnose", "finds why base stations are down", ["outage"], ["text"], ["text"])],
    domain="Wireless",
    capability=Capability(streaming=False, push_notifications=True, negotiate=["feasibility"]),
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    state = tmp_path_factory.mktemp("agent")
    # Tasks stay 'processing' for a while so that cancellation can be observed.
    config = ServerConfig(
        state_dir=state, port=0, users={"admin": "admin"}, profile=PROFILE, behaviour=DefaultBehaviour(0.5)
    )
    with AgentServer(config) as running:
        yield running


@pytest.fixture
def nc(server: AgentServer) -> Iterator[NetconfClient]:
    with NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=10) as client:
        yield client


@pytest.fixture
def agent(nc: NetconfClient) -> AgentClient:
    return AgentClient(nc)


@pytest.fixture(scope="module")
def yang() -> YangContext:
    return YangContext.default()


def prompt(description: str = "diagnose the outage") -> str:
    return build_prompt("gNB-1001", description)


def test_hello_session_and_capabilities(nc: NetconfClient) -> None:
    assert nc.connected
    assert nc.session_id > 0
    caps = nc.server_capabilities
    assert "urn:ietf:params:netconf:base:1.1" in caps
    assert "urn:ietf:params:netconf:capability:notification:1.0" in caps
    assert any(c.startswith(IRTF_AGENT_NS) and "revision=" in c for c in caps)


def test_session_is_fast_path_without_touching_ncclient_globals(nc: NetconfClient) -> None:
    session = nc._manager._session
    assert session.transport.sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    # Our fix is a subclass on our sessions only: ncclient's module state is stock.
    assert nc_session.TICK == 0.1
    assert nc_ssh.SSHSession.send is nc_session.Session.send
    assert type(session).send is not nc_session.Session.send


def test_profile_is_the_configured_one_and_valid(agent: AgentClient, nc: NetconfClient, yang: YangContext) -> None:
    assert agent.profile() == PROFILE
    data = nc.get(filter=f'<agent xmlns="{IRTF_AGENT_NS}"/>')
    yang.validate_data(etree.tostring(data, encoding="unicode"))


def test_xpath_and_subtree_filters_select_the_same(nc: NetconfClient) -> None:
    by_xpath = nc.get(filter="/irtf-agent:agent/irtf-agent:name", filter_type="xpath")
    by_subtree = nc.get(filter=f'<agent xmlns="{IRTF_AGENT_NS}"><name/></agent>')
    for data in (by_xpath, by_subtree):
        names = data.findall(f"{{{IRTF_AGENT_NS}}}agent/{{{IRTF_AGENT_NS}}}name")
        assert [n.text for n in names] == [PROFILE.name]
        assert data.find(f"{{{IRTF_AGENT_NS}}}agent/{{{IRTF_AGENT_NS}}}version") is None


def test_assign_runs_to_finished_and_get_reply_is_valid(
    agent: AgentClient, nc: NetconfClient, yang: YangContext
) -> None:
    param = DataParam("d-assign", description="alarms", format="text/plain", data="LOS on port 3")
    events = agent.watch("t-assign", timeout=10)
    agent.assign_task(Task("t-assign", send_from="cross-domain", content=prompt(), msg_data=["d-assign"]), [param])
    statuses = [event.status for event in events]
    assert statuses == [TaskStatus.CREATED, TaskStatus.PROCESSING, TaskStatus.FINISHED]
    task = agent.get_task("t-assign")
    assert task.status is TaskStatus.FINISHED
    assert task.commu_type is CommuType.TASK_ASSIGN
    assert task.msg_data == ["d-assign"]
    assert task.result is not None and task.result.summary
    assert "t-assign" in [t.task_id for t in agent.list_tasks()]
    yang.validate_data(etree.tostring(nc.get(), encoding="unicode"))


def test_cancel_keeps_the_task_queryable(server: AgentServer) -> None:
    with AgentClient.connect("127.0.0.1", server.port, username="admin", password="admin") as agent:
        events = agent.watch("t-cancel", timeout=10)
        agent.assign_task(Task("t-cancel", content=prompt(), task_async=True))
        agent.cancel_task("t-cancel")
        assert [e.status for e in events][-1] is TaskStatus.CANCELED
        task = agent.get_task("t-cancel")
        assert task.status is TaskStatus.CANCELED
        assert task.commu_type is CommuType.TASK_CANCEL


def test_negotiate_feasibility(agent: AgentClient) -> None:
    yes = agent.negotiate(NegotiationRequest("t-neg", NegotiationType.FEASIBILITY, [prompt("diagnose gNB")]))
    assert yes.type is NegotiationType.FEASIBILITY
    assert yes.feasible is True
    no = agent.negotiate(NegotiationRequest("t-neg", NegotiationType.FEASIBILITY, [prompt("paint the mast red")]))
    assert no.feasible is False
    assert no.reason


def test_put_data_param_then_read_it_back(agent: AgentClient, nc: NetconfClient) -> None:
    param = DataParam("d-put", description="topology", format="application/json", data='{"links": 3}')
    agent.put_data_param(param)
    data = nc.get_config(filter=f'<data-params xmlns="{IRTF_AGENT_NS}"><id>d-put</id></data-params>')
    assert DataParam.all_from_xml(data) == [param]


def test_get_schema_returns_the_module(nc: NetconfClient) -> None:
    text = nc.get_schema("irtf-agent")
    assert text.lstrip().startswith("module irtf-agent")


def test_lock_denied_names_the_holder_then_kill_session_frees_it(server: AgentServer, nc: NetconfClient) -> None:
    with NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin") as other:
        other.lock()
        with pytest.raises(RpcError) as info:
            nc.lock()
        assert info.value.error_tag == "lock-denied"
        assert info.value.error_type == "protocol"
        assert info.value.info.get("session-id") == str(other.session_id)
        nc.kill_session(other.session_id)
        nc.lock()
        nc.unlock()


def test_concurrent_requests_on_one_session(nc: NetconfClient) -> None:
    failures: list[BaseException] = []
    names: list[str] = []

    def worker() -> None:
        try:
            for _ in range(20):
                data = nc.get(filter=f'<agent xmlns="{IRTF_AGENT_NS}"><name/></agent>')
                names.append(data[0][0].text or "")
        except BaseException as exc:  # collected and asserted below
            failures.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert failures == []
    assert names == [PROFILE.name] * 80


def test_close_is_idempotent(server: AgentServer) -> None:
    client = NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin")
    client.close()
    assert not client.connected
    client.close()


def test_abort_drops_the_session_without_a_close_session(server: AgentServer) -> None:
    settle = time.monotonic() + 10
    while server.session_count() and time.monotonic() < settle:  # earlier tests' sessions may still be ending
        time.sleep(0.05)
    before = server.session_count()
    client = NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin")
    assert server.session_count() == before + 1
    client.abort()
    assert not client.connected
    deadline = time.monotonic() + 10
    while server.session_count() > before and time.monotonic() < deadline:  # the server sees the transport end
        time.sleep(0.05)
    assert server.session_count() == before
    client.abort()
    client.close()  # both quiet on a dropped session


def test_public_key_auth(tmp_path: Path) -> None:
    import paramiko

    key = paramiko.RSAKey.generate(2048)
    key_file = tmp_path / "id_rsa"
    key.write_private_key_file(str(key_file))
    authorized = tmp_path / "authorized_keys"
    authorized.write_text(f"{key.get_name()} {key.get_base64()} tester\n")
    config = ServerConfig(state_dir=tmp_path / "state", port=0, authorized_keys=authorized, profile=PROFILE)
    with (
        AgentServer(config) as server,
        AgentClient.connect("127.0.0.1", server.port, username="tester", key_filename=str(key_file)) as agent,
    ):
        assert agent.profile().name == PROFILE.name
