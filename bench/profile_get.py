"""Where an-agent spends server CPU on one request: py-spy over `an-agent serve` while a client loops.

    python -m bench.profile_get [--seconds 15] [--request profile|tasks] [--top 25]

Starts an agent the way benchmark 1 does (bench profile, ``--schemas off``,
100 tasks for ``tasks``), sends the request back to back on one session, and
samples every thread of the server with py-spy (``py-spy record --format raw
--idle`` off, so waiting threads do not count). Prints the share of samples
per function, by "self" (where the CPU was) and by "total" (what called it),
which is the before/after profile in bench/README.md. Needs ``py-spy`` (a dev
tool, not a dependency of the agent: ``pip install py-spy==0.4.3``) and ptrace
rights over our own child (root, or ``kernel.yama.ptrace_scope`` 0/1).
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench import data
from bench.ours import AgentProcess
from bench.target import Target

TASKS = 100


def _loop(agent: Target, body: str, stop: threading.Event, counter: list[int]) -> None:
    with agent.connect() as session:
        while not stop.is_set():
            session.request(body)
            counter[0] += 1


def _summarise(raw: Path, top: int, gil: bool = False) -> str:
    """Self and total shares per function from py-spy's collapsed-stack output."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in raw.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        frames = [f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0] + ")" for f in stack.split(";") if " (" in f]
        if not frames:
            continue
        samples += count
        own[frames[-1]] += count
        for frame in set(frames):
            total[frame] += count
    which = "the thread holding the interpreter lock" if gil else "active threads only"
    lines = [f"{samples} samples ({which})", "", "self %  function"]
    lines += [f"{100 * n / samples:6.1f}  {name}" for name, n in own.most_common(top)]
    lines += ["", "total %  function"]
    lines += [f"{100 * n / samples:6.1f}  {name}" for name, n in total.most_common(top)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.profile_get", description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="how long to sample (default 15)")
    parser.add_argument("--request", choices=("profile", "tasks"), default="profile", help="which request to loop")
    parser.add_argument("--top", type=int, default=25, help="functions to list (default 25)")
    parser.add_argument(
        "--path", choices=("paramiko", "sshd"), default="paramiko", help="SSH in the agent, or the agent's sshd"
    )
    parser.add_argument(
        "--gil", action="store_true", help="sample only the thread holding the interpreter lock (Python CPU)"
    )
    args = parser.parse_args(argv)
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        print("profile_get: py-spy not found (pip install py-spy==0.4.3)", file=sys.stderr)
        return 2
    body = data.GET_PROFILE if args.request == "profile" else data.GET_CONFIG_TASKS
    with AgentProcess(data.profile_json(), sshd=args.path == "sshd") as agent, tempfile.TemporaryDirectory() as tmp:
        if args.request == "tasks":
            with agent.connect() as session:
                session.request(data.edit_config(data.tasks_xml(TASKS)))
        stop, counter = threading.Event(), [0]
        target: Target = agent.sshd_target() if args.path == "sshd" else agent
        client = threading.Thread(target=_loop, args=(target, body, stop, counter), daemon=True)
        client.start()
        time.sleep(1.0)  # warm-up
        raw = Path(tmp) / "raw.txt"
        began, done = time.monotonic(), counter[0]
        record = [spy, "record", "--pid", str(agent.pid), "--duration", str(int(args.seconds)), "--rate", "250"]
        if args.gil:
            record.append("--gil")
        subprocess.run(
            [*record, "--format", "raw", "--output", str(raw), "--nonblocking"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        rate = (counter[0] - done) / (time.monotonic() - began)
        stop.set()
        client.join(timeout=10)
        print(f"{args.request} over {args.path}: {rate:.0f} requests/s while sampled (one session)")
        print(_summarise(raw, args.top, args.gil))
    return 0


if __name__ == "__main__":
    sys.exit(main())
