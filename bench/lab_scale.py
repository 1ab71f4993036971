"""A hundred agents on one small machine: bring-up, time to the outcome and memory of generated labs.

::

    python -m bench.lab_scale                          # 12, 50, 100 agents in both modes; 100 and 200 in --netns
    python -m bench.lab_scale --agents 50 --modes processes --no-run --rounds 3
    python -m bench.lab_scale --quick --json           # 12 and 50 agents (make bench-quick)

For each size (``an-agent lab generate``: 12 agents = ``--sites 200 --domains 4``, 50 = ``--sites 200
--domains 23``, 100 = ``--sites 400 --domains 48``, 200 = ``--sites 800 --domains 98``, seed 1) and mode
(``in-process``: every agent in the lab's process; ``processes``: an agent per process, the default of
``lab up``/``lab run``; ``netns``: an agent per process, each in a network namespace of its own, root):

- *up*: ``an-agent lab up --idle --json`` on a fresh run directory, timed until the command returns
  (every agent serves, the state file is written); the CPU time its processes used to get there (user +
  system, /proc/PID/stat: what the machine's load does not change); then PSS (/proc/PID/smaps_rollup) of the lab's
  process tree: in all, per agent (the total divided by the number of agents: lab process and template
  included), and of one agent process (median over the agents); then ``lab down``;
- *run*: ``an-agent lab run --json --quiet`` timed until it returns with the outcome (bring-up, the
  scenario to its end, read-back, stop); while it runs, the tree's PSS is sampled every few seconds (peak)
  and the processes that have loaded torch (the embedding model) are counted.

PSS counts pages shared between processes once, so the tree's total is what the lab costs the machine.
The load average before and after each measurement is printed: others' work on the machine slows it.
Targets (issue 30) are checked and printed. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.procs import cpu_seconds, pss_bytes, rss_bytes, tree

MIB = 1024 * 1024
SIZES = {12: (200, 4), 50: (200, 23), 100: (400, 48), 200: (800, 98)}
"""Agents -> (sites, domains) of ``lab generate``."""
MODES = {"in-process": ["--in-process"], "processes": [], "netns": ["--netns"]}
SAMPLE_EVERY = 3.0
TARGETS = (
    # (agents, mode, measurement, key, limit, what)
    (50, "processes", "up", "up_s", 10.0, "bring-up <= 10 s"),
    (50, "processes", "up", "agent_process_pss_mib", 15.0, "PSS per agent process <= 15 MiB"),
    (100, "netns", "up", "up_s", 20.0, "bring-up <= 20 s"),
    (100, "netns", "run", "run_s", 90.0, "lab run to its outcome <= 90 s"),
    (100, "netns", "up", "pss_mib", 1536.0, "total PSS <= 1.5 GiB"),
    (200, "netns", "run", "run_s", 180.0, "lab run to its outcome <= 180 s"),
)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "an_agent.cli", *args], capture_output=True, text=True, check=False)


def _load() -> float:
    return os.getloadavg()[0]


def up_round(topology: Path, run_dir: Path, mode: list[str]) -> dict[str, Any]:
    """Bring the lab up (``mode``: more ``lab up`` options), measure, bring it down; RuntimeError when a step fails."""
    load = _load()
    started = time.monotonic()
    up = _cli("lab", "up", str(topology), "--idle", "--json", "--run-dir", str(run_dir), *mode)
    up_seconds = time.monotonic() - started
    if up.returncode != 0:
        raise RuntimeError(f"lab up failed ({up.returncode}): {up.stderr.strip()[-2000:]}")
    state = json.loads(up.stdout)
    try:
        pids = tree([int(state["pid"])])
        cpu = cpu_seconds(pids)
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
        "cpu_s": round(cpu, 1),
        "down_s": round(down_seconds, 2),
        "pss_mib": round(pss / MIB, 1),
        "rss_mib": round(rss / MIB, 1),
        "pss_per_agent_mib": round(pss / MIB / agents, 2),
        "agent_process_pss_mib": round(statistics.median(p for p, _ in per_process) / MIB, 1) if per_process else None,
        "agent_process_rss_mib": round(statistics.median(r for _, r in per_process) / MIB, 1) if per_process else None,
        "load": [round(load, 1), round(_load(), 1)],
    }


def _with_torch(pid: int) -> bool:
    try:
        return "libtorch" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


def run_round(topology: Path, mode: list[str]) -> dict[str, Any]:
    """``lab run`` to its outcome, timed, its memory sampled (module docstring); RuntimeError when it fails."""
    load = _load()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "an_agent.cli", "lab", "run", str(topology), "--json", "--quiet", *mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = [0, 0]  # PSS, processes
    torch: set[int] = set()
    done = threading.Event()

    def sample() -> None:
        while not done.wait(SAMPLE_EVERY):
            pids = tree([process.pid])
            pss = pss_bytes(pids)
            if pss > peak[0]:
                peak[:] = [pss, len(pids)]
            torch.update(p for p in pids if p not in torch and _with_torch(p))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = process.communicate()
    seconds = time.monotonic() - started
    done.set()
    sampler.join()
    if process.returncode not in (0, 3) or not out.strip():
        raise RuntimeError(f"lab run failed ({process.returncode}): {err.strip()[-2000:]}")
    result = json.loads(out)
    return {
        "agents": len(result.get("agents", [])),
        "run_s": round(seconds, 1),
        "closed_loop": bool(result.get("outcome", {}).get("closed_loop")),
        "peak_pss_mib": round(peak[0] / MIB, 1),
        "peak_processes": peak[1],
        "processes_with_torch": len(torch),
        "load": [round(load, 1), round(_load(), 1)],
    }


def measure(agents: int, mode: str, rounds: int, run: bool, work: Path) -> dict[str, Any]:
    sites, domains = SIZES[agents]
    topology = work / f"generated-{agents}.yaml"
    if not topology.exists():
        size = ["--sites", str(sites), "--domains", str(domains), "--seed", "1"]
        gen = _cli("lab", "generate", *size, "-o", str(topology))
        if gen.returncode != 0:
            raise RuntimeError(f"lab generate failed: {gen.stderr.strip()}")
    entry: dict[str, Any] = {
        "agents": agents,
        "mode": mode,
        "topology": f"lab generate --sites {sites} --domains {domains} --seed 1",
        "up": [],
        "run": [],
        "errors": [],
    }
    for i in range(rounds):  # a failure is a result too: recorded, and the next measurement goes on
        try:
            entry["up"].append(up_round(topology, work / f"run-{agents}-{mode}-{i}", MODES[mode]))
        except RuntimeError as exc:
            entry["errors"].append(f"up: {exc}")
        if run:
            try:
                entry["run"].append(run_round(topology, MODES[mode]))
            except RuntimeError as exc:
                entry["errors"].append(f"run: {exc}")
    return entry


def _median(entry: dict[str, Any], measurement: str, key: str) -> float | None:
    values = [r[key] for r in entry.get(measurement, []) if r.get(key) is not None]
    return statistics.median(values) if values else None


def check_targets(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each issue-30 target that was measured: its median and whether it holds."""
    out = []
    for agents, mode, measurement, key, limit, what in TARGETS:
        for entry in entries:
            if entry["agents"] == agents and entry["mode"] == mode:
                value = _median(entry, measurement, key)
                failed = [e for e in entry["errors"] if e.startswith(measurement)]
                if value is not None or failed:
                    met = value is not None and value <= limit and not failed
                    if key == "run_s":
                        met = met and all(r["closed_loop"] for r in entry["run"])
                    out.append(
                        {"target": f"{agents} agents, {mode}: {what}", "limit": what, "value": value, "met": met}
                    )
    return out


