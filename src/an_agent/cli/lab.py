"""``an-agent lab run|up|down|generate|export|check``: multi-agent labs described by topology files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from an_agent.cli import EXIT_OK, EXIT_REFUSED, observe
from an_agent.cli._common import print_json, quiet_transport_logs

DEFAULT_RUN_DIR = Path("state/lab")

_DESCRIPTION = """\
Multi-agent labs: every agent of a topology file is a process of its own and a
NETCONF server on its own 127.0.0.1 port, with a behaviour for its role (cross-domain fault, RAN fault, IP
fault, optimization, energy saving, complaint). The agents talk to each other only
over NETCONF (task assignment, task-negotiate, <get>, notifications) while a
deterministic simulated network plays the topology's scenario on a simulated clock.
The format of topology files is described in topologies/README.md.
"""

_RUN = """\
Start every agent, play the scenario, wait until the closed loop is over, stop
everything, then print the timeline (each NETCONF operation between agents with
task statuses, and the agents' notes) and the outcome (root cause found, actions,
KPIs before/during/after, time to restore, comparison with handling without
collaboration, NETCONF operation counts, closed-loop checks). Progress goes to
stderr while it runs. Exit code 0 when the closed loop is complete, 1 when a check
fails, 2 for a bad topology file.
"""


NETNS_HELP = (
    "run every agent in a Linux network namespace of its own on a lab bridge, with an address from "
    "198.18.0.0/15, no route out of the lab and peers known by name (needs root and iproute2; "
    "see docs/howto/netns.md)"
)
PACE_HELP = (
    "paced time: the lab's clock follows the wall clock at N simulated seconds per wall second (1 = real "
    "time) instead of jumping ahead whenever the lab's own agents are idle, so that participants the lab "
    "cannot see (outside agents on its element managers, a person) act in the same time; default: lock-step"
)
A2A_TLS_HELP = (
    "A2A faces (of agents with an a2a_port) over HTTPS with a certificate per agent made by the lab in the run "
    "directory, verified against those only (trust bundle RUN_DIR/a2a-trust.pem; default on); off: plain HTTP "
    "on the lab's addresses"
)
IN_PROCESS_HELP = (
    "run every agent inside this one process (the default is a process per agent, as on separate hosts); "
    "quicker to start, for tests and profiling"
)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lab",
        help="run multi-agent labs from topology files",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="lab_command", metavar="ACTION", required=True)

    run = sub.add_parser(
        "run",
        help="run a topology's scenario to the end and report",
        description=_RUN,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("topology", type=Path, metavar="TOPOLOGY", help="topology file (YAML)")
    run.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (agents, messages, tasks, outcome, kpis, baseline, run)",
    )
    run.add_argument("--report", type=Path, metavar="DIR", help="also write a self-contained HTML report into DIR")
    run.add_argument(
        "--state-dir",
        type=Path,
        metavar="DIR",
        help="keep the agents' databases in DIR (default: a temporary directory, removed)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress on stderr")
    run.add_argument(
        "--trace",
        metavar="TRACE_ID",
        help="print only the timeline of this trace (a fault's or ticket's: the timeline shows their ids; a "
        "unique start is enough); the HTML report has the same choice",
    )
    run.add_argument("--in-process", action="store_true", help=IN_PROCESS_HELP)
    run.add_argument("--netns", action="store_true", help=NETNS_HELP)
    run.add_argument("--a2a-tls", choices=["on", "off"], default="on", help=A2A_TLS_HELP)
    run.add_argument(
        "--chaos",
        action="append",
        default=[],
        metavar="FAULT",
        help="a fault of the lab itself (repeatable; SECONDS are simulated, after the start): kill:AGENT@SECONDS "
        "SIGKILLs AGENT's process, the lab restarts it from its state directory and its tasks resume; "
        "partition:A,B@SECONDS+DURATION (with --netns) drops all traffic between agents A and B for DURATION. "
        "The result lists each event and the time to restore with and without it (the run is played once more "
        "without chaos, in one process, to compare)",
    )
    run.add_argument("--pace", type=_pace, metavar="N", help=PACE_HELP)
    observe.add_otlp(run)
    run.add_argument(
        "--stall-timeout",
        type=float,
        default=60.0,
        metavar="S",
        help="give up when no agent makes progress for S real seconds (default: 60)",
    )
    run.set_defaults(handler=cmd_run)

    from an_agent.cli import lab_soak

    lab_soak.register(sub, NETNS_HELP)

    up = sub.add_parser(
        "up",
        help="start a topology's agents and keep them running (lab down stops them)",
        description="Start the agents of TOPOLOGY from a background lab process (which keeps the simulated "
        "clock and network; each agent a process of its own), on the ports the "
        "topology gives them (a free port where it gives none), play its scenario (unless --idle) "
        "and keep them running for exploration with an-agent profile/task, netconf-console2 or "
        "yangcli (user admin, password admin). Prints each agent's address.",
    )
    up.add_argument("topology", type=Path, metavar="TOPOLOGY", help="topology file (YAML)")
    up.add_argument(
        "--run-dir",
        type=Path,
        default=DEFAULT_RUN_DIR,
        help=f"where the lab keeps its state file, log and databases (default: {DEFAULT_RUN_DIR})",
    )
    up.add_argument("--idle", action="store_true", help="do not play the scenario (a healthy network)")
    up.add_argument("--json", action="store_true", help="print the agents' addresses as JSON")
    up.add_argument("--foreground", action="store_true", help="run in this process until SIGTERM or Ctrl-C")
    up.add_argument("--in-process", action="store_true", help=IN_PROCESS_HELP)
    up.add_argument(
        "--host",
        metavar="NAME",
        help="a lab over several machines (the topology's hosts): start only this host's agents; the first "
        "host also runs the lab's clock, network and scenario (start it first), the others join it",
    )
    up.add_argument(
        "--lab-secret-file",
        type=Path,
        metavar="FILE",
        help="the lab's control secret shared by its hosts (0600): the first host writes it if it is missing, "
        "the other hosts need a copy",
    )
    up.add_argument("--netns", action="store_true", help=NETNS_HELP)
    up.add_argument("--a2a-tls", choices=["on", "off"], default="on", help=A2A_TLS_HELP)
    up.add_argument("--pace", type=_pace, metavar="N", help=PACE_HELP)
    observe.add_otlp(up)
    up.set_defaults(handler=cmd_up)

    down = sub.add_parser(
        "down",
        help="stop the agents started by lab up",
        description="Stop the lab started by 'lab up' with the same --run-dir, and wait until "
        "its process has exited and its ports are closed.",
    )
    down.add_argument("--run-dir", type=Path, default=DEFAULT_RUN_DIR, help=f"default: {DEFAULT_RUN_DIR}")
    down.add_argument("--json", action="store_true", help="print JSON")
    down.set_defaults(handler=cmd_down)

    gen = sub.add_parser(
        "generate",
        help="write a large generated topology",
        description="Generate a topology: --sites sites in --domains management domains, each with "
        "its RAN and IP fault agents, plus service-layer, optimization, energy-saving and "
        "complaint agents, and a scenario with one fault per domain (or --faults).",
    )
    gen.add_argument("--sites", type=int, required=True, help="number of sites (3 cells each)")
    gen.add_argument("--domains", type=int, default=1, help="number of management domains (default: 1)")
    gen.add_argument("--seed", type=int, default=1, help="seed of the generated choices (default: 1)")
    gen.add_argument("--faults", type=int, help="number of faults in the scenario (default: one per domain)")
    gen.add_argument("--name", help="topology name (default: generated-N-sites-M-domains)")
    gen.add_argument(
        "--base-port", type=int, default=0, help="give the agents fixed ports from this one (for lab up; default: none)"
    )
    gen.add_argument("-o", "--output", type=Path, metavar="FILE", help="write to FILE instead of stdout")
    gen.set_defaults(handler=cmd_generate)

    export = sub.add_parser(
        "export",
        help="write a topology as a containerlab or Kubernetes lab",
        description="Write TOPOLOGY as a lab for containerlab (a .clab.yml: a linux node per agent, links for "
        "talks_to, management addresses in 198.18.0.0/24) or Kubernetes (a StatefulSet and a Service per agent, "
        "the topology in a ConfigMap, the login in a Secret, NetworkPolicies allowing only talks_to pairs). "
        "Every node runs 'an-agent serve --topology /lab/topology.yaml --agent NAME' in the image built by "
        "deploy/Dockerfile, with its peers at their lab addresses and one generated login (user lab). Each agent "
        "plays its own idle copy of the simulated network (no scenario).",
    )
    export.add_argument("topology", type=Path, metavar="TOPOLOGY", help="topology file (YAML)")
    export.add_argument("--format", required=True, choices=["containerlab", "kubernetes"], help="what to write")
    export.add_argument("--output", "-o", type=Path, required=True, metavar="DIR", help="directory to write into")
    export.add_argument("--image", default="an-agent:latest", help="container image (default: an-agent:latest)")
    export.add_argument("--json", action="store_true", help="print the files written as JSON")
    export.set_defaults(handler=cmd_export)

    check = sub.add_parser(
        "check",
        help="validate a topology file",
        description="Validate TOPOLOGY against the format's JSON Schema and cross-references; errors give file:line.",
    )
    check.add_argument("topology", type=Path, metavar="TOPOLOGY")
    check.add_argument("--json", action="store_true", help="print a JSON summary")
    check.set_defaults(handler=cmd_check)


def _pace(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"the pace must be above 0 simulated seconds per wall second, not {text}")
    return value


_quiet_transport_logs = quiet_transport_logs


def cmd_run(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from an_agent.clock import to_rfc3339
    from an_agent.lab.journal import Note
    from an_agent.lab.run import run_topology
    from an_agent.lab.text import outcome, timeline
    from an_agent.lab.topology import load_topology

    _quiet_transport_logs()
    topology = load_topology(args.topology)
    from an_agent.lab.chaos import parse_chaos
    from an_agent.lab.partition import KIND as PARTITION
    from an_agent.lab.partition import Partition

    # partition:... is ours (lab/partition.py, --netns); every other kind is lab/chaos.py's
    chaos = [parse_chaos(text, topology) for text in args.chaos if not text.startswith(f"{PARTITION}:")]
    partitions = [
        Partition.parse(text.removeprefix(f"{PARTITION}:")) for text in args.chaos if text.startswith(f"{PARTITION}:")
    ]
    if args.netns:
        from an_agent.lab.netns import require_support

        require_support()
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="an-agent-lab-"))

    def on_note(note: Note) -> None:
        print(f"  [{to_rfc3339(note.time)[11:19]}] {note.agent:>15}  {note.text}", file=sys.stderr, flush=True)

    def on_phase(text: str) -> None:
        print(f"an-agent lab: {text}", file=sys.stderr, flush=True)

    try:
        with observe.spans(args.otlp):  # the lab process's own spans (faults, tickets; --in-process: agents')
            result = run_topology(
                topology,
                state_dir,
                on_note=None if args.quiet else on_note,
                on_phase=None if args.quiet else on_phase,
                stall_timeout=args.stall_timeout,
                in_process=args.in_process,
                chaos=chaos,
                netns=args.netns,
                partitions=partitions,
                a2a_tls=args.a2a_tls == "on",
                pace=args.pace,
                otlp=args.otlp,
            )
    finally:
        if args.state_dir is None:
            shutil.rmtree(state_dir, ignore_errors=True)
    if args.report is not None:
        from an_agent.lab.report import write_report

        path = write_report(result, args.report)
        result.report = str(path)
        if not args.quiet:
            print(f"an-agent lab: report written to {path}", file=sys.stderr)
    if args.json:
        print_json(result.to_json())
    else:
        print("\n".join(timeline(result, args.trace)))
        print()
        print("\n".join(outcome(result)))
        if result.report is not None:
            print(f"report: {result.report}")
    return EXIT_OK if result.outcome.closed_loop else EXIT_REFUSED


def cmd_up(args: argparse.Namespace) -> int:
    from an_agent.lab import daemon
    from an_agent.lab.topology import load_topology

    topology = load_topology(args.topology)
    if args.otlp is not None:
        from an_agent.otlp import endpoint

        endpoint(args.otlp)  # a URL that is not one is refused here, not in the lab process's log
    if args.foreground:
        _quiet_transport_logs()
        return daemon.serve_foreground(
            topology,
            args.run_dir,
            play=not args.idle,
            in_process=args.in_process,
            host=args.host,
            secret_file=args.lab_secret_file,
            netns=args.netns,
            a2a_tls=args.a2a_tls == "on",
            pace=args.pace,
            otlp=args.otlp,
        )
    from an_agent.lab.placement import check_host

    check_host(topology, args.host)
    state = daemon.start_background(
        args.topology,
        args.run_dir,
        play=not args.idle,
        in_process=args.in_process,
        host=args.host,
        secret_file=args.lab_secret_file,
        netns=args.netns,
        a2a_tls=args.a2a_tls == "on",
        pace=args.pace,
        otlp=args.otlp,
    )
    if args.json:
        print_json(state)
        return EXIT_OK
    print(f"lab {topology.name} is up (pid {state['pid']}); state in {args.run_dir}, log {state['log']}")
    for agent in state["agents"]:
        print(
            f"  {agent['name']:<18} {agent.get('role', ''):<19} {agent['host']}:{agent['port']}   "
            f"an-agent profile --host {agent['host']} --port {agent['port']}"
            + (f"   (namespace {agent['netns']})" if agent.get("netns") else "")
            + (f"\n  {'':<18} {'':<19} A2A {agent['a2a_url']}" if agent.get("a2a_url") else "")
        )
    for device in state.get("devices", []):  # element managers (docs/element-managers.md)
        where = f"{device['host']}:{device['port']}"
        print(
            f"  {device['name']:<18} {device['domain'] + ' EM':<19} {where}   "
            f"netconf-console2 --host {device['host']} --port {device['port']} -u admin -p admin --get"
        )
    if state.get("pace"):
        print(f"paced: {state['pace']:g} simulated seconds per wall second")
    if state.get("a2a_trust"):
        print(
            f"A2A over HTTPS: trust {state['a2a_trust']} (an-agent task ... --a2a URL --a2a-trust {state['a2a_trust']})"
        )
    print(
        "user admin, password admin. Stop with: an-agent lab down"
        + (f" --run-dir {args.run_dir}" if args.run_dir != DEFAULT_RUN_DIR else "")
    )
    return EXIT_OK


def cmd_down(args: argparse.Namespace) -> int:
    from an_agent.lab import daemon

    report = daemon.stop_background(args.run_dir)
    if args.json:
        print_json(report)
    else:
        print(report["message"])
    return EXIT_OK if report["stopped"] or not report["was_up"] else EXIT_REFUSED


def cmd_generate(args: argparse.Namespace) -> int:
    from an_agent.errors import ConfigError
    from an_agent.lab.generate import generate

    try:
        text = generate(args.sites, args.domains, args.seed, args.faults, args.name, args.base_port)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.output is None:
        sys.stdout.write(text)
    else:
        args.output.write_text(text, encoding="utf-8")
        print(f"an-agent lab: wrote {args.output} ({args.sites} sites, {args.domains} domain(s))", file=sys.stderr)
    return EXIT_OK


def cmd_export(args: argparse.Namespace) -> int:
    from an_agent.lab.topology import load_topology

    topology = load_topology(args.topology)
    if args.format == "containerlab":
        from an_agent.lab.export.containerlab import export
    else:
        from an_agent.lab.export.kubernetes import export
    written = export(topology, args.output, args.image)
    if args.json:
        print_json({"format": args.format, "files": [str(p) for p in written.files]})
    else:
        print("\n".join(written.summary))
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from an_agent.lab.topology import load_topology

    topology = load_topology(args.topology)
    summary = {
        "name": topology.name,
        "agents": len(topology.agents),
        "sites": len(topology.network.sites),
        "cells": sum(len(s.cells) for s in topology.network.sites),
        "links": len(topology.network.links),
        "events": len(topology.events),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{args.topology}: valid ({summary['agents']} agents, {summary['sites']} sites, {summary['cells']} "
            f"cells, {summary['links']} links, {summary['events']} scenario events)"
        )
    return EXIT_OK
