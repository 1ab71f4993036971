"""The users file, password hashes and passwords kept out of the process list."""

from __future__ import annotations

import io
import logging
import socket
from pathlib import Path

import paramiko
import pytest

from an_agent.access.users import agent_users, hash_password, is_hash, load_users, verify_password
from an_agent.cli import main
from an_agent.cli.serve_args import parse_users
from an_agent.errors import ConfigError
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig
from rawnc import RawSession


def test_hash_is_salted_self_describing_and_verifies() -> None:
    first, second = hash_password("s3cret"), hash_password("s3cret")
    assert first != second and first.startswith("scrypt$16384$8$1$")
    assert verify_password(first, "s3cret") and not verify_password(first, "s3cret!")
    assert not verify_password(first, "")
    assert is_hash(first) and not is_hash("s3cret")
    assert verify_password("plain", "plain")  # plain text is still accepted (labs)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "users.yaml"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_users_file_loads_groups_agents_and_keys(tmp_path: Path) -> None:
    key = paramiko.RSAKey.generate(1024)
    path = _write(
        tmp_path,
        f"""users:
  - name: alice
    password: "{hash_password("pw-a")}"
    groups: [operators]
    agents: [service-agent, ran-agent]
  - name: bob
    authorized-keys: ["{key.get_name()} {key.get_base64()} bob@lab"]
""",
    )
    db = load_users(path)
    alice = db.identity("alice")
    assert alice is not None and alice.groups == {"operators"} and alice.agents == {"service-agent", "ran-agent"}
    assert db.users["bob"].password is None and len(db.users["bob"].authorized_keys) == 1
    assert db.identity("carol") is None


@pytest.mark.parametrize(
    "text,line,words",
    [
        ("users:\n  - name: alice\n    password: x\n    role: admin\n", 4, "unknown field 'role'"),
        ("users:\n  - name: alice\n    password: x\n  - name: alice\n    password: y\n", 4, "listed twice"),
        ("users:\n  - name: alice\n    password: scrypt$1$2\n", 3, "malformed scrypt hash"),
        ("users:\n  - name: alice\n", 2, "neither a password, authorized-keys nor tokens"),
        ("users:\n  - name: alice\n    password: x\n    groups: operators\n", 4, "groups must be a list"),
        ("users:\n  - password: x\n", 2, "user name None"),
        ("users: [\n", 2, "not valid YAML"),
        ("people: []\n", 1, "unknown top-level key"),
    ],
)
def test_users_file_errors_name_file_and_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_users(path)
    assert str(info.value).startswith(f"{path}:{line}: ") and words in str(info.value), str(info.value)


def test_plain_text_password_is_accepted_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    load_users(_write(tmp_path, "users:\n  - name: lab\n    password: lab\n"))
    assert any("plain-text password" in r.getMessage() and "users.yaml:3" in r.getMessage() for r in caplog.records)


def _login(port: int, user: str, password: str | None = None, key: paramiko.PKey | None = None) -> bool:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    transport = paramiko.Transport(sock)
    try:
        transport.connect(username=user, password=password, pkey=key)
        return transport.is_authenticated()
    except paramiko.AuthenticationException:
        return False
    finally:
        transport.close()


def test_server_accepts_hashed_passwords_and_per_user_keys(tmp_path: Path, profile: AgentProfile) -> None:
    key = paramiko.RSAKey.generate(1024)
    users = _write(
        tmp_path,
        f"""users:
  - name: alice
    password: "{hash_password("pw-a")}"
    groups: [operators]
  - name: bob
    authorized-keys: ["{key.get_name()} {key.get_base64()}"]
""",
    )
    config = ServerConfig(state_dir=tmp_path / "state", port=0, profile=profile, users_file=users, schemas="off")
    with AgentServer(config) as server:
        assert server.notice is None  # no admin/admin fallback
        assert _login(server.port, "alice", "pw-a")
        assert not _login(server.port, "alice", "pw-b")
        assert not _login(server.port, "admin", "admin")
        assert _login(server.port, "bob", key=key)
        assert not _login(server.port, "alice", key=key)  # bob's key is bob's only
        session = RawSession(server.port, user="alice", password="pw-a")
        session.close()


def test_password_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_users(["ops"], {"AN_AGENT_PASSWORD": "from-env"}) == {"ops": "from-env"}
    assert parse_users(["ops:inline"], {}) == {"ops": "inline"}
    with pytest.raises(ConfigError, match="AN_AGENT_PASSWORD"):
        parse_users(["ops"], {})


def test_users_hash_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("correct horse\n"))
    assert main(["users", "hash", "--stdin"]) == 0
    hashed = capsys.readouterr().out.strip()
    assert verify_password(hashed, "correct horse")
    path = _write(tmp_path, f"users:\n  - name: ann\n    password: '{hashed}'\n    groups: [admin]\n")
    assert main(["users", "check", str(path), "--json"]) == 0
    assert '"password": "hash"' in capsys.readouterr().out
    bad = _write(tmp_path, "users:\n  - name: ann\n")
    assert main(["users", "check", str(bad)]) == 2


def test_agent_users_are_operators_that_speak_for_themselves(tmp_path: Path) -> None:
    db, passwords = agent_users(["ran", "ip", "ran"])
    assert sorted(passwords) == ["ip", "ran"] and passwords["ran"] != passwords["ip"]
    assert len(passwords["ran"]) >= 40  # 32 random bytes
    identity = db.identity("ran")
    assert identity is not None and identity.groups == {"operators"} and identity.agents == {"ran"}
    users = tmp_path / "users.yaml"
    users.write_text(f"users:\n  - {{name: ran, password: '{hash_password('x')}'}}\n")
    users.chmod(0o600)
    with pytest.raises(ConfigError, match="ran defined twice"):
        ServerConfig(state_dir=tmp_path, users_file=users, user_db=db).load_user_db()
