"""``an-agent lab soak``: a topology under faults for a while, watched by checkers (`an_agent.lab.soak`)."""

from __future__ import annotations

import argparse
import re
import signal
import sys
from pathlib import Path
from typing import Any

from an_agent.cli import EXIT_OK, EXIT_REFUSED
from an_agent.cli._common import print_json, quiet_transport_logs

_SOAK = """\
Run TOPOLOGY's agents for --duration (wall clock) under a workload that never runs
dry and, with --chaos random, a chaos schedule drawn from --seed (the same seed gives
the same schedule): network faults of every kind the topology's agents handle, at
random links, sites and cells, overlapping; the scenario's tickets again; SIGKILL
and restart of any agent, SIGSTOP/SIGCONT, a dropped lab control channel, a state
directory out of space (a small tmpfs per agent: needs root), and with --netns
partitions between two agents or of one agent from all. Then the loops get their
time to close, the agents stop, and checkers judge the journal and every agent's
databases: no acknowledged task lost, no duplicate assignment or repair, every
fault's loop closed in time, notifications complete and in order, SQLite intact
after every kill, resources flat. The checkers also run along the way.

Exit code 0 when every checker held, 1 when one failed (the report gives its first
counter-example), 2 for bad options or topology. See docs/soak.md.
"""


def register(sub: Any, netns_help: str) -> None:
    """Add ``soak`` to ``an-agent lab``'s actions."""
    soak = sub.add_parser(
        "soak",
        help="run a topology under random faults for a while and check that nothing was lost",
        description=_SOAK,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    soak.add_argument("topology", type=Path, metavar="TOPOLOGY", help="topology file (YAML)")
    soak.add_argument(
        "--duration",
        type=duration,
        default=300.0,
        metavar="D",
        help="wall-clock time of faults: 90s, 30m, 2h (default 5m)",
    )
    soak.add_argument("--seed", type=int, default=1, help="seed of the schedule (default: 1)")
    soak.add_argument(
        "--chaos",
        choices=["random", "none"],
        default="random",
        help="random: faults of the lab itself besides the network's (default); none: network faults only",
    )
    soak.add_argument(
        "--rate", type=_positive, default=8.0, metavar="FAULTS_PER_MIN", help="faults per wall minute (default: 8)"
    )
    soak.add_argument("--netns", action="store_true", help=netns_help + "; adds partitions to the chaos")
    soak.add_argument(
        "--pace",
        type=_positive,
        default=60.0,
        metavar="N",
        help="simulated seconds per wall second while faults are injected (default: 60, a wall minute is a "
        "simulated hour); the loops then close lock-step",
    )
    soak.add_argument("--json", action="store_true", help="print the report as one JSON object (docs/soak.md)")
    soak.add_argument("--report", type=Path, metavar="DIR", help="also write soak.html and soak.json into DIR")
    soak.add_argument(
        "--state-dir", type=Path, metavar="DIR", help="keep the agents' databases in DIR (default: a temporary one)"
    )
    soak.add_argument("--quiet", action="store_true", help="no progress on stderr")
    soak.set_defaults(handler=cmd_soak)


_DURATION = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<unit>[smh]?)$")


def duration(text: str) -> float:
    """``90``, ``90s``, ``30m``, ``2h`` -> seconds."""
    match = _DURATION.match(text.strip())
    if match is None or float(match["n"]) <= 0:
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 30m or 2h, got {text!r}")
    return float(match["n"]) * {"": 1, "s": 1, "m": 60, "h": 3600}[match["unit"]]


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be above 0, not {text}")
    return value


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def cmd_soak(args: argparse.Namespace) -> int:
    import shutil
    import tempfile

    from an_agent.lab.soak.report import soak_json, soak_text, write_html
    from an_agent.lab.soak.run import LOGS, SoakOptions, run_soak
    from an_agent.lab.topology import load_topology

    quiet_transport_logs()
    topology = load_topology(args.topology)
    if args.netns:
        from an_agent.lab.netns import require_support

        require_support()
    options = SoakOptions(
        duration=args.duration,
        seed=args.seed,
        chaos=args.chaos == "random",
        rate=args.rate,
        netns=args.netns,
        pace=args.pace,
    )
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="an-agent-soak-"))

    def on_phase(text: str) -> None:
        print(f"an-agent lab soak: {text}", file=sys.stderr, flush=True)

    # SIGTERM (a CI timeout, kill) ends the soak like Ctrl-C: through its clean-up (agents, mounts, namespaces)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        result = run_soak(topology, state_dir, options, None if args.quiet else on_phase)
        report = soak_json(result)
        if args.report is not None:
            path = write_html(report, args.report, result.evidence, state_dir / LOGS)
            if not args.quiet:
                print(f"an-agent lab soak: report written to {path}", file=sys.stderr)
    finally:
        signal.signal(signal.SIGTERM, previous)
        if args.state_dir is None:
            shutil.rmtree(state_dir, ignore_errors=True)
    if args.json:
        print_json(report)
    else:
        print(soak_text(report))
    if result.interrupted is not None:  # reported: now end as interrupted (130 after Ctrl-C, 143 after SIGTERM)
        raise result.interrupted
    return EXIT_OK if result.ok else EXIT_REFUSED
