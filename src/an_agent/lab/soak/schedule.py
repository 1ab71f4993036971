"""The soak's schedule, drawn from a seed: every fault of the network and of the lab, at its simulated instant.

`draw_schedule` is a pure function of its arguments: the same topology, seed and options give the same
list of `SoakEvent` (reproducible: a failing seed can be run again). It covers the whole run up front
(``duration`` wall seconds at ``pace`` simulated seconds per wall second); the report lists it as drawn.

Kinds:

- network faults (`FaultType` values) at random elements of the kinds the topology's roles handle
  (`handled_fault_types`), an element not hit again within `COOLDOWN` so one fault's loop can close
  before the next on the same element (faults on other elements overlap freely);
- ``ticket``: the scenario's tickets again (customers complain while faults are open);
- with ``chaos``: ``kill`` (SIGKILL and restart, any started agent, the directory too), ``freeze``
  (SIGSTOP for ``duration`` wall seconds, then SIGCONT), ``control_drop`` (the agent's connections to
  the lab's control channel cut), ``disk_full`` (its state directory without space for ``duration`` wall
  seconds), and with ``netns`` ``partition`` (two agents, ``duration`` simulated seconds) and
  ``isolate`` (one agent from all the others).

Durations of ``freeze`` and ``disk_full`` are wall seconds: a frozen agent holds the lab's clock, so a
simulated duration would never end. Partitions last simulated seconds, as ``lab run --chaos partition``.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

from an_agent.lab.spec import FaultType, Role, Topology

NETWORK_KINDS = tuple(str(t) for t in FaultType)
CHAOS_KINDS = ("kill", "freeze", "control_drop", "disk_full")
NETNS_KINDS = ("partition", "isolate")
TICKET = "ticket"
COOLDOWN = 4 * 3600.0
"""Simulated seconds before the same element is faulted again (above the longest field repair)."""
FREEZE_WALL_S = (2.0, 12.0)
"""A frozen agent's wall seconds (below the lab's stall timeout: the clock waits for it)."""
DISK_FULL_WALL_S = (3.0, 15.0)
PARTITION_SIM_S = (300.0, 3600.0)
REPAIR_MINUTES = (30.0, 120.0)
TICKET_SHARE = 0.1
"""Share of the events that are tickets (not counted as faults)."""

_HANDLERS: dict[str, Role] = {
    FaultType.LINK_CUT: Role.IP_FAULT,
    FaultType.ROUTER_PORT_FAULT: Role.IP_FAULT,
    FaultType.SITE_POWER_FAILURE: Role.RAN_FAULT,
    FaultType.SITE_SOFTWARE_FAULT: Role.RAN_FAULT,
    FaultType.CELL_MISCONFIGURATION: Role.OPTIMIZATION,
}
"""The role that notices each kind of fault (a link alarm, a site alarm, a cell's KPIs)."""


@dataclass(frozen=True)
class SoakEvent:
    """One event of the schedule: ``kind`` on ``target`` at ``at`` simulated seconds after the start.

    ``target``: an element (network faults), an agent, ``"A,B"`` for a partition, a ticket's agent.
    ``duration``: wall seconds (freeze, disk_full), simulated seconds (partition, isolate), or the fault's
    nominal field-repair minutes (network faults).
    """

    at: float
    kind: str
    target: str
    duration: float = 0.0
    text: str = ""

    @property
    def is_fault(self) -> bool:
        return self.kind != TICKET

    @property
    def is_chaos(self) -> bool:
        return self.kind in CHAOS_KINDS or self.kind in NETNS_KINDS

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if not self.text:
            del out["text"]
        return out


def handled_fault_types(topology: Topology) -> list[str]:
    """The network fault kinds some agent of ``topology`` notices (`_HANDLERS`): the workload's kinds."""
    roles = {a.role for a in topology.agents}
    return [str(t) for t in FaultType if _HANDLERS[t] in roles]


def draw_schedule(
    topology: Topology,
    seed: int,
    *,
    duration: float,
    pace: float,
    rate: float,
    chaos: bool,
    netns: bool,
    disk_full: bool = True,
) -> list[SoakEvent]:
    """Every event of a soak of ``duration`` wall seconds at ``pace``, ``rate`` faults per wall minute.

    Gaps between events are exponential (a Poisson stream); the kind of each fault is drawn uniformly
    among the network kinds the topology handles and, with ``chaos``, the lab's (half of the faults);
    ``disk_full`` only with ``disk_full`` (it needs root to mount a tmpfs per agent).
    """
    if rate <= 0:
        raise ValueError(f"the rate must be above 0 faults per minute, not {rate:g}")
    rng = random.Random(f"an-agent-soak:{seed}")
    horizon = duration * pace
    mean_gap = 60.0 * pace / rate * (1.0 - TICKET_SHARE)
    network_kinds = handled_fault_types(topology)
    started = sorted(a.name for a in topology.agents if a.external is None)
    lab_kinds = [k for k in CHAOS_KINDS if disk_full or k != "disk_full"] + list(NETNS_KINDS if netns else ())
    chaos_kinds = lab_kinds if chaos and started else []
    tickets = [e.ticket for e in topology.events if e.ticket is not None]
    elements = _elements(topology)
    last_hit: dict[str, float] = {}
    events: list[SoakEvent] = []
    at = 0.0
    while True:
        at = round(at + rng.expovariate(1.0 / mean_gap), 1)
        if at >= horizon:
            return events
        if tickets and rng.random() < TICKET_SHARE:
            ticket = rng.choice(tickets)
            events.append(SoakEvent(at, TICKET, ticket.to, text=ticket.text))
            continue
        if chaos_kinds and (not network_kinds or rng.random() < 0.5):
            events.append(_chaos(rng, rng.choice(chaos_kinds), at, started))
            continue
        if not network_kinds:
            continue
        kind = rng.choice(network_kinds)
        free = [e for e in elements[FaultType(kind).target_kind] if at - last_hit.get(e, -COOLDOWN) >= COOLDOWN]
        if not free:
            continue  # every element of that kind is still within its cool-down: no fault this time
        target = rng.choice(free)
        last_hit[target] = at
        events.append(SoakEvent(at, kind, target, round(rng.uniform(*REPAIR_MINUTES))))


def _chaos(rng: random.Random, kind: str, at: float, agents: list[str]) -> SoakEvent:
    if kind == "partition" and len(agents) > 1:
        a, b = sorted(rng.sample(agents, 2))
        return SoakEvent(at, kind, f"{a},{b}", round(rng.uniform(*PARTITION_SIM_S)))
    if kind in ("partition", "isolate"):
        return SoakEvent(at, "isolate", rng.choice(agents), round(rng.uniform(*PARTITION_SIM_S)))
    if kind == "freeze":
        return SoakEvent(at, kind, rng.choice(agents), round(rng.uniform(*FREEZE_WALL_S), 1))
    if kind == "disk_full":
        return SoakEvent(at, kind, rng.choice(agents), round(rng.uniform(*DISK_FULL_WALL_S), 1))
    return SoakEvent(at, kind, rng.choice(agents))


def _elements(topology: Topology) -> dict[str, list[str]]:
    net = topology.network
    return {
        "link": sorted(link.id for link in net.links),
        "site": sorted(site.id for site in net.sites),
        "cell": sorted(cell.id for site in net.sites for cell in site.cells),
    }
