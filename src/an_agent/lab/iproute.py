"""``ip`` (iproute2) for lab networks (`an_agent.lab.netns`): running it, finding what carries a lab's label
on this host, and removing a lab by its label.

A lab's objects are named ``anl-<id>-...`` (`LABEL`): namespaces, links (the bridge ``anl-<id>-br``, the
host ends of the veths) and ``/etc/netns/anl-<id>-<agent>`` directories. `destroy_lab` removes all of
them and stops the processes still running in the namespaces (a namespace lives on while a process holds
it), whether or not anything else remembers the lab. Needs root and ``ip``; without them `LabNetworkError`
says so.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from an_agent.errors import ConfigError, LabNetworkError

LABEL = "anl-"
"""The prefix of every object a lab network makes; ``anl-<id>-`` is one lab's label."""
NETNS_ETC = Path("/etc/netns")
RUN_NETNS = Path("/run/netns")
"""Where ``ip netns add`` mounts named namespaces."""
IP_TIMEOUT = 60.0
STOP_GRACE = 5.0
LINKS_GONE_WAIT = 10.0
"""Real seconds `destroy_lab` waits for the kernel to remove the veths of the namespaces it deleted."""
LAB_ID = re.compile(r"^[0-9a-f]{6}$")


def ip_command() -> str:
    """The path of ``ip``; `LabNetworkError` when iproute2 is not installed."""
    path = shutil.which("ip") or shutil.which("ip", path="/usr/sbin:/sbin:/usr/bin:/bin")
    if path is None:
        raise LabNetworkError("--netns needs the 'ip' command (iproute2), which is not installed")
    return path


def require_support() -> str:
    """Check that lab namespaces can be made here (root, ``ip``); returns the path of ``ip``."""
    if os.geteuid() != 0:
        raise LabNetworkError(
            "--netns needs root (it creates network namespaces, a bridge and veth links): "
            "run the command as root, or leave out --netns to run the lab on 127.0.0.1"
        )
    return ip_command()


def run_ip(*args: str, batch: Sequence[str] = (), check: bool = True) -> str:
    """Run ``ip ARGS`` (with ``-batch -`` fed ``batch`` when given); its stdout, or `LabNetworkError`."""
    argv = [ip_command(), *args, *(["-batch", "-"] if batch else [])]
    try:
        done = subprocess.run(
            argv, input="".join(f"{line}\n" for line in batch), capture_output=True, text=True, timeout=IP_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        raise LabNetworkError(f"{' '.join(argv)}: no answer in {IP_TIMEOUT:.0f} s") from None
    except OSError as exc:
        raise LabNetworkError(f"{' '.join(argv)}: {exc.strerror or exc}") from None
    if check and done.returncode != 0:
        what = "; ".join(batch) if batch else " ".join(args)
        raise LabNetworkError(f"ip {what}: {done.stderr.strip() or f'exit code {done.returncode}'}")
    return done.stdout


def ip_json(*args: str) -> list[dict[str, Any]]:
    text = run_ip("-j", *args).strip()
    value = json.loads(text) if text else []
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def host_namespaces() -> list[str]:
    return [str(n["name"]) for n in ip_json("netns", "list") if "name" in n]


def host_links() -> list[str]:
    return [str(n["ifname"]) for n in ip_json("link", "show") if "ifname" in n]


def host_etc_dirs() -> list[str]:
    try:
        return sorted(p.name for p in NETNS_ETC.iterdir())
    except OSError:
        return []


def leftover_labs() -> dict[str, list[str]]:
    """Lab id -> the namespaces, links and ``/etc/netns`` entries of that lab present on this host."""
    found: dict[str, list[str]] = {}
    for kind, names in (("netns", host_namespaces()), ("link", host_links()), ("etc", host_etc_dirs())):
        for name in names:
            parts = name.split("-", 2)
            if name.startswith(LABEL) and len(parts) == 3 and LAB_ID.match(parts[1]):
                found.setdefault(parts[1], []).append(f"{kind} {name}")
    return found


@dataclass(frozen=True)
class Removed:
    """What a teardown removed (names), and the pids of processes it had to stop."""

    lab_id: str
    namespaces: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    etc: list[str] = field(default_factory=list)
    processes: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "lab_id": self.lab_id,
            "namespaces": self.namespaces,
            "links": self.links,
            "etc": self.etc,
            "processes": self.processes,
        }


