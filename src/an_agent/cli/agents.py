"""``an-agent agents``: find agents in a directory agent (``an-agent serve --directory``).

  an-agent agents find --skill energy --directory 127.0.0.1:8830 [--domain D] [--schema S] [--provider P] [--json]

Every criterion given must match (case-insensitive; a skill matches a skill name or tag, a schema a
schema-id or its scenario). Exit 0 with the agents found, 1 when none fits (the criteria are said), 3
when the directory cannot be reached.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from an_agent.errors import ConfigError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "agents",
        help="find agents registered in a directory agent",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="agents_command", metavar="COMMAND", required=True)
    find = commands.add_parser("find", help="the registered agents that fit skill/domain/schema/provider")
    find.add_argument("--skill", help="a skill name or tag")
    find.add_argument("--domain", help="the agent's domain (e.g. Wireless)")
    find.add_argument("--schema", help="a schema-id or scenario the agent accepts")
    find.add_argument("--provider", help="the agent's provider")
    find.add_argument(
        "--directory",
        metavar="HOST:PORT",
        default=os.environ.get("AN_AGENT_DIRECTORY"),
        help="the directory agent's NETCONF address (or AN_AGENT_DIRECTORY)",
    )
    find.add_argument("--user", default=os.environ.get("AN_AGENT_USER", "admin"), help="SSH user (default: admin)")
    find.add_argument(
        "--password", default=os.environ.get("AN_AGENT_PASSWORD", "admin"), help="SSH password (or AN_AGENT_PASSWORD)"
    )
    find.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a reply (default: 30)")
    find.add_argument("--json", action="store_true", help="print the agents as a JSON list")
    find.set_defaults(handler=run_find)


def parse_address(text: str | None) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) -> (host, port); `ConfigError` otherwise."""
    if not text:
        raise ConfigError("give the directory as --directory HOST:PORT (or set AN_AGENT_DIRECTORY)")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise ConfigError(f"--directory {text!r}: expected HOST:PORT")
    return host.strip("[]"), int(port)


def run_find(args: argparse.Namespace) -> int:
    from an_agent.model.directory import AgentQuery
    from an_agent.nc.directory_client import DirectoryLogin

    host, port = parse_address(args.directory)
    query = AgentQuery(args.skill, args.domain, args.schema, args.provider)
    with DirectoryLogin(host, port, args.user, args.password, args.timeout).connect() as directory:
        found = directory.find(query)
    if args.json:
        from an_agent.cli._common import print_json

        print_json([entry.to_dict() for entry in found])
    elif found:
        from an_agent.cli._common import print_table

        print_table(
            ["agent", "netconf", "a2a", "domain", "provider", "skills", "schemas"],
            [
                [
                    e.name,
                    f"{e.address}:{e.port}",
                    e.a2a_url or "-",
                    e.domain or "-",
                    e.provider or "-",
                    ",".join(e.skills),
                    ",".join(e.schemas) or "-",
                ]
                for e in found
            ],
        )
    if not found:
        print(f"an-agent: no agent in the directory at {host}:{port} fits {query.describe()}", file=sys.stderr)
        return 1
    return 0
