"""``an-agent schema``: scenario schema templates, NL -> payload mapping, and the evolution replay tool.

Commands (human output by default, ``--json`` for one JSON document on stdout):

  schema list                      the templates shipped with an-agent
  schema show SCENARIO             one template (scenario name or schema_id), in the draft's format
  schema validate FILE             check a data-param envelope {"schema_id", "payload"} offline
  schema map --scenario S TEXT     map a natural-language request to a payload (offline embeddings)
  schema replay FILE.jsonl         what schema evolution would do with logged payloads (virtual clock)
  schema get / schema patches      a live agent's templates and patch decisions (`an_agent.cli.schema_live`)

The embedding model (torch, sentence-transformers) is imported only by ``map`` and ``replay``.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from an_agent.cli import schema_live
from an_agent.cli._common import print_json, print_table
from an_agent.errors import ConfigError, SchemaError

EXIT_OK = 0
EXIT_REFUSED = 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="scenario schema templates, NL mapping, evolution replay",
        description="Scenario schema templates (draft-zhou-structured-data-schema-interaction), natural-language "
        "mapping to structured payloads, and the offline replay of schema self-evolution.",
    )
    commands = parser.add_subparsers(dest="schema_command", metavar="SUBCOMMAND", required=True)

    p = commands.add_parser("list", help="list the shipped templates", description="List the scenario templates.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=cmd_list)

    p = commands.add_parser("show", help="print one template", description="Print a template in the draft's format.")
    p.add_argument("scenario", metavar="SCENARIO", help="scenario name (fault_diagnosis) or schema_id")
    p.add_argument("--json", action="store_true", help="print the template JSON")
    p.set_defaults(handler=cmd_show)

    p = commands.add_parser(
        "validate",
        help="validate a payload envelope offline",
        description='Validate a data-param envelope {"schema_id": ..., "payload": {...}} against its base template. '
        "Exit 0 when valid, 1 with one line per offending key otherwise.",
    )
    p.add_argument("file", metavar="FILE", help="JSON file, or - for stdin")
    p.add_argument("--json", action="store_true", help="print the accepted payload and warnings as JSON")
    p.set_defaults(handler=cmd_validate)

    p = commands.add_parser(
        "map",
        help="map a natural-language request to a payload",
        description="Map a request to a structured payload using the template's semantic descriptions: identifiers, "
        "quantities, dates and named values are extracted, the rest is matched by embedding similarity to the "
        "keys' descriptions and examples; clauses below the confidence threshold go to 'other'. Works offline. "
        "Exit 1 when a required key could not be filled.",
    )
    p.add_argument("--scenario", required=True, help="scenario name or schema_id")
    p.add_argument("text", metavar="TEXT", help="the request, in quotes")
    p.add_argument("--threshold", type=float, default=None, help="confidence needed to map a clause (default 0.45)")
    p.add_argument("--json", action="store_true", help="print envelope, assignments and 'other' as JSON")
    _add_model_option(p)
    p.set_defaults(handler=cmd_map)

    p = commands.add_parser(
        "replay",
        help="replay logged payloads through schema evolution",
        description='Read JSON lines {"timestamp", "client_id", "schema_id", "payload"} (other fields ignored), run '
        "them through the evolution engine on a virtual clock taken from the timestamps, and print the clusters, "
        "patches and events that would result. No line is dropped in silence: lines that are not JSON objects, lack a "
        "field, name an unknown schema_id or fail validation are counted as refused and listed with their 1-based "
        "line number and the reason; blank lines are counted. Every setting can be overridden. Progress goes to "
        "stderr.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("file", metavar="FILE.jsonl", help="the payload log (JSON lines), or - for stdin")
    p.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (lines, accepted, rejected [{line, reason}], blank_lines, fragments, clusters "
        "with cohesion and core_share, patches, events)",
    )
    p.add_argument("--all-clusters", action="store_true", help="human output: also list one-fragment clusters")
    _add_model_option(p)
    _add_threshold_options(p)
    p.set_defaults(handler=cmd_replay)

    schema_live.register(commands)
    schema_live.register_card(commands)
    for name in ("list", "show", "validate"):
        commands.choices[name].add_argument(
            "--templates",
            type=Path,
            action="append",
            default=[],
            metavar="DIR",
            help="also an operator's templates (*.json in DIR; repeatable), checked first",
        )


def _add_threshold_options(parser: argparse.ArgumentParser) -> None:
    from an_agent.evolution.config import config_fields

    group = parser.add_argument_group("evolution settings (defaults: DESIGN.md, docs/evolution.md)")
    for name, kind, default, help_text in config_fields():
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"cfg_{name}",
            type=kind,
            default=argparse.SUPPRESS,  # absent unless given: the help states the engine's default once
            metavar=kind.__name__.upper(),
            help=f"{help_text} (default: {default})",
        )


def cmd_list(args: argparse.Namespace) -> int:
    from an_agent.schemas.registry import TemplateRegistry

    templates = TemplateRegistry.default(args.templates).templates()
    if args.json:
        print_json([{"schema_id": t.schema_id, "scenario": t.scenario, "keys": list(t.key_names)} for t in templates])
        return EXIT_OK
    print_table(
        ["schema_id", "scenario", "keys", "required"],
        [
            (t.schema_id, t.scenario, len(t.keys), ", ".join(k.key_name for k in t.keys if k.required))
            for t in templates
        ],
    )
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from an_agent.schemas.registry import TemplateRegistry

    template = TemplateRegistry.default(args.templates).resolve(args.scenario)
    if args.json:
        print_json(template.to_dict())
        return EXIT_OK
    print(f"{template.schema_id}  (scenario {template.scenario})\n")
    for key in template.keys:
        flags = "required" if key.required else f"optional, default {json.dumps(key.default_value)}"
        print(f"{key.key_name}: {key.key_type}, {flags}")
        print(textwrap.indent(textwrap.fill(key.semantic_description, 100), "    "))
    return EXIT_OK


def _read_text(name: str) -> str:
    try:
        return sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {name}: {exc.strerror}") from None


def cmd_validate(args: argparse.Namespace) -> int:
    from an_agent.schemas.registry import TemplateRegistry
    from an_agent.schemas.validate import parse_envelope, validate_payload

    envelope = parse_envelope(_read_text(args.file))
    schema_id = envelope.get("schema_id") if isinstance(envelope, dict) else None
    if not isinstance(schema_id, str):
        raise SchemaError(
            'the file is not a payload envelope {"schema_id": ..., "payload": {...}}',
            ["schema_id: missing or not a string"],
        )
    template = TemplateRegistry.default(args.templates).resolve(schema_id)
    result = validate_payload(template, envelope)
    if args.json:
        print_json(
            {
                "schema_id": result.schema_id,
                "values": result.values,
                "other": list(result.other.fragments),
                "warnings": list(result.warnings),
            }
        )
    else:
        print(
            f"valid {result.schema_id} payload ({len(result.values)} keys, {len(result.other.fragments)} "
            f"'other' fragments)"
        )
        for warning in result.warnings:
            print(f"  warning: {warning}", file=sys.stderr)
    return EXIT_OK


def _add_model_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        metavar="DIR",
        type=Path,
        default=None,
        help="another sentence-transformers model directory on disk (mean or CLS pooling) instead of the bundled "
        "all-MiniLM-L6-v2, for measurements: every similarity threshold was calibrated on MiniLM "
        "(docs/evolution.md, 'A stronger embedding model, measured'). Nothing is downloaded.",
    )


def _embedder(model: Path | None = None) -> Any:
    from an_agent.evolution.embedder import MiniLMEmbedder

    embedder = MiniLMEmbedder(path=model)
    print(f"an-agent: loading the embedding model{f' from {model}' if model else ''} ...", file=sys.stderr)
    embedder.load()
    return embedder


def cmd_map(args: argparse.Namespace) -> int:
    from an_agent.schemas.mapping import DEFAULT_THRESHOLD, map_text
    from an_agent.schemas.registry import TemplateRegistry

    template = TemplateRegistry.default().resolve(args.scenario)
    threshold = DEFAULT_THRESHOLD if args.threshold is None else args.threshold
    result = map_text(template, args.text, _embedder(args.model), now=time.time(), threshold=threshold)
    if args.json:
        print_json(result.to_dict())
    else:
        print_json(result.envelope)
        for a in result.assignments:
            print(f"  {a.key} <- {a.clause!r} ({a.how}, confidence {a.confidence:.2f})", file=sys.stderr)
        for clause in result.other:
            print(f"  other <- {clause!r} (no key above the confidence threshold {threshold})", file=sys.stderr)
    if result.missing_required:
        print(f"an-agent: required keys not found in the text: {', '.join(result.missing_required)}", file=sys.stderr)
        return EXIT_REFUSED
    return EXIT_OK


def cmd_replay(args: argparse.Namespace) -> int:
    from an_agent.evolution.config import EvolutionConfig
    from an_agent.evolution.replay import replay

    overrides = {name[4:]: value for name, value in vars(args).items() if name.startswith("cfg_")}
    config = EvolutionConfig().with_overrides(overrides)
    lines = _read_text(args.file).splitlines()
    embedder = _embedder(args.model)
    last = [0.0]

    # On a terminal one line rewritten in place; in a log (not a TTY) one line per report.
    in_place = sys.stderr.isatty()

    def progress(done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - last[0] >= 1.0:
            last[0] = now
            print(
                f"{chr(13) if in_place else ''}an-agent: replayed {done}/{total} usable lines",
                end="\n" if done == total or not in_place else "",
                file=sys.stderr,
                flush=True,
            )

    report = replay(lines, embedder, config=config, progress=progress).to_dict()
    if args.json:
        print_json(report)
        return EXIT_OK
    _print_replay(report, args.all_clusters)
    return EXIT_OK


def _print_replay(report: dict[str, Any], all_clusters: bool) -> None:
    clusters = report["clusters"]
    shown = [c for c in clusters if all_clusters or c["size"] > 1 or c["state"] not in ("collecting", "evicted")]
    rejected = report["rejected"]
    blank = f", {report['blank_lines']} blank" if report["blank_lines"] else ""
    print(
        f"{report['lines']} lines read: {report['accepted']} accepted, {len(rejected)} refused{blank}; "
        f"{report['fragments']} fragments, {len(clusters)} clusters, {len(report['patches'])} patches\n"
    )
    if rejected:
        print(f"refused lines ({len(rejected)}):")
        for item in rejected:
            print(f"  line {item['line']}: {item['reason']}")
        print()
    print_table(
        ["cluster", "schema_id", "size", "clients", "heat", "cohesion", "core", "state", "lines"],
        [
            (
                c["cluster_id"],
                c["schema_id"],
                c["size"],
                c["distinct_clients"],
                f"{c['heat']:.1f}",
                f"{c['cohesion']:.2f}",
                f"{c['core_share']:.2f}",
                c["state"],
                _members(c["member_lines"]),
            )
            for c in shown
        ],
    )
    if len(shown) < len(clusters):
        print(f"({len(clusters) - len(shown)} one-fragment clusters not shown; --all-clusters lists them)")
    for patch in report["patches"]:
        scope = f"client {patch['client_id']}" if patch["client_id"] else "all clients"
        print(
            f"\n{patch['patch_id']} ({patch['state']}, {scope}) from {patch['cluster_id']} at {patch['timestamp']}, "
            f"expires {patch['expiration']}"
        )
        for key in patch["new_keys"]:
            flag = " experimental" if key["experimental"] else ""
            print(f"  + {key['key_name']}: {key['key_type']}{flag}")
            print(textwrap.indent(textwrap.fill(key["semantic_description"], 100), "      "))
        for key in patch["modified_keys"]:
            print(f"  ~ {key['key_name']}: {key['key_type']} refined (description, allowed values)")
            print(textwrap.indent(textwrap.fill(key["semantic_description"], 100), "      "))
    events = [e for e in report["events"] if e["kind"] != "clusters-merged"]
    if events:
        print("\nevents:")
        for event in events:
            what = event.get("key_name") or event.get("cluster_id") or event.get("line", "")
            print(f"  {event.get('time', '-')}  {event['kind']:<24} {what}  {event.get('detail', '')}".rstrip())


def _members(members: list[int], limit: int = 12) -> str:
    text = ",".join(str(m) for m in members[:limit])
    return text + (",..." if len(members) > limit else "")
