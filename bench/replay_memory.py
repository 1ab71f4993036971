"""Memory of an agent serving replaying subscribers (RSS/PSS of the agent process, before and after).

Fills a fresh state directory's notification log with ``--events`` entries
(~300 bytes each), starts ``an-agent serve`` on it, then opens
``--subscribers`` sessions that each ``<create-subscription>`` with a
``startTime`` before the first entry and read until ``replayComplete``.
Prints the agent's VmRSS and PSS (``/proc/<pid>/smaps_rollup``) before,
its peak RSS (VmHWM) and RSS/PSS after, as JSON.

    python -m bench.replay_memory --events 200000 --subscribers 50
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.procs import pss_bytes, rss_bytes, start_serve


def _memory(pid: int) -> dict[str, int]:
    status = Path(f"/proc/{pid}/status").read_text()
    peak = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return {
        "rss_mib": rss_bytes([pid]) >> 20,
        "pss_mib": pss_bytes([pid]) >> 20,
        "hwm_mib": (int(peak.group(1)) >> 10) if peak else 0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--subscribers", type=int, default=50)
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "src"))
    sys.path.insert(0, str(root / "tests"))
    from an_agent.store.agent_store import AgentStore
    from rawnc import RawSession

    with tempfile.TemporaryDirectory(prefix="an-agent-replay-") as tmp:
        state = Path(tmp) / "state"
        store = AgentStore(state)
        body = (
            '<condition-notifications xmlns="urn:ietf:params:xml:ns:yang:irtf-agent"><task-id>t{i}</task-id>'
            "<task-status>processing</task-status><reason>" + "r" * 180 + "</reason></condition-notifications>"
        )
        start = time.time()
        with store._tx() as db:  # one transaction: filling is not what is measured
            columns = {row[1] for row in db.execute("PRAGMA table_info(notification_log)")}
            wall = ", logged_at" if "logged_at" in columns else ""  # older stores have no retention column
            db.executemany(
                f"INSERT INTO notification_log (event_time, xml{wall}) VALUES (?, ?{', ?' if wall else ''})",
                ((start + i * 1e-3, body.format(i=i), start)[: 3 if wall else 2] for i in range(args.events)),
            )
        store.close()
        proc, port = start_serve(
            ["--state-dir", str(state), "--schemas", "off"],
            env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"},
        )
        time.sleep(1.0)
        before = _memory(proc.pid)
        done = []

        def subscriber() -> None:
            raw = RawSession(port)
            raw.channel.settimeout(600)
            raw.rpc(
                '<create-subscription xmlns="urn:ietf:params:xml:ns:netconf:notification:1.0">'
                "<startTime>1970-01-01T00:00:00Z</startTime></create-subscription>",
                "s",
            )
            while True:
                msg = raw.receive()
                if msg.find("{urn:ietf:params:xml:ns:netmod:notification}replayComplete") is not None:
                    break
            done.append(1)
            raw.close()

        t0 = time.monotonic()
        threads = [threading.Thread(target=subscriber) for _ in range(args.subscribers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = _memory(proc.pid)
        proc.terminate()
        proc.wait(timeout=30)
        print(
            json.dumps(
                {
                    "events": args.events,
                    "subscribers": args.subscribers,
                    "completed": len(done),
                    "seconds": round(time.monotonic() - t0, 1),
                    "before": before,
                    "after": after,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
