"""Protection in transit for the A2A face (draft-zhou 7): HTTPS with a certificate generated on first start
(or given), the card's securitySchemes, and bearer tokens that log in as the same users under the same NACM.
"""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from a2asupport import energy_agent_config, verify

from an_agent.a2a.client import A2AAgentClient
from an_agent.a2a.tls import CERT_FILE, KEY_FILE, fingerprint, load_or_create_certificate
from an_agent.access.users import hash_password, hash_token, new_token
from an_agent.cli import main
from an_agent.errors import ConnectError, RpcError
from an_agent.model import TaskStatus
from an_agent.server import AgentServer

PROMPT = "## target object\nSITE-07\n## task description\ndiagnose the outage"


@pytest.fixture
def tokens() -> dict[str, str]:
    return {name: new_token()[0] for name in ("alice", "bob")}


@pytest.fixture
def server(tmp_path: Path, tokens: dict[str, str]) -> Iterator[AgentServer]:
    users = tmp_path / "users.yaml"
    users.write_text(
        "users:\n"
        f'  - name: alice\n    password: "{hash_password("alice-pw", n=2**10)}"\n    groups: [operators]\n'
        f'    agents: [alice]\n    tokens: ["{hash_token(tokens["alice"])}"]\n'
        f'  - name: bob\n    groups: [operators]\n    agents: [bob]\n    tokens: ["{hash_token(tokens["bob"])}"]\n',
        encoding="utf-8",
    )
    users.chmod(0o600)
    config = energy_agent_config(tmp_path / "state", 30.0)
    config.users = {}
    config.users_file = users
    with AgentServer(config) as running:
        yield running


def _client(server: AgentServer, **login: str) -> A2AAgentClient:
    assert server.a2a is not None
    return A2AAgentClient.connect(server.a2a.url, timeout=30, trust=server.a2a.certificate, **login)


def test_generated_certificate_is_private_reused_and_names_the_host(tmp_path: Path) -> None:
    first = load_or_create_certificate(tmp_path / "state", "127.0.0.1")
    assert (first.cert.name, first.key.name) == (CERT_FILE, KEY_FILE)
    for path in (first.cert, first.key):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "state").stat().st_mode) == 0o700
    print_before = fingerprint(first.cert)
    assert fingerprint(load_or_create_certificate(tmp_path / "state", "127.0.0.1").cert) == print_before
    # Another host name: the stored certificate does not name it, so a new one is made.
    assert fingerprint(load_or_create_certificate(tmp_path / "state", "agent.lab").cert) != print_before


def test_https_card_declares_basic_and_bearer(server: AgentServer) -> None:
    assert server.a2a is not None and server.a2a.certificate is not None
    card = httpx.get(f"{server.a2a.url}/.well-known/agent-card.json", verify=verify(server)).json()
    assert all(i["url"].startswith("https://") for i in card["supportedInterfaces"][:2])
    schemes = card["securitySchemes"]
    assert schemes["basic"]["httpAuthSecurityScheme"]["scheme"] == "Basic"
    assert schemes["bearer"]["httpAuthSecurityScheme"]["scheme"] == "Bearer"
    assert card["securityRequirements"] == [{"schemes": {"basic": {"list": []}}}, {"schemes": {"bearer": {"list": []}}}]
    # Plain HTTP on the HTTPS port gets no answer from the A2A routes.
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{server.a2a.port}/.well-known/agent-card.json", timeout=10)


def test_the_client_verifies_and_never_silently_skips(server: AgentServer) -> None:
    assert server.a2a is not None
    with pytest.raises(ConnectError):  # not in the system's CAs, and no switch to skip verification
        A2AAgentClient.connect(server.a2a.url, "alice", "alice-pw", timeout=10)
    other = load_or_create_certificate(server.config.state_dir.parent / "other", "127.0.0.1")
    with pytest.raises(ConnectError):  # another agent's certificate does not vouch for this one
        A2AAgentClient.connect(server.a2a.url, "alice", "alice-pw", timeout=10, trust=other.cert)


def test_bearer_tokens_and_hashed_passwords_are_the_same_users(server: AgentServer, tokens: dict[str, str]) -> None:
    alice_by_token = _client(server, token=tokens["alice"])
    try:
        task = next(alice_by_token.stream(text=PROMPT))  # runs for 30 s unless cancelled
        with _client(server, token=tokens["bob"]) as bob:
            with pytest.raises(RpcError) as denied:  # ownership as for bob's NETCONF session
                bob.cancel(task.task_id)
            assert denied.value.error_tag == "access-denied", denied.value
        with _client(server, username="alice", password="alice-pw") as alice_by_password:  # a users-file hash
            assert alice_by_password.cancel(task.task_id).status == TaskStatus.CANCELED  # the same owner
    finally:
        alice_by_token.close()
    assert server.a2a is not None
    for header in ({"Authorization": "Bearer an1_not-a-token"}, {"Authorization": f"Bearer {hash_token('x')}"}):
        reply = httpx.post(
            f"{server.a2a.url}/",
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task.task_id}},
            headers=header,
            verify=verify(server),
            timeout=30,
        )
        assert reply.status_code == 401 and "Bearer" in reply.headers["www-authenticate"]


def test_given_certificate_and_cli_token(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    made = load_or_create_certificate(tmp_path / "pki", "127.0.0.1")
    config = energy_agent_config(tmp_path / "state", 0.05)
    config.a2a_tls, config.a2a_cert, config.a2a_key = False, made.cert, made.key  # given: HTTPS anyway
    with AgentServer(config) as server:
        assert server.a2a is not None and server.a2a.certificate == made.cert
        assert not (tmp_path / "state" / CERT_FILE).exists()
        with _client(server, username="admin", password="admin") as client:
            assert client.card["name"]
    assert main(["users", "token", "--json"]) == 0
    printed = capsys.readouterr().out
    assert '"token": "an1_' in printed and '"hash": "sha256$' in printed
