"""Where the time of benchmark 3 goes inside the agent: stage stamps per assignment, both transports.

    python -m bench.notify_stages [--events 10] [--subscribers 1,50] [--paths paramiko,sshd]
                                  [--client openssh|paramiko] [--json FILE]

Runs benchmark 3's driver (`bench.m_notify`, the same client, the same 100
stored tasks as `bench.run`) against `an-agent serve` started with
``AN_AGENT_STAGES`` (`an_agent.stages`: opt-in stamps in the product, free
when off), and prints, per transport and subscriber count, the median over
the assignments of the ms from the moment the client sent the
``<edit-config>`` to each stage:

- ``read``: the request framed and decoded on the session's reader thread;
- ``authorized``, ``payloads-validated``: admission steps 2 and 3;
- ``yang-validated``, ``committed``: libyang validation of the edit, SQLite commit;
- ``created logged``: the ``created`` event in the notification log, under the bus lock;
- ``created offered``: every subscription offered it (on the sshd path this includes the
  direct writes to the pipes);
- ``created first/last written``: the first and last subscriber's bytes written to its
  transport (the pipe to sshd, or the paramiko channel: encrypted and written to the TCP socket);
- ``created announced``: the task's follow-up work may start (`TaskEngine.wait_announced`);
- ``processing logged`` / ``processing last written``: the next status change's fan-out;
- ``context recorded``, ``replied``: the task's context record, the ``<rpc-reply>`` written;
- ``arrival p50`` / ``arrival last``: the subscribers holding the whole notification (client side).

Stamps and client times are both `time.monotonic()` (CLOCK_MONOTONIC, system-wide).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from bench import data, m_notify, ours
from bench.stats import median, percentile
from bench.target import Target

TASKS = 100
NEEDLES = ("condition-notifications", ">created<")
STAGE_ENV = "AN_AGENT_STAGES"
_FLUSH_WAIT = 0.6  # > an_agent.stages.FLUSH_PERIOD: every stamp of a run is in the file


class Stamp(NamedTuple):
    """One line of the stamps file."""

    time: float
    thread: str
    stage: str


def read_stamps(path: Path) -> list[Stamp]:
    """The stamps the agent wrote so far, in time order."""
    if not path.exists():
        return []
    stamps = []
    for line in path.read_text().splitlines():
        t, thread, stage = line.split("\t", 2)
        stamps.append(Stamp(float(t), thread, stage))
    return sorted(stamps)


def event_stages(event: m_notify.Assignment, stamps: Sequence[Stamp]) -> dict[str, float]:
    """ms from the event's send to each stage (see the module docstring); stages not found are left out."""
    after = [s for s in stamps if s.time >= event.sent]
    out: dict[str, float] = {}

    def at(stage: str, t: float) -> None:
        out.setdefault(stage, (t - event.sent) * 1e3)

    read = next((s for s in after if s.stage == "read"), None)
    if read is None:
        return out
    at("read", read.time)
    # The request's own thread from its read on, up to its reply: the previous request's "replied" can be
    # stamped after this send (the client had its reply before the server thread took the stamp).
    request = [s for s in after if s.thread == read.thread and s.time >= read.time]
    for stamp in request:
        if stamp.stage == "replied":
            at("replied", stamp.time)
            break
        if stamp.stage in ("authorized", "payloads-validated", "yang-validated", "committed", "context-recorded"):
            at(stamp.stage, stamp.time)
    created = next((s for s in after if s.stage.startswith("published:created:")), None)
    if created is not None:
        _fanout(out, at, "created", created.stage.rsplit(":", 1)[1], after)
    # This task's "processing" follows its "created"; one stamped before is an earlier task's.
    since = created.time if created is not None else read.time
    processing = next((s for s in after if s.stage.startswith("published:processing:") and s.time > since), None)
    if processing is not None:
        _fanout(out, at, "processing", processing.stage.rsplit(":", 1)[1], after)
    arrivals = sorted(event.arrivals)
    at("arrival p50", percentile(arrivals, 50))
    at("arrival last", arrivals[-1])
    return out