def pids_in(namespaces: Sequence[str]) -> set[int]:
    """The processes whose network namespace is one of ``namespaces`` (one pass over /proc).

    What ``ip netns pids`` does, for many namespaces at once: a namespace is the nsfs inode that
    ``/run/netns/NAME`` is a bind mount of, and ``/proc/PID/ns/net`` of each process inside.
    """
    wanted = set()
    for ns in namespaces:
        with contextlib.suppress(OSError):
            st = os.stat(RUN_NETNS / ns)
            wanted.add((st.st_dev, st.st_ino))
    pids: set[int] = set()
    if not wanted:
        return pids
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # gone meanwhile, or a zombie (it holds no namespace)
                st = os.stat(f"/proc/{entry.name}/ns/net")
                if (st.st_dev, st.st_ino) in wanted:
                    pids.add(int(entry.name))
    return pids


def _stop_processes(namespaces: Sequence[str], grace: float) -> list[int]:
    """Stop every process in ``namespaces``: SIGTERM, then SIGKILL to what is left after ``grace`` s."""

    def running() -> set[int]:
        return pids_in(namespaces) - {os.getpid()}

    seen = running()
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        for pid in running():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while running() and time.monotonic() < deadline:
            time.sleep(0.1)
    left = running()
    if left:
        raise LabNetworkError(f"processes {sorted(left)} in the lab's namespaces survived SIGKILL")
    return sorted(seen)


def destroy_lab(lab_id: str, grace: float = STOP_GRACE) -> Removed:
    """Remove every process, link, namespace and ``/etc/netns`` entry labelled ``anl-<lab_id>-``.

    Namespaces go first: the kernel then removes the veth pairs in them in one batch, where deleting the
    pairs one by one costs tens of milliseconds each (7-14 s for a lab of 200 agents; 0.3 s this way). It
    frees a deleted namespace asynchronously, so the links are waited for (`LINKS_GONE_WAIT`); what is
    left then, and the bridge, are deleted. `LabNetworkError` if anything is still there after.
    """
    if not LAB_ID.match(lab_id):
        raise ConfigError(f"not a lab network id: {lab_id!r}")
    require_support()
    label = f"{LABEL}{lab_id}-"
    namespaces = [n for n in host_namespaces() if n.startswith(label)]
    processes = _stop_processes(namespaces, grace)
    links = [n for n in host_links() if n.startswith(label)]
    # one `ip` for all; -force: go on past an object that vanished meanwhile (checked below)
    if namespaces:
        run_ip("-force", batch=[f"netns del {n}" for n in namespaces], check=False)
    deadline = time.monotonic() + LINKS_GONE_WAIT
    lingering = [n for n in host_links() if n.startswith(label)]
    while any(not n.endswith("-br") for n in lingering) and time.monotonic() < deadline:
        time.sleep(0.05)
        lingering = [n for n in host_links() if n.startswith(label)]
    # the bridge last: deleting it first would only detach the veths
    if lingering:
        batch = [f"link del {n}" for n in sorted(lingering, key=lambda n: n.endswith("-br"))]
        run_ip("-force", batch=batch, check=False)
    etc = [n for n in host_etc_dirs() if n.startswith(label)]
    for name in etc:
        shutil.rmtree(NETNS_ETC / name, ignore_errors=True)
    left = leftover_labs().get(lab_id)
    if left:
        raise LabNetworkError(f"lab network {lab_id}: could not remove {', '.join(left)}")
    return Removed(lab_id, namespaces, links, etc, processes)
