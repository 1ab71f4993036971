"""A topology's ``devices:``: the lab's element managers (`an_agent.lab.em`), as the topology declares them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol


class DeviceDomain(StrEnum):
    """What an element manager (a topology's ``devices:`` entry) serves of the simulated network."""

    TRANSPORT = "transport"
    """Routers, links and the sites' backhaul (ietf-network-topology), link alarms, port restarts."""
    RAN = "ran"
    """Sites, cells and KPIs per area (an-agent-network), site alarms, base-station restarts, energy saving."""


@dataclass(frozen=True)
class DeviceSpec:
    """An element manager of the lab: the simulated network of ``domain`` (in ``regions``) over NETCONF."""

    name: str
    domain: DeviceDomain
    port: int = 0
    """Its NETCONF port (0: a free one, or 8830 in a ``--netns`` lab)."""
    regions: tuple[str, ...] = ()
    """The regions it manages; empty means all."""

    def in_scope(self, region: str) -> bool:
        return not self.regions or region in self.regions


class AgentSpecLike(Protocol):
    """What this module reads of a topology agent (`an_agent.lab.spec.AgentSpec`)."""

    @property
    def name(self) -> str: ...
    @property
    def role(self) -> str: ...
    @property
    def regions(self) -> tuple[str, ...]: ...
    @property
    def southbound(self) -> str: ...


SOUTHBOUND_ROLES = frozenset({"ip-fault"})
"""The roles that may reach the network over NETCONF (``southbound: netconf``)."""


def southbound_device(agent: AgentSpecLike, devices: Sequence[DeviceSpec]) -> DeviceSpec | None:
    """The transport element manager a ``southbound: netconf`` agent uses: the first that manages all of its
    regions (one managing every region for an agent of every region)."""
    for device in devices:
        if device.domain == DeviceDomain.TRANSPORT and (
            not device.regions or (agent.regions and set(agent.regions) <= set(device.regions))
        ):
            return device
    return None


def devices_from(
    raw: Sequence[dict[str, Any]],
    problem: Callable[[list[str | int], str], None],
    regions: set[str],
    agents: Sequence[AgentSpecLike],
) -> tuple[DeviceSpec, ...]:
    """The ``devices:`` entries (already checked against the JSON Schema); ``problem(path, message)`` for a
    name already used (by an agent or another device), an unknown region, or an agent on ``southbound:
    netconf`` that may not be or that no transport element manager serves."""
    taken = {a.name for a in agents}
    devices: list[DeviceSpec] = []
    for i, entry in enumerate(raw):
        name = entry["name"]
        if name in taken or any(d.name == name for d in devices):
            problem(["devices", i, "name"], f"name {name!r} is already used by an agent or another device")
        for j, region in enumerate(entry.get("regions", ())):
            if region not in regions:
                problem(
                    ["devices", i, "regions", j], f"unknown region {region!r}; regions: {', '.join(sorted(regions))}"
                )
        domain = DeviceDomain(entry["domain"])
        devices.append(DeviceSpec(name, domain, entry.get("port", 0), tuple(entry.get("regions", ()))))
    for i, agent in enumerate(agents):
        if agent.southbound != "netconf":
            continue
        if agent.role not in SOUTHBOUND_ROLES:
            problem(["agents", i, "southbound"], f"southbound: netconf is for {', '.join(SOUTHBOUND_ROLES)} agents")
        elif southbound_device(agent, devices) is None:
            problem(
                ["agents", i, "southbound"],
                "southbound: netconf needs a devices: entry of domain transport managing the agent's regions "
                f"({', '.join(agent.regions) or 'all'})",
            )
    return tuple(devices)