def _fanout(out: dict[str, float], at: Any, name: str, seq: str, after: Sequence[Stamp]) -> None:
    written = [s.time for s in after if s.stage == f"written:{seq}"]
    for stamp in after:
        if stamp.stage in (f"logged:{seq}", f"offered:{seq}", f"announced:{seq}"):
            at(f"{name} {stamp.stage.split(':')[0]}", stamp.time)
    if written:
        at(f"{name} first written", written[0])
        at(f"{name} last written", written[-1])
        out[f"{name} writes"] = float(len(written))


def _timeline(event: m_notify.Assignment, stamps: Sequence[Stamp]) -> list[tuple[float, str, str]]:
    """Every stamp from the send to the last arrival, in ms from the send, but one per fan-out's writes."""
    end = max(event.arrivals)
    seen: set[str] = set()
    out = []
    for stamp in stamps:
        if event.sent <= stamp.time <= end and stamp.stage not in seen:
            if stamp.stage.startswith("written:"):
                seen.add(stamp.stage)
            out.append((round((stamp.time - event.sent) * 1e3, 3), stamp.thread, stamp.stage))
    return out


ORDER = (
    "read",
    "authorized",
    "payloads-validated",
    "yang-validated",
    "committed",
    "created logged",
    "created first written",
    "created last written",
    "created offered",
    "created announced",
    "processing logged",
    "processing last written",
    "context-recorded",
    "replied",
    "arrival p50",
    "arrival last",
    "created writes",
)


def measure(
    events: int, counts: Sequence[int], paths: Sequence[str], client: str = m_notify.DEFAULT_CLIENT
) -> dict[str, Any]:
    """Median stage times per (path, subscriber count); per-event stage times in ``raw``."""
    result: dict[str, Any] = {"rows": {}, "raw": {}, "stamps": {}}
    with tempfile.TemporaryDirectory(prefix="an-bench-stages-") as tmp:
        stamps_file = Path(tmp) / "stamps.tsv"
        with ours.AgentProcess(data.profile_json(), sshd=True, env={STAGE_ENV: str(stamps_file)}) as agent:
            with agent.connect() as session:
                session.request(data.edit_config(data.tasks_xml(TASKS)))
            targets: dict[str, Target] = {"paramiko": agent, "sshd": agent.sshd_target()}
            next_task = 700_000
            for count in counts:
                for path in paths:
                    tasks = list(range(next_task, next_task + events))
                    next_task += events
                    measured = m_notify.notification_events(targets[path], count, tasks, NEEDLES, client=client)
                    time.sleep(_FLUSH_WAIT)
                    stamps = read_stamps(stamps_file)
                    per_event = [event_stages(event, stamps) for event in measured]
                    key = f"{path} {count}"
                    result["raw"][key] = per_event
                    result["stamps"][key] = [_timeline(event, stamps) for event in measured]
                    stages = sorted({s for e in per_event for s in e}, key=lambda s: (*ORDER, s).index(s))
                    result["rows"][key] = {
                        stage: median([e[stage] for e in per_event if stage in e]) for stage in stages
                    }
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.notify_stages",
        description="Stage times of benchmark 3 inside the agent (ms from the client's send, median of the events).",
    )
    parser.add_argument("--events", type=int, default=10, help="task assignments per path and subscriber count")
    parser.add_argument("--subscribers", default="1,50", help="comma-separated subscriber counts (default 1,50)")
    parser.add_argument("--paths", default="paramiko,sshd", help="transports: paramiko, sshd or both (default)")
    m_notify.add_client_argument(parser)
    parser.add_argument("--json", type=Path, help="also write the table and per-event stage times to this file")
    args = parser.parse_args(argv)
    counts = [int(x) for x in args.subscribers.split(",") if x.strip()]
    paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    unknown = [p for p in paths if p not in ("paramiko", "sshd")]
    if unknown:
        parser.error(f"unknown path {unknown[0]!r} (paramiko or sshd)")
    result = measure(args.events, counts, paths, args.client)
    columns = list(result["rows"])
    stages = [s for s in ORDER if any(s in result["rows"][c] for c in columns)]
    print(f"{'stage (ms from send, median)':28s}" + "".join(f"{c:>15s}" for c in columns))
    for stage in stages:
        cells = [result["rows"][c].get(stage) for c in columns]
        print(f"{stage:28s}" + "".join(f"{'-' if v is None else f'{v:.2f}':>15s}" for v in cells))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
