"""The users file (``an-agent serve --users FILE``) and password hashing.

Format (YAML)::

    users:
      - name: alice
        password: "scrypt$16384$8$1$<salt b64>$<hash b64>"   # an-agent users hash
        groups: [operators]
        agents: [service-agent]          # task-sendFrom values alice may use
        authorized-keys:                 # OpenSSH public key lines (optional)
          - ssh-ed25519 AAAA... alice@laptop
        tokens:                          # A2A bearer tokens, hashed (an-agent users token)
          - "sha256$<hex>"

Passwords are stored as scrypt hashes (stdlib `hashlib.scrypt`, a random
16-byte salt per user, parameters in the string so they can be raised later).
A password that is not such a string is taken as plain text, with a warning:
acceptable for a lab, never for a shared machine. Bearer tokens for the
A2A face (`new_token`) are random 256-bit secrets: they are stored as their
SHA-256 (``sha256$<hex>``, `hash_token`), which is enough for a secret that
cannot be guessed and lets a request be checked without a slow hash. A token
logs in as its user: same groups, agent names and NACM rules as a password.
Every problem is a `ConfigError` naming the file and line.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from an_agent.errors import ConfigError

log = logging.getLogger(__name__)

_SCHEME = "scrypt"
_N, _R, _P = 2**14, 8, 1  # OWASP's minimum for scrypt; ~50 ms and 16 MiB per check
_SALT_BYTES = 16
_HASH_BYTES = 32
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")
_FIELDS = frozenset({"name", "password", "groups", "agents", "authorized-keys", "tokens"})
_TOKEN_SCHEME = "sha256"
_TOKEN_PREFIX = "an1_"
_TOKEN_HASH = re.compile(r"sha256\$[0-9a-f]{64}")


def new_token() -> tuple[str, str]:
    """A fresh bearer token and the hash to store in the users file (``tokens:``)."""
    token = _TOKEN_PREFIX + secrets.token_urlsafe(32)
    return token, hash_token(token)


def hash_token(token: str) -> str:
    """The stored form of a bearer token: ``sha256$<hex>``."""
    return f"{_TOKEN_SCHEME}${hashlib.sha256(token.encode('utf-8')).hexdigest()}"


def hash_password(password: str, *, n: int = _N, r: int = _R, p: int = _P) -> str:
    """A self-describing scrypt hash of ``password``: ``scrypt$N$r$p$salt$hash`` (base64, no padding)."""
    if not password:
        raise ConfigError("an empty password cannot be hashed")
    salt = os.urandom(_SALT_BYTES)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=_HASH_BYTES)
    return "$".join([_SCHEME, str(n), str(r), str(p), _b64(salt), _b64(digest)])


def is_hash(stored: str) -> bool:
    """True when ``stored`` is a hash made by `hash_password` (else it is a plain-text password)."""
    return _parse_hash(stored) is not None


def verify_password(stored: str, password: str) -> bool:
    """Whether ``password`` matches ``stored`` (a `hash_password` string, or plain text), in constant time."""
    if not password:
        return False
    parsed = _parse_hash(stored)
    if parsed is None:
        return hmac.compare_digest(stored.encode("utf-8"), password.encode("utf-8"))
    n, r, p, salt, expected = parsed
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=len(expected))
    return hmac.compare_digest(digest, expected)


def _parse_hash(stored: str) -> tuple[int, int, int, bytes, bytes] | None:
    parts = stored.split("$")
    if len(parts) != 6 or parts[0] != _SCHEME:
        return None
    try:
        n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
        salt, digest = _unb64(parts[4]), _unb64(parts[5])
    except ValueError:
        return None
    if n < 2 or n & (n - 1) or not 0 < r <= 64 or not 0 < p <= 16 or not salt or len(digest) < 16:
        return None
    return n, r, p, salt, digest


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (ValueError, base64.binascii.Error) as exc:  # type: ignore[attr-defined]
        raise ValueError(str(exc)) from None


@dataclass(frozen=True)
class User:
    """One entry of the users file. ``password`` is a hash or plain text (None: key login only)."""

    name: str
    password: str | None = None
    groups: frozenset[str] = frozenset()
    agents: frozenset[str] = frozenset()
    authorized_keys: tuple[str, ...] = ()
    """OpenSSH public key lines (``<type> <base64> [comment]``), parsed by the transport."""
    tokens: tuple[str, ...] = ()
    """Hashes of the user's A2A bearer tokens (`hash_token`)."""


@dataclass(frozen=True)
class Identity:
    """What the operation layer needs to build a principal: groups and the agent names allowed."""

    name: str
    groups: frozenset[str]
    agents: frozenset[str]


@dataclass
class UserDb:
    """The users the agent accepts, by name."""

    users: dict[str, User] = field(default_factory=dict)

    def identity(self, name: str) -> Identity | None:
        user = self.users.get(name)
        return None if user is None else Identity(user.name, user.groups, user.agents)

    def merged(self, other: UserDb, where: str = "users") -> UserDb:
        """Both sets of users; `ConfigError` when a name is in both."""
        both = sorted(set(self.users) & set(other.users))
        if both:
            raise ConfigError(f"{where}: user(s) {', '.join(both)} defined twice")
        return UserDb({**self.users, **other.users})

    def token_owner(self, token: str) -> str | None:
        """The user a bearer token belongs to, or None."""
        stored = hash_token(token)
        for user in self.users.values():
            if any(hmac.compare_digest(stored, known) for known in user.tokens):
                return user.name
        return None

    def passwords(self) -> Mapping[str, str]:
        """Stored passwords (hashes or plain text) by user name, for the SSH transport."""
        return {name: user.password for name, user in self.users.items() if user.password is not None}


