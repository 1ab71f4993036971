"""``an-agent users``: make password hashes and check a users file for ``an-agent serve --users FILE``."""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import Any

from an_agent.errors import ConfigError

_DESCRIPTION = """\
Manage the users file of `an-agent serve --users FILE`:

  users:
    - name: alice
      password: <output of 'an-agent users hash'>
      groups: [operators]          # admin, operators, schema-admin or your own NACM groups
      agents: [service-agent]      # the task-sendFrom values alice may use
      authorized-keys: ["ssh-ed25519 AAAA... alice@laptop"]
      tokens: ["sha256$..."]       # A2A bearer tokens: the hash 'an-agent users token' prints

'hash' reads the password from the terminal (twice) or, with --stdin, from the
first line of standard input, so it never appears in the process list.
'token' makes a bearer token for the A2A face (Authorization: Bearer TOKEN): it prints
the token once (give it to the user) and the hash to add to the user's 'tokens'.
'check' loads a users file and lists its users, or says what is wrong and where.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "users",
        help="password hashes and users files for 'serve --users'",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="users_command", metavar="COMMAND", required=True)
    hashing = commands.add_parser("hash", help="print a scrypt hash of a password for the users file")
    hashing.add_argument("--stdin", action="store_true", help="read the password from the first line of stdin")
    hashing.add_argument("--json", action="store_true", help='print {"password": "<hash>"}')
    hashing.set_defaults(handler=run_hash)
    token = commands.add_parser("token", help="make an A2A bearer token and the hash for the users file")
    token.add_argument("--json", action="store_true", help='print {"token": ..., "hash": ...}')
    token.set_defaults(handler=run_token)
    check = commands.add_parser("check", help="validate a users file and list its users")
    check.add_argument("file", type=Path, help="the users file (YAML)")
    check.add_argument("--json", action="store_true", help="print the users (without passwords) as JSON")
    check.set_defaults(handler=run_check)


def run_hash(args: argparse.Namespace) -> int:
    from an_agent.access.users import hash_password

    if args.stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = getpass.getpass("password: ")
        if getpass.getpass("again: ") != password:
            raise ConfigError("the two passwords differ")
    if not password:
        raise ConfigError("the password is empty")
    hashed = hash_password(password)
    if args.json:
        from an_agent.cli._common import print_json

        print_json({"password": hashed})
    else:
        print(hashed)
    return 0


def run_token(args: argparse.Namespace) -> int:
    from an_agent.access.users import new_token

    token, hashed = new_token()
    if args.json:
        from an_agent.cli._common import print_json

        print_json({"token": token, "hash": hashed})
    else:
        print(f"token (give it to the user; it is not stored): {token}")
        print(f"add to the user's tokens in the users file:    {hashed}")
    return 0


def run_check(args: argparse.Namespace) -> int:
    from an_agent.access.users import is_hash, load_users

    db = load_users(args.file)
    users = sorted(db.users.values(), key=lambda user: user.name)

    def password_kind(stored: str | None) -> str:
        return "none" if stored is None else ("hash" if is_hash(stored) else "PLAIN TEXT")

    if args.json:
        from an_agent.cli._common import print_json

        print_json(
            [
                {
                    "name": u.name,
                    "password": password_kind(u.password),
                    "groups": sorted(u.groups),
                    "agents": sorted(u.agents),
                    "keys": len(u.authorized_keys),
                    "tokens": len(u.tokens),
                }
                for u in users
            ]
        )
    else:
        from an_agent.cli._common import print_table

        print_table(
            ["user", "password", "groups", "agents", "keys", "tokens"],
            [
                [
                    u.name,
                    password_kind(u.password),
                    ",".join(sorted(u.groups)),
                    ",".join(sorted(u.agents)),
                    len(u.authorized_keys),
                    len(u.tokens),
                ]
                for u in users
            ],
        )
    return 0