def _print(entries: list[dict[str, Any]], targets: list[dict[str, Any]]) -> None:
    for entry in entries:
        print(f"{entry['agents']} agents ({entry['topology']}), {entry['mode']}")
        for r in entry["up"]:
            one = (
                f", one agent process {r['agent_process_pss_mib']} MiB PSS ({r['agent_process_rss_mib']} RSS)"
                if r["agent_process_pss_mib"] is not None
                else ""
            )
            print(
                f"  up {r['up_s']:6.2f} s (CPU {r['cpu_s']} s)  down {r['down_s']:5.2f} s"
                f"  PSS {r['pss_mib']:7.1f} MiB in {r['processes']}"
                f" process(es), {r['pss_per_agent_mib']:.2f} MiB per agent{one}"
                f"  (load {r['load'][0]} -> {r['load'][1]})"
            )
        for r in entry.get("run", []):
            print(
                f"  run {r['run_s']:6.1f} s to the outcome (closed loop: {r['closed_loop']}), peak PSS"
                f" {r['peak_pss_mib']:.1f} MiB in {r['peak_processes']} process(es), torch loaded in"
                f" {r['processes_with_torch']}  (load {r['load'][0]} -> {r['load'][1]})"
            )
        for error in entry["errors"]:
            print(f"  FAILED {error[:400]}")
    for t in targets:
        print(f"{'met ' if t['met'] else 'MISSED'}  {t['target']}: {t['value']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", default="12,50,100", help="sizes in both modes (of 12, 50, 100, 200)")
    parser.add_argument("--modes", default="in-process,processes", help="modes for --agents")
    parser.add_argument(
        "--netns-agents", default="100,200", help="sizes run with --netns (root; empty: none; default 100,200)"
    )
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--no-run", action="store_true", help="only bring-up and memory, no lab run")
    parser.add_argument("--quick", action="store_true", help="12 and 50 agents, no --netns")
    parser.add_argument("--json", action="store_true", help="print the measurements and targets as JSON")
    args = parser.parse_args(argv)
    sizes = [12, 50] if args.quick else [int(a) for a in args.agents.split(",") if a]
    netns_sizes = [] if args.quick or os.geteuid() != 0 else [int(a) for a in args.netns_agents.split(",") if a]
    plan = [(n, mode) for n in sizes for mode in args.modes.split(",")] + [(n, "netns") for n in netns_sizes]
    unknown = [f"{n} {mode}" for n, mode in plan if n not in SIZES or mode not in MODES]
    if unknown:
        parser.error(f"unknown size or mode: {', '.join(unknown)} (sizes {sorted(SIZES)}, modes {sorted(MODES)})")
    entries = []
    with tempfile.TemporaryDirectory(prefix="an-bench-lab-") as tmp:
        for agents, mode in plan:
            print(f"measuring {agents} agents, {mode} ...", file=sys.stderr, flush=True)
            entries.append(measure(agents, mode, args.rounds, not args.no_run, Path(tmp)))
    targets = check_targets(entries)
    if args.json:
        print(json.dumps({"entries": entries, "targets": targets}, indent=2))
    else:
        _print(entries, targets)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
