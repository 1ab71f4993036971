"""Client round-trip times: our NETCONF client against stock ncclient, on the same agent.

    python -m bench.client_rtt [--n N] [--stock-n M] [--runs R] [--json]

Starts one agent (`an_agent.server.AgentServer`) in a child process on a free
loopback port, so that client and server do not share a GIL, then measures
with both clients, interleaved run by run:

- ``get``:  one ``<get>`` of /irtf-agent:agent (subtree filter);
- ``task``: one task round trip, i.e. ``<edit-config>`` creating a task
  (taskAssign, with ``task-async true`` as our CLI sends it: the reply comes
  when the task is admitted, not when it ends) followed by a ``<get>`` of that
  task (taskResultQuery).

Each run takes N samples per operation with our client and M with stock
ncclient (which costs ~100 ms per RPC, hence a smaller default M); the table
shows the median over runs of each run's p50 and p99. It also reports the
agent process's CPU time per ``<get>`` (from /proc, during our client's runs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from lxml import etree
from ncclient import manager as nc_manager

import an_agent
from an_agent.errors import AnAgentError
from an_agent.model import IRTF_AGENT_NS, NETCONF_BASE_NS, Task, build_prompt, tasks_element
from an_agent.nc.client import NetconfClient

USER = ("bench", "bench")
AGENT_FILTER = f'<agent xmlns="{IRTF_AGENT_NS}"/>'

# Runs in the child process; uses only the AgentServer contract.
_SERVER_SCRIPT = """
import sys
from pathlib import Path
from an_agent.model import AgentProfile, Skill
from an_agent.server import AgentServer, ServerConfig
profile = AgentProfile("IRTF-bench-agent-1.0", "benchmark agent", "1.0.0", "an-agent",
                       skills=[Skill("diagnose", "finds faults", ["fault"], ["text"], ["text"])])
# schemas="off": the same small /agent as in bench.run's comparison (no scenario templates under it).
config = ServerConfig(state_dir=Path(sys.argv[1]), port=0, users={sys.argv[2]: sys.argv[3]}, profile=profile,
                      schemas="off")
with AgentServer(config) as server:
    print(server.port, flush=True)
    sys.stdin.read()  # serve until the parent closes our stdin
