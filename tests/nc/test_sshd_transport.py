"""The sshd path: a private OpenSSH sshd carries SSH; users by key, NACM and timeouts unchanged."""

from __future__ import annotations

import getpass
import json
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from lxml import etree

from an_agent.model import AgentProfile
from an_agent.nc.sshd import SSHD
from an_agent.server import AgentServer, ServerConfig
from rawnc import CLIENT_HELLO, NS, wait_for
from support import IRTF

pytestmark = pytest.mark.skipif(not Path(SSHD).exists(), reason="needs OpenSSH's sshd (openssh-server)")

NACM_RULES = {
    "ietf-netconf-acm:nacm": {
        "enable-nacm": True,
        "read-default": "permit",
        "write-default": "permit",
        "exec-default": "permit",
        "rule-list": [
            {
                "name": "guests",
                "group": ["guests"],
                "rule": [
                    {
                        "name": "no-tasks",
                        "module-name": "irtf-agent",
                        "path": "/irtf-agent:tasks",
                        "access-operations": "*",
                        "action": "deny",
                    },
                    {
                        "name": "no-conditions",
                        "module-name": "irtf-agent",
                        "notification-name": "condition-notifications",
                        "access-operations": "read",
                        "action": "deny",
                    },
                ],
            }
        ],
    }
}


def _keypair(path: Path) -> tuple[paramiko.PKey, str]:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return paramiko.Ed25519Key.from_private_key_file(str(path)), path.with_suffix(".pub").read_text().strip()


class StreamSession:
    """A minimal NETCONF 1.0 client over paramiko to the sshd path."""

    def __init__(self, port: int, key: paramiko.PKey, login: str | None = None) -> None:
        self.client = paramiko.SSHClient()
        self.client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        self.client.connect(
            "127.0.0.1", port, username=login or getpass.getuser(), pkey=key, look_for_keys=False, allow_agent=False
        )
        transport = self.client.get_transport()
        assert transport is not None
        self.channel = transport.open_session()
        self.channel.settimeout(10)
        self.channel.invoke_subsystem("netconf")
        self.buffer = b""
        self.hello = etree.fromstring(self._read())
        self.channel.sendall(CLIENT_HELLO.format(version="1.0").encode())

    def _read(self) -> bytes:
        while b"]]>]]>" not in self.buffer:
            data = self.channel.recv(65536)
            if not data:
                raise EOFError("closed")
            self.buffer += data
        message, _, self.buffer = self.buffer.partition(b"]]>]]>")
        return message

    def rpc(self, body: str) -> etree._Element:
        self.channel.sendall(f'<rpc xmlns="{NS["nc"]}" message-id="1">{body}</rpc>]]>]]>'.encode())
        return etree.fromstring(self._read())

    def close(self) -> None:
        self.client.close()


@pytest.fixture
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[paramiko.PKey, str]]:
    where = tmp_path_factory.mktemp("keys")
    return {user: _keypair(where / user) for user in ("alice", "guest")}


@pytest.fixture
def server(tmp_path: Path, profile: AgentProfile, keys: dict[str, tuple[paramiko.PKey, str]]) -> Iterator[AgentServer]:
    users = tmp_path / "users.yaml"
    users.write_text(
        "users:\n"
        f"  - name: alice\n    groups: [operators]\n    authorized-keys: ['{keys['alice'][1]}']\n"
        f"  - name: guest\n    groups: [guests]\n    authorized-keys: ['{keys['guest'][1]}']\n"
    )
    users.chmod(0o600)
    nacm = tmp_path / "nacm.json"
    nacm.write_text(json.dumps(NACM_RULES))
    config = ServerConfig(
        state_dir=tmp_path / "st",
        port=0,
        sshd_port=0,
        profile=profile,
        users_file=users,
        nacm_file=nacm,
        schemas="off",
        idle_timeout=3.0,
    )
    with AgentServer(config) as srv:
        yield srv


def _login(server: AgentServer, keys: dict[str, tuple[paramiko.PKey, str]], user: str) -> StreamSession:
    """A session through the agent's sshd with ``user``'s key."""
    assert server.sshd is not None
    return StreamSession(server.sshd.port, keys[user][0])


GET_TASKS = f'<get><filter type="subtree"><tasks xmlns="{IRTF}"/></filter></get>'
ASSIGN = (
    f'<edit-config><target><running/></target><config><tasks xmlns="{IRTF}"><task><task-id>s1</task-id>'
    "<task-sendFrom>svc</task-sendFrom><commuType>taskAssign</commuType>"
    "<content>## target object\nX\n## task description\ny</content></task></tasks></config></edit-config>"
)


