"""A lab's own network: one Linux network namespace per agent on a lab bridge (``--netns``, issue 12).

Layout of one lab (``create``), every object named with the lab's label ``anl-<id>-`` (``<id>``: 6 random
hex digits) so that it can be found again after a crash:

- a bridge ``anl-<id>-br`` on the host holding the lab's first address (``.1``): the lab process serves
  its control channel there, and people on the host reach the agents through it;
- per agent a namespace ``anl-<id>-<agent>`` with loopback up and a veth pair: ``eth0`` inside with the
  agent's address, ``anl-<id>-<n>`` on the bridge (``n``: the last byte of the agent's address);
- no default route in any namespace: the only route is the lab's subnet, so an agent reaches its peers
  and the lab's control address and nothing else (not the host's loopback: ``127.0.0.1`` inside a
  namespace is the namespace's own loopback);
- ``/etc/netns/anl-<id>-<agent>/hosts``, which ``ip netns exec`` bind-mounts over ``/etc/hosts``: every
  agent of the lab by name, and the lab itself as ``control.lab``;
- a state file ``netns.json`` (0600) in the lab's run directory, written before anything is made.

Address plan: the benchmarking range 198.18.0.0/15 (RFC 2544, never routed on the Internet), as in the
containerlab export, which takes 198.18.0.0/24 for management and 198.19.0.0/16 for its links; lab
networks use the other 255 /24 subnets, 198.18.1.0/24 to 198.18.255.0/24, so that an exported lab can
run next to them. A lab takes the lowest subnet that no address on the host uses yet (chosen under a
host-wide lock, ``/run/an-agent/netns.lock``): labs side by side never share one. ``.1`` is the lab,
agents get ``.2`` upwards in the order given: at most 253 agents per lab.

Partitions (``partition``/``heal``) are ``unreachable`` routes to the other agent's address in both
agents' namespaces: nothing passes between the two while the routes exist (a new connection fails at once
with "No route to host"; segments of an established one are dropped and TCP retransmits them after
``heal``), every other pair is untouched. (A ``blackhole`` route drops the same but makes a connect fail
with EINVAL, "Invalid argument", which tells the agent's operator nothing.)

``destroy``/`destroy_lab` (`an_agent.lab.iproute`) remove everything that carries the label, not only
what the state file lists (a crash half-way through ``create`` leaves objects the file never saw): first
the processes still running in the lab's namespaces (SIGTERM, SIGKILL after a grace period; a namespace
lives on while a process holds it), then links, namespaces and ``/etc/netns`` directories. Needs root
and ``ip`` (iproute2); without them `LabNetworkError` says so.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import re
import secrets
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from an_agent.errors import ConfigError, LabNetworkError
from an_agent.lab.export import write_private
from an_agent.lab.iproute import (
    LAB_ID,
    LABEL,
    NETNS_ETC,
    RUN_NETNS,
    STOP_GRACE,
    Removed,
    destroy_lab,
    ip_command,
    ip_json,
    leftover_labs,
    pids_in,
    require_support,
    run_ip,
)

__all__ = [
    "CONTROL_NAME",
    "LABEL",
    "MAX_AGENTS",
    "NETNS_ETC",
    "RUN_NETNS",
    "STATE_FILE",
    "SUBNETS",
    "SUPERNET",
    "LabNetwork",
    "Removed",
    "Slot",
    "cleanup",
    "create",
    "destroy_lab",
    "leftover_labs",
    "load",
    "require_support",
]

SUPERNET = ipaddress.IPv4Network("198.18.0.0/15")
SUBNET_PREFIX = 24
SUBNETS = tuple(ipaddress.IPv4Network("198.18.0.0/16").subnets(new_prefix=SUBNET_PREFIX))[1:]
"""Where lab networks live: 198.18.1.0/24 .. 198.18.255.0/24 (module docstring)."""
MAX_AGENTS = 2 ** (32 - SUBNET_PREFIX) - 3
"""A /24 minus network, broadcast and the lab's own address."""
STATE_FILE = "netns.json"
CONTROL_NAME = "control.lab"
"""The lab's address by name inside every namespace (a dot: never an agent name)."""
INNER_LINK = "eth0"
LOCK_FILE = Path("/run/an-agent/netns.lock")
_AGENT = re.compile(r"^[a-z][a-z0-9-]*$")


def _used_subnets() -> set[ipaddress.IPv4Network]:
    used = set()
    for link in ip_json("-4", "addr", "show"):
        for info in link.get("addr_info", []):
            address = ipaddress.IPv4Address(info["local"])
            if address in SUPERNET:
                used.add(ipaddress.IPv4Network(f"{address}/{SUBNET_PREFIX}", strict=False))
    return used


