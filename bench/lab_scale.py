"""Time to bring a generated topology up with ``an-agent lab up``, and the memory of its processes.

::

    python -m bench.lab_scale                      # 200 sites, 4 domains, seed 1, 3 rounds
    python -m bench.lab_scale --sites 40 --rounds 1 --json
    python -m bench.lab_scale --netns                # each agent in a network namespace (root)

Each round runs ``an-agent lab up --idle --json`` on a fresh run directory (up = until the command
returns: every agent listens and the state file is written), reads PSS (/proc/PID/smaps_rollup) of
the lab's process tree, then ``an-agent lab down``. PSS counts pages shared between processes once,
so "per agent" is the tree's PSS divided by the number of agents (RSS is printed too: PSS also
shares library pages with unrelated processes on the machine). Each agent is a process of its own
(the default): the script also gives the PSS and RSS of one agent process (median over the agents).
``--in-process`` measures ``lab up --in-process`` (every agent in the lab's process). Linux only.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.procs import pss_bytes, rss_bytes, tree

MIB = 1024 * 1024


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "an_agent.cli", *args], capture_output=True, text=True, check=False)


def one_round(topology: Path, run_dir: Path, mode: list[str]) -> dict[str, Any]:
    """Bring the lab up (``mode``: more ``lab up`` options), measure, bring it down; RuntimeError when a step fails."""
    started = time.monotonic()
    up = _cli("lab", "up", str(topology), "--idle", "--json", "--run-dir", str(run_dir), *mode)
    up_seconds = time.monotonic() - started
    if up.returncode != 0:
        raise RuntimeError(f"lab up failed ({up.returncode}): {up.stderr.strip()[-2000:]}")
    state = json.loads(up.stdout)
    try:
        pids = tree([int(state["pid"])])
        pss = pss_bytes(pids)
        rss = rss_bytes(pids)
        agent_pids = sorted({int(a["pid"]) for a in state["agents"]} - {int(state["pid"])})
        per_process = [(pss_bytes([p]), rss_bytes([p])) for p in agent_pids]
    finally:
        started = time.monotonic()
        down = _cli("lab", "down", "--run-dir", str(run_dir), "--json")
        down_seconds = time.monotonic() - started
    if down.returncode != 0:
        raise RuntimeError(f"lab down failed ({down.returncode}): {down.stdout.strip()}")
    agents = len(state["agents"])
    return {
        "agents": agents,
        "processes": len(pids),
        "up_s": round(up_seconds, 2),
        "down_s": round(down_seconds, 2),
        "pss_mib": round(pss / MIB, 1),
        "rss_mib": round(rss / MIB, 1),
        "pss_per_agent_mib": round(pss / MIB / agents, 2),
        "agent_process_pss_mib": round(statistics.median(p for p, _ in per_process) / MIB, 1) if per_process else None,
        "agent_process_rss_mib": round(statistics.median(r for _, r in per_process) / MIB, 1) if per_process else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sites", type=int, default=200)
    parser.add_argument("--domains", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the rounds and medians as JSON")
    parser.add_argument("--in-process", action="store_true", help="every agent in the lab's process")
    parser.add_argument("--netns", action="store_true", help="lab up --netns: an agent per network namespace")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="an-bench-lab-") as tmp:
        topology = Path(tmp) / "topology.yaml"
        gen = _cli(
            "lab", "generate", "--sites", str(args.sites), "--domains", str(args.domains),
            "--seed", str(args.seed), "-o", str(topology),
        )  # fmt: skip
        if gen.returncode != 0:
            print(gen.stderr, file=sys.stderr)
            return 1
        mode = ["--in-process"] if args.in_process else ["--netns"] if args.netns else []
        rounds = [one_round(topology, Path(tmp) / f"run{i}", mode) for i in range(args.rounds)]
    summary = {
        "topology": f"generate --sites {args.sites} --domains {args.domains} --seed {args.seed}",
        "mode": "loopback, in one process"
        if args.in_process
        else "a process per agent, each in a network namespace"
        if args.netns
        else "loopback, a process per agent",
        "rounds": rounds,
        "median_up_s": statistics.median(r["up_s"] for r in rounds),
        "median_pss_per_agent_mib": statistics.median(r["pss_per_agent_mib"] for r in rounds),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{summary['topology']} ({rounds[0]['agents']} agents, {rounds[0]['processes']} process(es)),"
            f" {summary['mode']}"
        )
        for r in rounds:
            print(
                f"  up {r['up_s']:6.2f} s   down {r['down_s']:5.2f} s   PSS {r['pss_mib']:7.1f} MiB"
                f" (RSS {r['rss_mib']:.1f})   ({r['pss_per_agent_mib']:.2f} MiB PSS per agent)"
                + (
                    f"   one agent process: PSS {r['agent_process_pss_mib']} MiB, RSS {r['agent_process_rss_mib']} MiB"
                    if r["agent_process_pss_mib"] is not None
                    else ""
                )
            )
        print(f"  median up {summary['median_up_s']:.2f} s, {summary['median_pss_per_agent_mib']:.2f} MiB per agent")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
