"""Who may open an SSH session to the agent: credentials, the host key, paramiko's auth callbacks.

`SshCredentials` holds the users (scrypt hashes or plain passwords) and public keys; its
`check_password` is the one password check of the agent, used by the A2A face too. Failed
password logins are logged and slowed down by the agent's `LoginThrottle`.
"""

from __future__ import annotations

import base64
import io
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import paramiko

from an_agent._files import write_private
from an_agent.access.logins import LoginThrottle
from an_agent.access.users import hash_password, verify_password
from an_agent.errors import ConfigError
from an_agent.store.sqlite import private_directory

log = logging.getLogger(__name__)


@dataclass
class SshCredentials:
    """Who may log in.

    ``users``: stored passwords by user name (an `an_agent.access.users` scrypt
    hash, or plain text); ``authorized_keys``: public keys valid for any user
    name (``--authorized-keys``); ``user_keys``: keys valid for one user only
    (the users file).
    """

    users: dict[str, str] = field(default_factory=dict)
    authorized_keys: list[paramiko.PKey] = field(default_factory=list)
    user_keys: dict[str, list[paramiko.PKey]] = field(default_factory=dict)

    def check_password(self, name: str, password: str) -> bool:
        """Whether ``password`` is user ``name``'s (`an_agent.access.users.verify_password`; ~50 ms per hash).

        An unknown user costs a hash check too, so timing does not tell which names exist.
        """
        expected = self.users.get(name)
        return verify_password(expected if expected is not None else _DUMMY_HASH, password) and expected is not None

    @staticmethod
    def parse_key(line: str, where: str) -> paramiko.PKey:
        """One OpenSSH public key line (``<type> <base64> [comment]``); `ConfigError` naming ``where``."""
        parts = line.split()
        if len(parts) < 2:
            raise ConfigError(f"{where}: expected '<key-type> <base64-key> [comment]'")
        try:
            return paramiko.PKey.from_type_string(parts[0], _b64decode(parts[1]))
        except (ValueError, paramiko.SSHException) as exc:
            raise ConfigError(f"{where}: unusable {parts[0]} key: {exc}") from None

    @staticmethod
    def load_authorized_keys(path: Path) -> list[paramiko.PKey]:
        """Parse an OpenSSH ``authorized_keys`` file (options before the key type are not supported)."""
        keys: list[paramiko.PKey] = []
        try:
            lines = path.read_text().splitlines()
        except OSError as exc:
            raise ConfigError(f"cannot read authorized keys file {path}: {exc.strerror}") from None
        for number, line in enumerate(lines, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            keys.append(SshCredentials.parse_key(line, f"{path}:{number}"))
        return keys


def _b64decode(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


_loaded_keys: dict[bytes, paramiko.PKey] = {}
_loaded_lock = threading.Lock()


def load_or_create_host_key(path: Path) -> paramiko.PKey:
    """The server's SSH host key, generated (RSA 3072) on first use and kept at ``path`` (mode 0600).

    A key file with the same content as one loaded before in this process (or in the lab's template
    process this one was forked from, `an_agent.lab.zygote`) gives the key loaded then: checking an RSA
    private key costs ~0.1 s of CPU, and every agent of a lab has a copy of the lab's one key.
    """
    if path.exists():
        try:
            data = path.read_bytes()
            with _loaded_lock:
                key = _loaded_keys.get(data)
                if key is None:
                    key = paramiko.RSAKey.from_private_key(io.StringIO(data.decode("ascii")))
                    _loaded_keys[data] = key
            return key
        except (OSError, UnicodeDecodeError, paramiko.SSHException) as exc:
            raise ConfigError(f"host key {path} is unreadable ({exc}); delete it to generate a new one") from None
    key = paramiko.RSAKey.generate(3072)
    private_directory(path.parent)
    text = io.StringIO()
    key.write_private_key(text)
    write_private(path, text.getvalue().encode("ascii"))  # 0600, atomic, no symlink follows
    return key


class _SshAuth(paramiko.ServerInterface):  # type: ignore[misc]
    """paramiko's view of our credentials; one instance per connection."""

    def __init__(self, credentials: SshCredentials, peer: str, throttle: LoginThrottle) -> None:
        self._credentials = credentials
        self._peer = peer
        self._source = peer.rsplit(":", 1)[0]
        self._throttle = throttle
        self.username = ""
        self.subsystem_requested = threading.Event()

    def get_allowed_auths(self, username: str) -> str:
        methods = []
        if self._credentials.users:
            methods.append("password")
        if self._credentials.authorized_keys or self._credentials.user_keys:
            methods.append("publickey")
        return ",".join(methods)

    def check_auth_password(self, username: str, password: str) -> int:
        if self._credentials.check_password(username, password):
            self.username = username
            return int(paramiko.AUTH_SUCCESSFUL)
        delay = self._throttle.failed(self._source)
        log.warning(
            "failed login for user %r from %s (password); next answer delayed %.2f s", username, self._peer, delay
        )
        # Sleeping here holds only this connection's transport thread.
        time.sleep(delay)
        return int(paramiko.AUTH_FAILED)

    def check_auth_publickey(self, username: str, key: paramiko.PKey) -> int:
        allowed_keys = [*self._credentials.authorized_keys, *self._credentials.user_keys.get(username, [])]
        if any(key == allowed for allowed in allowed_keys):
            self.username = username
            return int(paramiko.AUTH_SUCCESSFUL)
        # Clients offer every key they hold in turn: routine, so not throttled.
        log.info("public key %s not accepted for user %r from %s", key.get_name(), username, self._peer)
        return int(paramiko.AUTH_FAILED)

    def check_channel_request(self, kind: str, chanid: int) -> int:
        if kind == "session":
            return int(paramiko.OPEN_SUCCEEDED)
        return int(paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED)

    def check_channel_subsystem_request(self, channel: paramiko.Channel, name: str) -> bool:
        if name != "netconf":
            return False
        self.subsystem_requested.set()
        return True


_DUMMY_HASH = hash_password("not a password of anyone")