@contextlib.contextmanager
def _host_lock() -> Iterator[None]:
    """Serialises subnet and id choice between labs being made at the same time on this host."""
    LOCK_FILE.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


# ---- one lab ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slot:
    """One agent's place in the lab network."""

    name: str
    netns: str
    address: str
    link: str
    """The host end of its veth pair, on the lab bridge."""


@dataclass(frozen=True)
class LabNetwork:
    """A lab's namespaces and bridge, as `create` made them or `load` found them in the state file."""

    lab_id: str
    subnet: ipaddress.IPv4Network
    bridge: str
    host_address: str
    """The lab's own address on the bridge (serve the control channel here)."""
    slots: dict[str, Slot]
    run_dir: Path

    @property
    def label(self) -> str:
        return f"{LABEL}{self.lab_id}-"

    def slot(self, agent: str) -> Slot:
        """The agent's slot; `ConfigError` for a name that is not in this lab."""
        try:
            return self.slots[agent]
        except KeyError:
            raise ConfigError(f"no agent {agent!r} in this lab network (agents: {', '.join(self.slots)})") from None

    def address(self, agent: str) -> str:
        """The agent's address: what it binds and what its peers connect to."""
        return self.slot(agent).address

    def prefix(self, agent: str) -> list[str]:
        """The command prefix that runs a program in the agent's namespace (``ip netns exec NS``)."""
        return [ip_command(), "netns", "exec", self.slot(agent).netns]

    def pids(self, agent: str) -> list[int]:
        """The processes running in the agent's namespace."""
        return sorted(pids_in([self.slot(agent).netns]))

    def hosts_text(self) -> str:
        """The hosts file of every namespace of the lab."""
        lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost", f"{self.host_address}\t{CONTROL_NAME}"]
        lines += [f"{s.address}\t{s.name}" for s in self.slots.values()]
        return "\n".join(lines) + "\n"

    # ---- partitions ----
    def _pair(self, a: str, b: str) -> tuple[Slot, Slot]:
        first, second = self.slot(a), self.slot(b)
        if first.name == second.name:
            raise ConfigError(f"cannot partition agent {a!r} from itself")
        return first, second

    def partition(self, a: str, b: str) -> None:
        """Drop all traffic between agents ``a`` and ``b`` (both directions) until `heal`; idempotent."""
        first, second = self._pair(a, b)
        for here, there in ((first, second), (second, first)):
            run_ip("-n", here.netns, "route", "replace", "unreachable", f"{there.address}/32")

    def heal(self, a: str, b: str) -> None:
        """End a `partition` of ``a`` and ``b``; nothing happens when they are not partitioned."""
        first, second = self._pair(a, b)
        for here, there in ((first, second), (second, first)):
            run_ip("-n", here.netns, "route", "del", "unreachable", f"{there.address}/32", check=False)

    def partitions(self) -> set[frozenset[str]]:
        """The pairs of agents currently partitioned (a partition route in at least one direction)."""
        by_address = {s.address: s.name for s in self.slots.values()}
        pairs: set[frozenset[str]] = set()
        for slot in self.slots.values():
            for route in ip_json("-n", slot.netns, "route", "show", "type", "unreachable"):
                peer = by_address.get(str(route.get("dst", "")).removesuffix("/32"))
                if peer is not None:
                    pairs.add(frozenset((slot.name, peer)))
        return pairs

    def destroy(self, grace: float = STOP_GRACE) -> Removed:
        """Remove the lab's processes, namespaces, links and hosts files, and its state file."""
        removed = destroy_lab(self.lab_id, grace)
        (self.run_dir / STATE_FILE).unlink(missing_ok=True)
        return removed

    def to_json(self) -> dict[str, Any]:
        return {
            "lab_id": self.lab_id,
            "label": self.label,
            "subnet": str(self.subnet),
            "bridge": self.bridge,
            "host_address": self.host_address,
            "agents": [vars(s) for s in self.slots.values()],
        }


def _plan(lab_id: str, subnet: ipaddress.IPv4Network, agents: Sequence[str], run_dir: Path) -> LabNetwork:
    hosts = list(subnet.hosts())
    label = f"{LABEL}{lab_id}-"
    slots = {
        name: Slot(name, f"{label}{name}", str(hosts[i + 1]), f"{label}{int(hosts[i + 1]) & 0xFF}")
        for i, name in enumerate(agents)
    }
    return LabNetwork(lab_id, subnet, f"{label}br", str(hosts[0]), slots, run_dir)