def agent_users(
    names: Iterable[str], group: str = "operators", speaks_for: Mapping[str, Iterable[str]] | None = None
) -> tuple[UserDb, dict[str, str]]:
    """One user per agent of a lab, and their passwords by name.

    Each user is named after its agent, is in ``group`` and may send as that
    agent only (``agents: [name]``, plus the client names ``speaks_for``
    gives it), so task ownership and ``task-sendFrom`` checks hold between
    lab agents. Passwords are fresh random secrets for this run, kept in
    memory (stored as given: a random 32-byte secret needs no slow hash, and
    is never written anywhere).
    """
    extra = speaks_for or {}
    passwords = {name: secrets.token_urlsafe(32) for name in dict.fromkeys(names)}
    users = {
        name: User(name, pw, frozenset({group}), frozenset({name, *extra.get(name, ())}))
        for name, pw in passwords.items()
    }
    return UserDb(users), passwords


def load_users(path: Path) -> UserDb:
    """Read and check a users file; `ConfigError` with ``file:line`` for every kind of mistake."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read users file {path}: {exc}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(f"{where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if mode_is_shared(path):
        log.warning("users file %s is readable by other users; chmod 600 it", path)
    return _users_from(path, root)


def mode_is_shared(path: Path) -> bool:
    try:
        return bool(path.stat().st_mode & 0o077)
    except OSError:
        return False


def _users_from(path: Path, root: yaml.Node | None) -> UserDb:
    def fail(node: yaml.Node | None, message: str) -> ConfigError:
        line = node.start_mark.line + 1 if node is not None else 1
        return ConfigError(f"{path}:{line}: {message}")

    if not isinstance(root, yaml.MappingNode):
        raise fail(root, "expected a mapping with a 'users' list")
    top = {str(k.value): v for k, v in root.value}
    unknown = set(top) - {"users"}
    if unknown:
        raise fail(root, f"unknown top-level key(s) {sorted(unknown)}; only 'users' is allowed")
    users_node = top.get("users")
    if not isinstance(users_node, yaml.SequenceNode):
        raise fail(users_node or root, "'users' must be a list of {name, password, groups, agents, authorized-keys}")
    db = UserDb()
    for entry in users_node.value:
        if not isinstance(entry, yaml.MappingNode):
            raise fail(entry, "each user must be a mapping")
        fields: dict[str, tuple[yaml.Node, Any]] = {}
        for key_node, value_node in entry.value:
            key = str(key_node.value)
            if key not in _FIELDS:
                raise fail(key_node, f"unknown field {key!r}; allowed: {', '.join(sorted(_FIELDS))}")
            if key in fields:
                raise fail(key_node, f"field {key!r} given twice")
            fields[key] = (value_node, yaml.safe_load(yaml.serialize(value_node)))
        name_node, name = fields.get("name", (entry, None))
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise fail(name_node, f"user name {name!r} must be 1-64 of letters, digits, '_', '.', '@', '-'")
        if name in db.users:
            raise fail(name_node, f"user {name!r} is listed twice")
        password_node, password = fields.get("password", (entry, None))
        if password is not None and (not isinstance(password, str) or not password):
            raise fail(password_node, f"user {name!r}: password must be a non-empty string (an-agent users hash)")
        if password is not None and not is_hash(password):
            if password.startswith(_SCHEME + "$"):
                raise fail(
                    password_node, f"user {name!r}: malformed scrypt hash; make a new one with an-agent users hash"
                )
            log.warning(
                "%s:%d: user %r has a plain-text password; use 'an-agent users hash'",
                path,
                password_node.start_mark.line + 1,
                name,
            )
        keys = _strings(fields, "authorized-keys", name, fail)
        for key_line in keys:
            if len(key_line.split()) < 2:
                raise fail(fields["authorized-keys"][0], f"user {name!r}: expected '<key-type> <base64-key> [comment]'")
        tokens = _strings(fields, "tokens", name, fail)
        for token in tokens:
            if not _TOKEN_HASH.fullmatch(token):
                raise fail(
                    fields["tokens"][0], f"user {name!r}: tokens hold 'sha256$<hex>' hashes (an-agent users token)"
                )
        if password is None and not keys and not tokens:
            raise fail(entry, f"user {name!r} has neither a password, authorized-keys nor tokens: nobody could log in")
        db.users[name] = User(
            name,
            password,
            frozenset(_strings(fields, "groups", name, fail)),
            frozenset(_strings(fields, "agents", name, fail)),
            tuple(keys),
            tuple(tokens),
        )
    return db


def _strings(fields: dict[str, tuple[yaml.Node, Any]], key: str, user: str, fail: Any) -> list[str]:
    node, value = fields.get(key, (None, None))
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise fail(node, f"user {user!r}: {key} must be a list of non-empty strings")
    return list(value)