"""


@contextmanager
def agent_process() -> Iterator[tuple[int, int]]:
    """An agent in a child process: yields (port, pid); stops it on exit."""
    src = Path(an_agent.__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")])))
    with tempfile.TemporaryDirectory(prefix="an-agent-bench-") as state:
        child = subprocess.Popen(
            [sys.executable, "-c", _SERVER_SCRIPT, state, *USER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        try:
            assert child.stdout is not None
            line = child.stdout.readline()
            if not line.strip().isdigit():
                raise RuntimeError(f"the agent did not start (exit code {child.poll()})")
            yield int(line), child.pid
        finally:
            assert child.stdin is not None
            child.stdin.close()
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (Linux /proc); None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(samples: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def timed(n: int, operation: Callable[[int], Any]) -> list[float]:
    """Milliseconds of each of ``n`` calls ``operation(i)``."""
    out = []
    for i in range(n):
        start = time.perf_counter()
        operation(i)
        out.append((time.perf_counter() - start) * 1000.0)
    return out


def task_xml(task_id: str) -> etree._Element:
    task = Task(task_id, content=build_prompt("gNB-1", "diagnose the outage"), task_async=True)
    return tasks_element([task], operation="create")


def task_filter(task_id: str) -> str:
    return f'<tasks xmlns="{IRTF_AGENT_NS}"><task><task-id>{task_id}</task-id></task></tasks>'


class Ours:
    name = "an-agent client"

    def __init__(self, port: int, prefix: str) -> None:
        self.prefix = prefix
        self.client = NetconfClient.connect("127.0.0.1", port, username=USER[0], password=USER[1])

    def get(self, _: int) -> None:
        self.client.get(filter=AGENT_FILTER)

    def task(self, i: int) -> None:
        task_id = f"{self.prefix}-{i}"
        self.client.edit_config(task_xml(task_id))
        self.client.get(filter=task_filter(task_id))

    def close(self) -> None:
        self.client.close()


class Stock:
    name = "stock ncclient"

    def __init__(self, port: int, prefix: str) -> None:
        self.prefix = prefix
        self.m = nc_manager.connect(
            host="127.0.0.1",
            port=port,
            username=USER[0],
            password=USER[1],
            hostkey_verify=False,
            allow_agent=False,
            look_for_keys=False,
        )

    def get(self, _: int) -> None:
        self.m.get(filter=("subtree", AGENT_FILTER))

    def task(self, i: int) -> None:
        task_id = f"{self.prefix}-{i}"
        config = etree.Element("{urn:ietf:params:xml:ns:netconf:base:1.0}config")
        config.append(task_xml(task_id))
        self.m.edit_config(config=config, target="running")
        self.m.get(filter=("subtree", task_filter(task_id)))

    def close(self) -> None:
        self.m.close_session()


def remove_all_tasks(port: int) -> bool:
    """Empty /tasks so that every task phase starts from the same datastore size; False if refused."""
    with NetconfClient.connect("127.0.0.1", port, username=USER[0], password=USER[1]) as client:
        try:
            remove = etree.Element(f"{{{IRTF_AGENT_NS}}}tasks")
            remove.set(f"{{{NETCONF_BASE_NS}}}operation", "remove")
            client.edit_config(remove)
        except AnAgentError:
            return False
    return True


def run(n: int, stock_n: int, runs: int) -> dict[str, Any]:
    """All ``<get>`` phases first, then all task phases (each interleaved across clients).

    Tasks accumulate in the agent and its per-request cost may grow with
    them, so the ``<get>`` runs go first, and /tasks is emptied after each
    task phase.
    """
    kinds: tuple[tuple[type[Ours] | type[Stock], int], ...] = ((Ours, n), (Stock, stock_n))
    per_run: dict[str, dict[str, list[tuple[float, float]]]] = {
        Ours.name: {"get": [], "task": []},
        Stock.name: {"get": [], "task": []},
    }
    cpu_per_get: list[float] = []
    cleanups: list[bool] = []
    with agent_process() as (port, pid):
        for op in ("get", "task"):
            for r in range(runs):
                for kind, samples in kinds:
                    client = kind(port, f"bench-{kind.__name__}-{r}")
                    try:
                        timed(5, client.get)  # warm-up: caches, first-use imports
                        cpu_before = process_cpu_seconds(pid)
                        times = timed(samples, client.get if op == "get" else client.task)
                        cpu_after = process_cpu_seconds(pid)
                    finally:
                        client.close()
                    if op == "get" and kind is Ours and cpu_before is not None and cpu_after is not None:
                        cpu_per_get.append((cpu_after - cpu_before) * 1000.0 / samples)
                    if op == "task":
                        cleanups.append(remove_all_tasks(port))
                    per_run[kind.name][op].append((percentile(times, 0.5), percentile(times, 0.99)))
    results: dict[str, Any] = {}
    for name, operations in per_run.items():
        results[name] = {
            op: {
                "p50_ms": statistics.median(p50 for p50, _ in values),
                "p99_ms": statistics.median(p99 for _, p99 in values),
            }
            for op, values in operations.items()
        }
    return {
        "runs": runs,
        "samples_per_run": {Ours.name: n, Stock.name: stock_n},
        "results": results,
        "server_cpu_ms_per_get": statistics.median(cpu_per_get) if cpu_per_get else None,
        "tasks_emptied_between_phases": all(cleanups),
    }


def print_table(report: dict[str, Any]) -> None:
    print(
        f"median over {report['runs']} interleaved runs; samples per run: "
        + ", ".join(f"{name} {count}" for name, count in report["samples_per_run"].items())
    )
    print(f"{'client':<18} {'operation':<28} {'p50 ms':>9} {'p99 ms':>9}")
    labels = {"get": "<get> /agent", "task": "task round trip (assign+get)"}
    for name, operations in report["results"].items():
        for op, value in operations.items():
            print(f"{name:<18} {labels[op]:<28} {value['p50_ms']:>9.2f} {value['p99_ms']:>9.2f}")
    if not report["tasks_emptied_between_phases"]:
        print("note: the agent refused to empty /tasks between task phases; later phases ran on more tasks")
    if report["server_cpu_ms_per_get"] is not None:
        print(f"agent CPU per <get> /agent: {report['server_cpu_ms_per_get']:.3f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.client_rtt", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200, help="samples per operation per run, our client (200)")
    parser.add_argument("--stock-n", type=int, default=20, help="samples per operation per run, stock ncclient (20)")
    parser.add_argument("--runs", type=int, default=3, help="interleaved runs (3)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of the table")
    args = parser.parse_args(argv)
    report = run(args.n, args.stock_n, args.runs)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
