"""``an-agent trace TRACE_ID --lab RUN_DIR``: a fault's or request's causal chain across a lab's agents."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from an_agent.cli._common import print_json
from an_agent.errors import AnAgentError, ConfigError

_DESCRIPTION = """\
Print the causal chain of one trace across the agents of a lab: the fault injected (or the request
sent from outside), the alarms each agent received for it, every task sent and received because of it
over NETCONF and A2A, and how each ended, indented by cause, in order.

The trace ids are in the lab's logs: the scenario's faults and tickets in RUN_DIR/lab.log
("event": "fault.injected", "request.sent"), and every agent's events in RUN_DIR/agents/NAME/agent.log.
A unique prefix of the id is enough. Exit 1 when no event of the trace is found.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "trace",
        help="print a fault's or request's causal chain across a lab's agents",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("trace_id", metavar="TRACE_ID", help="the trace id (32 hex digits, or a unique prefix)")
    parser.add_argument(
        "--lab", type=Path, required=True, metavar="RUN_DIR", help="the run directory of the lab (lab up --run-dir)"
    )
    parser.add_argument("--json", action="store_true", help="print the chain as JSON (each event with its depth)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from an_agent.lab.trace import agents_in_order, chain, events, render

    if not args.lab.is_dir():
        raise ConfigError(f"no run directory {args.lab}")
    found = events(args.lab, args.trace_id.lower())
    ids = {str(e["trace_id"]) for e in found}
    if len(ids) > 1:
        raise ConfigError(f"{args.trace_id!r} is the start of {len(ids)} trace ids: give more digits")
    if not found:
        raise AnAgentError(f"no event of trace {args.trace_id} in the logs under {args.lab}")
    steps = chain(found)
    if args.json:
        print_json({"trace_id": ids.pop(), "agents": agents_in_order(steps), "chain": [s.to_json() for s in steps]})
    else:
        print(f"trace {ids.pop()}: {', '.join(agents_in_order(steps))}")
        print(render(steps))
    return 0