def _check_agents(agents: Sequence[str]) -> None:
    if not agents:
        raise ConfigError("a lab network needs at least one agent")
    if len(agents) > MAX_AGENTS:
        raise ConfigError(f"a lab network holds at most {MAX_AGENTS} agents ({len(agents)} given)")
    if len(set(agents)) != len(agents):
        raise ConfigError("agent names in a lab network must be unique")
    bad = [a for a in agents if not _AGENT.match(a)]
    if bad:
        raise ConfigError(f"agent names must match {_AGENT.pattern}: {', '.join(bad)}")


def create(run_dir: Path, agents: Sequence[str]) -> LabNetwork:
    """Make a lab network for ``agents`` (module docstring) and record it in ``run_dir/netns.json``.

    On failure everything made so far is removed again and `LabNetworkError` is raised.
    """
    require_support()
    _check_agents(agents)
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    with _host_lock():
        taken = set(leftover_labs())
        lab_id = secrets.token_hex(3)
        while lab_id in taken:
            lab_id = secrets.token_hex(3)
        used = _used_subnets()
        subnet = next((s for s in SUBNETS if s not in used), None)
        if subnet is None:
            raise LabNetworkError(
                f"all {len(SUBNETS)} lab subnets ({SUBNETS[0]} to {SUBNETS[-1]}) are in use on this host"
            )
        net = _plan(lab_id, subnet, agents, run_dir)
        _write_state(net)
        try:
            _build(net)
        except BaseException:
            with contextlib.suppress(LabNetworkError):
                net.destroy()
            raise
    return net


def _build(net: LabNetwork) -> None:
    slots = list(net.slots.values())
    prefix = f"{net.subnet.prefixlen}"
    host: list[str] = [f"netns add {s.netns}" for s in slots]
    host += [
        f"link add {net.bridge} type bridge",
        f"addr add {net.host_address}/{prefix} dev {net.bridge}",
        f"link set {net.bridge} up",
    ]
    for s in slots:
        host += [
            f"link add {s.link} type veth peer name {INNER_LINK} netns {s.netns}",
            f"link set {s.link} master {net.bridge}",
            f"link set {s.link} up",
        ]
    run_ip(batch=host)
    hosts_text = net.hosts_text()
    for s in slots:
        run_ip(
            "-n",
            s.netns,
            batch=["link set lo up", f"addr add {s.address}/{prefix} dev {INNER_LINK}", f"link set {INNER_LINK} up"],
        )
        _write_hosts(s.netns, hosts_text)


def _write_hosts(netns: str, text: str) -> None:
    # /etc/netns exists on many systems already (0755, as iproute2 makes it); ours below it is 0700.
    # The hosts file itself is 0644 like /etc/hosts, whose place it takes: a non-root program in the
    # namespace must be able to resolve names, and it holds only what `lab up --json` prints anyway.
    NETNS_ETC.mkdir(mode=0o755, exist_ok=True)
    directory = NETNS_ETC / netns
    directory.mkdir(mode=0o700, exist_ok=True)
    path = directory / "hosts"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o644)


def _write_state(net: LabNetwork) -> None:
    state = {**net.to_json(), "created_by": os.getpid(), "created": time.time()}
    tmp = net.run_dir / f".{STATE_FILE}.tmp"
    write_private(tmp, json.dumps(state, indent=2) + "\n")
    os.replace(tmp, net.run_dir / STATE_FILE)


def load(run_dir: Path) -> LabNetwork | None:
    """The lab network recorded in ``run_dir`` (None when there is none); `ConfigError` if unreadable."""
    path = run_dir / STATE_FILE
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        lab_id = str(raw["lab_id"])
        if not LAB_ID.match(lab_id):
            raise ValueError(f"bad lab id {lab_id!r}")
        slots = {
            str(a["name"]): Slot(str(a["name"]), str(a["netns"]), str(a["address"]), str(a["link"]))
            for a in raw["agents"]
        }
        return LabNetwork(
            lab_id, ipaddress.IPv4Network(raw["subnet"]), str(raw["bridge"]), str(raw["host_address"]), slots, run_dir
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"lab network state {path} is unreadable: {exc}") from None


def cleanup(run_dir: Path, grace: float = STOP_GRACE) -> Removed | None:
    """Tear down the lab network recorded in ``run_dir`` (after a crash too); None when none is recorded."""
    net = load(run_dir)
    return None if net is None else net.destroy(grace)
