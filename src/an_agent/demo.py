"""``make demo``: the cross-domain fault lab (draft-wang-nmrg-magent-im use case 2.1), end to end.

Runs ``topologies/cross-domain-fault.yaml`` with ``an-agent lab run``'s machinery: four agents, each a
NETCONF server on 127.0.0.1, handle a transport link cut that takes 22 base stations down. Shows the
progress, then the timeline of NETCONF operations and the outcome, and writes the HTML report under
the state directory::

    python -m an_agent.demo --state-dir state/demo
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from an_agent.errors import AnAgentError

TOPOLOGY = Path("topologies") / "cross-domain-fault.yaml"


def find_topology(given: Path | None) -> Path:
    """The topology to run: ``given``, else topologies/ in the working directory or in the source tree."""
    if given is not None:
        return given
    for base in (Path.cwd(), Path(__file__).resolve().parents[2]):
        if (base / TOPOLOGY).is_file():
            return base / TOPOLOGY
    raise AnAgentError(f"cannot find {TOPOLOGY}: run from the repository root or give --topology FILE")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m an_agent.demo", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path("state/demo"),
        help="where the agents' databases and the report go (default: state/demo)",
    )
    parser.add_argument("--topology", type=Path, help=f"another topology to run (default: {TOPOLOGY})")
    args = parser.parse_args(argv)

    from an_agent.cli.lab import _quiet_transport_logs
    from an_agent.clock import to_rfc3339
    from an_agent.lab.journal import Note
    from an_agent.lab.report import write_report
    from an_agent.lab.run import run_topology
    from an_agent.lab.text import duration, outcome, timeline
    from an_agent.lab.topology import load_topology

    _quiet_transport_logs()
    try:
        path = find_topology(args.topology)
        topology = load_topology(path)
    except AnAgentError as exc:
        print(f"demo: {exc}", file=sys.stderr)
        return 2
    print(f"== an-agent demo: {topology.name} ==\n{topology.description}\n", file=sys.stderr)

    def on_note(note: Note) -> None:
        print(f"  [{to_rfc3339(note.time)[11:19]}] {note.agent:>15}  {note.text}", file=sys.stderr, flush=True)

    def on_phase(text: str) -> None:
        print(f"-- {text}", file=sys.stderr, flush=True)

    try:
        result = run_topology(topology, args.state_dir, on_note=on_note, on_phase=on_phase)
    except AnAgentError as exc:
        print(f"demo: the lab failed: {exc}", file=sys.stderr)
        return 1
    report = write_report(result, args.state_dir / "report")
    print()
    print("TIMELINE (simulated time; each line one NETCONF operation between agents, * an agent's note)")
    print("\n".join(timeline(result)))
    print()
    print("\n".join(outcome(result)))
    run = result.run
    print()
    print(
        f"{duration(run.simulated_seconds)} of network time played in {run.wall_seconds:.1f} s; "
        f"{run.netconf_operations} NETCONF operations between {len(result.agents)} agents."
    )
    print(f"HTML report (sequence diagram, KPI plots, tasks with payloads): {report.resolve()}")
    return 0 if result.outcome.closed_loop else 1


if __name__ == "__main__":
    sys.exit(main())
