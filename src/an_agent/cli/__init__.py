"""The ``an-agent`` command line.

Each command group lives in its own module of this package and exposes
``register(subparsers)``; `main` wires them together. Output conventions for
every command: a human table by default, ``--json`` for scripts (one JSON
document on stdout), messages for people on stderr, exit code 0 on success,
1 when the request was refused (e.g. an <rpc-error>), 2 for usage or input
errors, 3 when the agent could not be reached.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from an_agent.errors import AnAgentError, ConfigError, RpcError, SchemaError, TransportError

# Command-group modules, in the order their commands appear in --help.
_GROUPS = ("serve", "users", "profile", "task", "agents", "yang", "schema", "lab", "trace", "copilot")

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="an-agent",
        description="Autonomous-network agents that serve draft-wang-nmrg-magent-im over NETCONF "
        "and talk to each other as NETCONF clients.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _GROUPS:
        try:
            module = importlib.import_module(f"an_agent.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"an_agent.cli.{name}":
                continue  # that command group is not part of this build
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
        return code
    except RpcError as exc:
        print(f"an-agent: the agent refused the request: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except SchemaError as exc:
        print(f"an-agent: {exc}", file=sys.stderr)
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
        return EXIT_REFUSED
    except TransportError as exc:
        print(f"an-agent: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    except ConfigError as exc:
        print(f"an-agent: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AnAgentError as exc:
        print(f"an-agent: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
