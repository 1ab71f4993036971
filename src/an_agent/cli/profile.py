"""``an-agent profile``: read an agent's profile (the draft's CapabilityRequest)."""

from __future__ import annotations

import argparse
from typing import Any

from lxml import etree

from an_agent.cli._common import add_connection_options, connect, print_json, print_table


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "profile",
        help="show an agent's profile (/irtf-agent:agent)",
        description="Fetch /irtf-agent:agent with <get> (commuType CapabilityRequest) and print it: a table by "
        "default, RFC 7951-style JSON with --json, the NETCONF XML with --xml.",
    )
    add_connection_options(parser)
    fmt = parser.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print JSON")
    fmt.add_argument("--xml", action="store_true", help="print the XML as received")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    with connect(args) as client:
        profile = client.profile()
    if args.json:
        print_json(profile.to_dict())
        return 0
    if args.xml:
        print(etree.tostring(profile.to_xml(), pretty_print=True, encoding="unicode"), end="")
        return 0
    cap = profile.capability
    print_table(
        ["field", "value"],
        [
            ["name", profile.name],
            ["alias", profile.alias],
            ["description", profile.description],
            ["type", profile.type],
            ["version", profile.version],
            ["provider", profile.provider],
            ["domain", profile.domain],
            ["management-object", profile.management_object],
            ["streaming", cap.streaming],
            ["push-notifications", cap.push_notifications],
            ["negotiate", ", ".join(cap.negotiate)],
            ["authentication", ", ".join(m.scheme or m.accessinfo_id for m in profile.auth_methods)],
        ],
    )
    if profile.skills:
        print()
        print_table(
            ["skill", "tags", "input", "output", "description"],
            [
                [s.name, ", ".join(s.tags), ", ".join(s.input_modes), ", ".join(s.output_modes), s.description]
                for s in profile.skills
            ],
        )
    return 0