def test_the_key_names_the_user_and_nacm_applies(
    server: AgentServer, keys: dict[str, tuple[paramiko.PKey, str]]
) -> None:
    alice, guest = (_login(server, keys, user) for user in ("alice", "guest"))
    try:
        assert alice.hello.find("nc:session-id", NS) is not None
        assert alice.rpc(ASSIGN).find("nc:ok", NS) is not None
        assert [e.text for e in alice.rpc(GET_TASKS).iter(f"{{{IRTF}}}task-id")] == ["s1"]
        assert [e.text for e in guest.rpc(GET_TASKS).iter(f"{{{IRTF}}}task-id")] == []
        # Both logged in as the same system account: only the key told them apart.
    finally:
        alice.close()
        guest.close()
    wait_for(lambda: server.session_count() == 0)


def test_unknown_keys_and_passwords_are_refused(server: AgentServer, tmp_path: Path) -> None:
    assert server.sshd is not None
    stranger, _ = _keypair(tmp_path / "stranger")
    with pytest.raises(paramiko.AuthenticationException):
        StreamSession(server.sshd.port, stranger)
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    with pytest.raises(paramiko.AuthenticationException):
        client.connect(
            "127.0.0.1",
            server.sshd.port,
            username=getpass.getuser(),
            password="x",
            look_for_keys=False,
            allow_agent=False,
        )
    client.close()


def test_a_shell_or_command_is_refused(server: AgentServer, keys: dict[str, tuple[paramiko.PKey, str]]) -> None:
    assert server.sshd is not None
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect(
        "127.0.0.1",
        server.sshd.port,
        username=getpass.getuser(),
        pkey=keys["alice"][0],
        look_for_keys=False,
        allow_agent=False,
    )
    try:
        _, stdout, stderr = client.exec_command("id", timeout=10)
        assert stdout.channel.recv_exit_status() != 0
        assert b"only the NETCONF subsystem" in stderr.read()
    finally:
        client.close()
    assert server.session_count() == 0


def test_idle_timeout_closes_the_ssh_session(server: AgentServer, keys: dict[str, tuple[paramiko.PKey, str]]) -> None:
    assert server.sshd is not None
    session = StreamSession(server.sshd.port, keys["alice"][0])
    try:
        wait_for(lambda: server.session_count() == 1)
        started = time.monotonic()
        wait_for(lambda: server.session_count() == 0, timeout=15)
        assert time.monotonic() - started < 10
        wait_for(lambda: session.channel.closed or session.channel.exit_status_ready(), timeout=10)
    finally:
        session.close()


def test_state_files_are_private(server: AgentServer) -> None:
    assert server.sshd is not None
    for name in ("netconf.sock", "authorized_keys", "sshd_config", "ssh_host_ed25519_key"):
        mode = stat.S_IMODE(os.stat(server.sshd.dir / name).st_mode)
        assert mode & 0o077 == 0, (name, oct(mode))
    assert stat.S_IMODE(os.stat(server.sshd.dir).st_mode) == 0o700


def test_notifications_over_the_sshd_path_keep_order_and_nacm(
    server: AgentServer, keys: dict[str, tuple[paramiko.PKey, str]]
) -> None:
    """Notifications over the sshd path: in the order of the commits, and only to those NACM lets read them."""
    subscribe = "<create-subscription xmlns='urn:ietf:params:xml:ns:netconf:notification:1.0'/>"
    sessions: list[StreamSession] = []
    try:
        # Each subscribes at once: this server closes sessions idle for 3 s, subscribers
        # and their user's other sessions excepted, and a loaded machine logs in slowly.
        for user in ("alice", "guest"):
            sessions.append(_login(server, keys, user))
            assert sessions[-1].rpc(subscribe).find("nc:ok", NS) is not None
        alice, guest = sessions
        worker = _login(server, keys, "alice")
        sessions.append(worker)
        ids = [f"n{i}" for i in range(5)]
        for task_id in ids:
            assert (
                worker.rpc(ASSIGN.replace("<task-id>s1</task-id>", f"<task-id>{task_id}</task-id>")).find("nc:ok", NS)
                is not None
            )
        created: list[str] = []
        while len(created) < len(ids):
            note = etree.fromstring(alice._read())
            status = note.findtext(f".//{{{IRTF}}}task-status") or note.findtext(f".//{{{IRTF}}}status")
            task_id = note.findtext(f".//{{{IRTF}}}task-id")
            if task_id is not None and task_id not in created and status in (None, "created"):
                created.append(task_id)
        assert created == ids  # the order of the commits
        # guests may not read tasks: nothing about them was queued ahead of this reply.
        reply = guest.rpc(GET_TASKS)
        assert etree.QName(reply).localname == "rpc-reply" and list(reply.iter(f"{{{IRTF}}}task-id")) == []
    finally:
        for session in sessions:
            session.close()
