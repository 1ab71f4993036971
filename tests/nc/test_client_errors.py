"""Every failure reaches the caller as an an_agent.errors exception with its details."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from lxml import etree
from ncclient.operations.rpc import RPCError as NcRpcError

from an_agent.errors import AuthError, ConnectError, RequestTimeout, RpcError, TransportError
from an_agent.model import IRTF_AGENT_NS, NETCONF_BASE_NS, AgentProfile, Task, tasks_element
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.client import NetconfClient, _translate
from an_agent.server import AgentServer, ServerConfig

PROFILE = AgentProfile("IRTF-acme-test-1.0", "error tests", "1.0.0", "acme")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentServer]:
    config = ServerConfig(state_dir=tmp_path_factory.mktemp("agent"), port=0, users={"admin": "admin"}, profile=PROFILE)
    with AgentServer(config) as running:
        yield running


@pytest.fixture
def nc(server: AgentServer) -> Iterator[NetconfClient]:
    with NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=10) as client:
        yield client


def test_wrong_password_is_auth_error(server: AgentServer) -> None:
    with pytest.raises(AuthError, match="authentication rejected"):
        NetconfClient.connect("127.0.0.1", server.port, username="admin", password="wrong")


def test_unknown_host_key_is_connect_error(
    server: AgentServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # an empty home: no known_hosts
    with pytest.raises(ConnectError, match="Unknown host key"):
        NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin", hostkey_verify=True)


def test_refused_port_is_connect_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again before connecting: nothing listens there
    with pytest.raises(ConnectError, match=f"127.0.0.1:{port}"):
        NetconfClient.connect("127.0.0.1", port, username="admin", password="admin", timeout=5)


def test_non_ssh_peer_is_connect_error() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def talk_http() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=talk_http)
    thread.start()
    try:
        with pytest.raises(ConnectError):
            NetconfClient.connect("127.0.0.1", port, username="admin", password="admin", timeout=5)
    finally:
        thread.join(10)
        listener.close()


def test_invalid_task_keeps_every_error_field_and_the_session(nc: NetconfClient) -> None:
    bad = Task("t-bad", content="## target object\ngNB-1\n(no description section)")
    with pytest.raises(RpcError) as info:
        nc.edit_config(tasks_element([bad], operation="create"))
    error = info.value
    assert error.error_type == "application"
    assert error.error_tag == "invalid-value"
    assert error.severity == "error"
    assert error.app_tag == "task-description-missing"
    assert error.path is not None and error.path.endswith("/content")
    assert "task description" in error.message
    # The session survives and nothing was stored.
    assert AgentClient(nc).list_tasks() == []


def test_duplicate_task_is_data_exists(nc: NetconfClient) -> None:
    agent = AgentClient(nc)
    task = Task("t-dup", content="## target object\nx\n## task description\ny")
    agent.assign_task(task)
    with pytest.raises(RpcError) as info:
        agent.assign_task(task)
    assert info.value.error_tag == "data-exists"
    assert info.value.path == "/irtf-agent:tasks/task[task-id='t-dup']"


def test_unknown_rpc_is_refused_and_session_survives(nc: NetconfClient) -> None:
    with pytest.raises(RpcError) as info:
        nc.call('<reboot-the-world xmlns="urn:example:nothing"/>')
    assert info.value.error_type in ("rpc", "protocol", "application")
    assert info.value.error_tag
    assert nc.get(filter=f'<agent xmlns="{IRTF_AGENT_NS}"><name/></agent>') is not None


def test_missing_task_is_data_missing(nc: NetconfClient) -> None:
    with pytest.raises(RpcError) as info:
        AgentClient(nc).get_task("no-such-task")
    assert info.value.error_tag == "data-missing"


def test_subscription_wait_times_out(nc: NetconfClient) -> None:
    subscription = nc.subscribe(
        filter=f'<condition-notifications xmlns="{IRTF_AGENT_NS}"><task-id>never</task-id></condition-notifications>'
    )
    with pytest.raises(RequestTimeout):
        subscription.next(timeout=0.3)


def test_killed_session_reports_transport_error(server: AgentServer, nc: NetconfClient) -> None:
    victim = NetconfClient.connect("127.0.0.1", server.port, username="admin", password="admin", timeout=5)
    try:
        victim.get()  # the victim is in use before it is killed
        nc.kill_session(victim.session_id)
        with pytest.raises(TransportError):
            for _ in range(50):  # the close may take a moment to reach the victim's reader thread
                victim.get()
    finally:
        victim.close()


def _ncclient_error(tag: str, message: str, info: str = "", path: str = "", app_tag: str = "") -> NcRpcError:
    xml = (
        f'<rpc-error xmlns="{NETCONF_BASE_NS}"><error-type>protocol</error-type><error-tag>{tag}</error-tag>'
        f"<error-severity>error</error-severity>"
        + (f"<error-app-tag>{app_tag}</error-app-tag>" if app_tag else "")
        + (f"<error-path>\n  {path}\n</error-path>" if path else "")
        + f'<error-message xml:lang="en">{message}</error-message>'
        + (f"<error-info>{info}</error-info>" if info else "")
        + "</rpc-error>"
    )
    return NcRpcError(etree.fromstring(xml))


def test_translate_keeps_every_field_of_ncclient_rpc_errors() -> None:
    single = _ncclient_error("lock-denied", "locked by 7", "<session-id>7</session-id>", "/irtf-agent:tasks", "held")
    with pytest.raises(RpcError) as info:
        _translate(single, "lock", connecting=False)
    assert info.value == RpcError(
        "protocol", "lock-denied", "locked by 7", "/irtf-agent:tasks", {"session-id": "7"}, "error", "held"
    )
    first, second = _ncclient_error("in-use", "first"), _ncclient_error("bad-element", "second")
    several = NcRpcError(etree.Element(f"{{{NETCONF_BASE_NS}}}rpc-reply"), errs=[first, second])
    with pytest.raises(RpcError) as info:
        _translate(several, "edit-config", connecting=False)
    assert info.value.error_tag == "in-use"
    assert "and 1 more" in info.value.message and "second" in info.value.message
