"""``an-agent schema get`` and ``schema patches``: the templates an agent serves now, and patch decisions.

  schema get --agent HOST:PORT                 every template the agent serves, with its patches
  schema get SCENARIO --agent HOST:PORT        the template negotiated for this client (get-schema-template)
  schema patches list --agent HOST:PORT        patches: proposed ones wait for a schema administrator
  schema patches approve|reject PATCH          publish or drop a proposed patch (schema administrators)
  schema patches withdraw PATCH KEY            withdraw a published key (schema administrators)
  schema card [--profile FILE] [--templates DIR]   the A2A agent card a profile and templates make (offline)

Over NETCONF, as the connection options' user; ``--json`` prints one JSON document.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from an_agent.cli._common import add_connection_options, connect, print_json, print_table
from an_agent.cli.payload import add_version_option
from an_agent.errors import ConfigError


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``get`` and ``patches`` to the ``schema`` command."""
    p = commands.add_parser(
        "get",
        help="the templates a live agent serves",
        description="Without SCENARIO: every template the agent serves now, with its patches (state of "
        "/agent/schema-templates). With SCENARIO: the template negotiated for this client (get-schema-template), "
        "stating --schema-version; patches that apply to --client-id are included.",
    )
    _add_agent_options(p)
    p.add_argument("scenario", metavar="SCENARIO", nargs="?", help="scenario name or schema_id")
    add_version_option(p)
    p.add_argument("--client-id", help="whose patches apply (default: the NETCONF user)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_get)

    patches = commands.add_parser(
        "patches",
        help="list and decide schema patches (schema administrators)",
        description="Schema patches made by self-evolution from recurring 'other' content. Approving, rejecting "
        "and withdrawing need a schema administrator of the agent (an-agent serve --schema-admin NAME); others "
        "get access-denied (exit 1).",
    )
    actions = patches.add_subparsers(dest="patch_command", metavar="ACTION", required=True)
    p = actions.add_parser("list", help="list patches", description="List every patch the agent shows.")
    _add_agent_options(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_patches_list)
    for decision, text in (("approve", "publish a proposed patch"), ("reject", "reject a proposed patch")):
        p = actions.add_parser(decision, help=text, description=text[0].upper() + text[1:] + ".")
        _add_agent_options(p)
        p.add_argument("patch_id", metavar="PATCH")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.set_defaults(handler=cmd_decide, decision=decision, key_name=None)
    p = actions.add_parser(
        "withdraw",
        help="withdraw a published key",
        description="Withdraw a key of a published patch now; it stays accepted, with a warning, for the "
        "compatibility window.",
    )
    _add_agent_options(p)
    p.add_argument("patch_id", metavar="PATCH")
    p.add_argument("key_name", metavar="KEY")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_decide, decision="withdraw")


def register_card(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``card`` to the ``schema`` command."""
    p = commands.add_parser(
        "card",
        help="print the A2A agent card of a profile and templates",
        description="Print the A2A v1 agent card (JSON) that a profile and the schema templates make: skills from "
        "the profile, a JSON Schema 2020-12 per template in the input/output-schemas extension, the JSON-RPC URL "
        "and the NETCONF face as a custom binding. Offline: nothing is contacted.",
    )
    p.add_argument("--profile", type=Path, metavar="FILE", help="agent profile (default: the built-in example)")
    p.add_argument("--templates", type=Path, action="append", default=[], metavar="DIR", help="operator templates")
    p.add_argument("--url", default="http://127.0.0.1:8080/", help="the JSON-RPC URL to state")
    p.add_argument("--netconf", default="ssh://127.0.0.1:8830", metavar="URL", help="the NETCONF face to state")
    p.set_defaults(handler=cmd_card)


def cmd_card(args: argparse.Namespace) -> int:
    from an_agent.a2a.card import CardOptions, build_card
    from an_agent.model import AgentProfile
    from an_agent.schemas.registry import TemplateRegistry
    from an_agent.server import example_profile

    profile = AgentProfile.load(args.profile) if args.profile else example_profile()
    templates = TemplateRegistry.default(args.templates).templates()
    print_json(build_card(profile, templates, CardOptions(jsonrpc_url=args.url, netconf_url=args.netconf)))
    return 0


def _add_agent_options(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    parser.add_argument("--agent", metavar="HOST:PORT", help="the agent's NETCONF address (overrides --host/--port)")


def _connect(args: argparse.Namespace) -> Any:
    if args.agent:
        host, sep, port = args.agent.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ConfigError(f"--agent {args.agent!r}: expected HOST:PORT, e.g. 127.0.0.1:8830")
        args.host, args.port = host.strip("[]"), int(port)
    return connect(args)


def cmd_get(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        if args.scenario is None:
            templates = client.schemas.live_templates()
        else:
            answer = client.schemas.template(args.scenario, args.schema_versions, client_id=args.client_id)
    if args.scenario is None:
        if args.json:
            print_json(templates)
            return 0
        print_table(
            ["schema_id", "scenario", "keys", "patches"],
            [
                (t["schema_id"], t["scenario"], len(t["keys"]), ", ".join(p["patch_id"] for p in t["patches"]))
                for t in templates
            ],
        )
        return 0
    if args.json:
        print_json(
            {
                "schema_id": answer.schema_id,
                "language": answer.language,
                "applied_patches": list(answer.applied_patches),
                "template": answer.template.to_dict(),
            }
        )
        return 0
    patches = f", patches {', '.join(answer.applied_patches)}" if answer.applied_patches else ""
    print(f"{answer.schema_id}  (scenario {answer.template.scenario}, language {answer.language}{patches})\n")
    for key in answer.template.keys:
        flags = "required" if key.required else f"optional, default {json.dumps(key.default_value)}"
        flags += ", experimental" if key.experimental else ""
        flags += ", deprecated" if key.deprecated else ""
        print(f"{key.key_name}: {key.key_type}, {flags}")
        print(textwrap.indent(textwrap.fill(key.semantic_description, 100), "    "))
    return 0


def cmd_patches_list(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        templates = client.schemas.live_templates()
    rows = [{"schema_id": t["schema_id"], **p} for t in templates for p in t["patches"]]
    if args.json:
        print_json(rows)
        return 0
    if not rows:
        print("no schema patches", file=sys.stderr)
        return 0
    print_table(
        ["patch_id", "schema_id", "state", "new keys", "refined keys", "expires"],
        [
            (
                r["patch_id"],
                r["schema_id"],
                r["state"],
                ", ".join(r["new_keys"]),
                ", ".join(r["modified_keys"]),
                r["expiration"],
            )
            for r in rows
        ],
    )
    return 0


def cmd_decide(args: argparse.Namespace) -> int:
    with _connect(args) as client:
        state = client.schemas.decide_patch(args.decision, args.patch_id, args.key_name)
    if args.json:
        print_json({"patch_id": args.patch_id, "key_name": args.key_name, "decision": args.decision, "state": state})
    elif args.decision == "withdraw":
        print(f"{args.patch_id}: key {args.key_name} withdrawn")
    else:
        print(f"{args.patch_id}: {state}")
    return 0
