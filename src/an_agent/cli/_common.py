"""Options and output helpers shared by the client-side commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from an_agent.nc.agent_client import AgentClient


def add_connection_options(parser: argparse.ArgumentParser) -> None:
    """--host/--port/--user/--password/--key/--timeout, defaulting from AN_AGENT_* environment variables."""
    group = parser.add_argument_group("connection")
    group.add_argument(
        "--host", default=os.environ.get("AN_AGENT_HOST", "127.0.0.1"), help="agent address (default: 127.0.0.1)"
    )
    group.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("AN_AGENT_PORT", "8830")),
        help="agent NETCONF port (default: 8830)",
    )
    group.add_argument("--user", default=os.environ.get("AN_AGENT_USER", "admin"), help="SSH user (default: admin)")
    group.add_argument(
        "--password",
        default=os.environ.get("AN_AGENT_PASSWORD", "admin"),
        help="SSH password (default: admin; or set AN_AGENT_PASSWORD)",
    )
    group.add_argument("--key", metavar="FILE", help="SSH private key file instead of a password")
    group.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a reply (default: 30)")


def connect(args: argparse.Namespace) -> AgentClient:
    from an_agent.nc.agent_client import AgentClient

    return AgentClient.connect(
        host=args.host,
        port=args.port,
        username=args.user,
        password=None if args.key else args.password,
        key_filename=args.key,
        timeout=args.timeout,
    )


def print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, sort_keys=False, default=str)
    sys.stdout.write("\n")


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A plain aligned table; empty cells print as '-'."""
    cells = [[("-" if v is None or v == "" else str(v)) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    print("  ".join(h.upper().ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())


def quiet_transport_logs() -> None:
    """Warnings to stderr, without paramiko's and ncclient's: a peer closing its SSH session at shutdown
    is normal, and they log it as an error."""
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    for name in ("ncclient", "paramiko"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
