"""The floor of benchmark 3: notification latency with a server that does no work, next to netconfd.

    python -m bench.notify_floor [--events 10] [--subscribers 1,50] [--reps 2] [--client openssh|paramiko] [--json FILE]

The *emitter* is `an-agent serve` with the same transports as the agent under
test (paramiko, and OpenSSH sshd handing each session's pipes to the process),
the same users and the same bench client, but two handlers replaced:
``<create-subscription>`` only remembers the session, and ``<edit-config>``
parses nothing, validates nothing and stores nothing: it writes one
ready-made ``condition-notifications`` (status ``created``, the task-id of the
request) to every subscribed session from the request's own thread, then
replies ``<ok/>``. What it measures is what no server can remove on this
machine with this client: SSH (sshd and the client's paramiko), the
subscribers' decryption and parsing in their worker processes, and the wake-ups
of 50 sessions on 2 cores. netconfd (as in benchmark 3: the same edit, its
``netconf-config-change``) runs in the same run, alternating.

If the floor's p50 alone is above half of netconfd's, the target "notification
p50 with 50 subscribers <= 0.5 x netconfd" cannot be met by any server behind
this transport with this client (bench/README.md, "Notifications: the floor").
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench import data, m_notify, ours
from bench.reference import NetconfdReference
from bench.stats import percentile
from bench.target import Target

ROOT = Path(__file__).resolve().parent.parent
MODULES_DIR = ROOT / "src" / "an_agent" / "yang" / "modules"
EMITTER = [sys.executable, "-c", "import sys; from bench.notify_floor import emitter_main; sys.exit(emitter_main())"]
NEEDLES = {
    "floor": ("condition-notifications", ">created<"),
    "floor-sshd": ("condition-notifications", ">created<"),
    "netconfd": ("netconf-config-change",),
}


def emitter_main() -> int:
    """`an-agent serve` with the do-nothing handlers (see the module docstring); argv as for serve."""
    from lxml import etree

    from an_agent.cli import main
    from an_agent.model import IRTF_AGENT_NS
    from an_agent.nc import face
    from an_agent.nc.handler import Reply, Session
    from an_agent.runtime.event_rendering import envelope

    subscribers: list[Session] = []
    lock = threading.Lock()

    def subscribe(self: Any, principal: Any, session: Session, operation: etree._Element) -> Reply:
        def add() -> None:
            with lock:
                subscribers.append(session)

        return Reply(after_send=add)

    def edit(self: Any, principal: Any, session: Session, operation: etree._Element) -> Reply:
        task_id = operation.findtext(f".//{{{IRTF_AGENT_NS}}}task-id") or ""
        content = (
            f'<condition-notifications xmlns="{IRTF_AGENT_NS}"><task-id>{task_id}</task-id>'
            "<task-status>created</task-status></condition-notifications>"
        )
        message = envelope(time.time(), content)
        encoded: dict[Any, bytes] = {}
        with lock:
            targets = list(subscribers)
        for target in targets:
            if target.encoding not in encoded:
                encoded[target.encoding] = target.encode(message)
            target.send_encoded(encoded[target.encoding])
        return Reply()

    face.NetconfFace._create_subscription = subscribe  # type: ignore[method-assign]
    face._BASE_OPERATIONS["edit-config"] = edit
    return main()


def measure(events: int, subscribers: list[int], reps: int, client: str = m_notify.DEFAULT_CLIENT) -> dict[str, Any]:
    """p50/p99 (ms) per server and subscriber count; raw latencies in ``raw``."""
    out: dict[str, Any] = {"rows": {}, "raw": {}}
    next_task = 500_000
    with ours.AgentProcess(data.profile_json(), sshd=True, entry=EMITTER) as floor:
        config_xml = data.profile_xml() + data.tasks_xml(100)
        with NetconfdReference(MODULES_DIR, ["irtf-agent"], config_xml) as ref:
            servers: list[tuple[str, Target]] = [
                ("floor", floor),
                ("floor-sshd", floor.sshd_target()),
                ("netconfd", ref),
            ]
            for count in subscribers:
                lat: dict[str, list[float]] = {name: [] for name, _ in servers}
                for rep in range(reps):
                    turn = servers[rep % 3 :] + servers[: rep % 3]
                    for name, server in turn:
                        tasks = list(range(next_task, next_task + events))
                        next_task += events
                        lat[name] += m_notify.notification_latency(server, count, tasks, NEEDLES[name], client=client)
                out["raw"][str(count)] = {k: [round(x * 1e3, 3) for x in v] for k, v in lat.items()}
                out["rows"][str(count)] = {
                    name: {"p50": percentile(v, 50) * 1e3, "p99": percentile(v, 99) * 1e3} for name, v in lat.items()
                }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.notify_floor",
        description="Notification latency of a server that does no work (the floor of benchmark 3) next to netconfd.",
    )
    parser.add_argument("--events", type=int, default=10, help="task assignments per server and repetition")
    parser.add_argument("--subscribers", default="1,50", help="comma-separated subscriber counts (default 1,50)")
    parser.add_argument("--reps", type=int, default=2, help="repetitions, rotating which server goes first")
    m_notify.add_client_argument(parser)
    parser.add_argument("--json", type=Path, help="also write the numbers and raw latencies to this file")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.subscribers.split(",") if x.strip()]
    result = measure(args.events, counts, args.reps, args.client)
    result["client"] = args.client
    for count, row in result["rows"].items():
        theirs = row["netconfd"]["p50"]
        print(f"{count} subscriber(s): netconfd p50 {theirs:.2f} ms (half: {theirs / 2:.2f} ms)")
        for name in ("floor", "floor-sshd"):
            mine = row[name]["p50"]
            print(f"  {name:10s} p50 {mine:6.2f} ms  p99 {row[name]['p99']:6.2f} ms  ratio {mine / theirs:.2f}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
