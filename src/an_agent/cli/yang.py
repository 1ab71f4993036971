"""``an-agent yang check|tree``: the shipped YANG modules, checked and drawn."""

from __future__ import annotations

import argparse
from typing import Any

from an_agent.cli._common import print_json


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "yang",
        help="check or print the YANG modules the agent serves",
        description="The YANG modules shipped with an-agent (irtf-agent, agent-message, ...).",
    )
    sub = parser.add_subparsers(dest="yang_command", metavar="ACTION", required=True)
    check = sub.add_parser(
        "check",
        help="run pyang --strict, pyang --lint and yanglint on the modules",
        description="Run pyang --strict, pyang --lint and yanglint on every shipped module. Exit 0 when no tool "
        "reports an error; lint findings kept on purpose (the draft's camelCase names) are listed with the reason.",
    )
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.set_defaults(handler=run_check)
    tree = sub.add_parser(
        "tree", help="print the modules as a pyang tree", description="Print the pyang tree of the modules."
    )
    tree.set_defaults(handler=run_tree)


def run_check(args: argparse.Namespace) -> int:
    from an_agent.yang.tools import check

    report = check()
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.to_text())
    return 0 if report.ok else 1


def run_tree(args: argparse.Namespace) -> int:
    from an_agent.yang.tools import tree

    print(tree(), end="")
    return 0
