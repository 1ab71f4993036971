"""What the same faults cost without collaborating agents: manual, sequential handling.

The same network and the same faults, played without agents: no coverage compensation, no change of
energy saving, and each fault handled in sequence by people — the NOC notices it (``detection``),
the RAN team triages (``triage``), a transport fault is handed over to the transport team
(``handover``) who diagnose it (``transport_diagnosis``), then a remote repair (``remote_repair``) or
the same field maintenance the agents would get (`an_agent.lab.network.field_repair_seconds`). A fault
without alarm (a misconfigured cell) is only noticed when the first complaint comes in, then handled
(``complaint_handling``) and triaged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from an_agent.lab.kpis import KpiSeries
from an_agent.lab.network import LINK_FAULTS, SimNetwork, field_repair_seconds
from an_agent.lab.spec import BaselineTiming, FaultSpec, FaultType, Topology

REMOTE = {"router_port_fault", "site_software_fault", "cell_misconfiguration"}


@dataclass
class _Timer:
    def cancel(self) -> None:
        pass


def manual_repair_delay(
    fault: FaultSpec, timing: BaselineTiming, seed: int, occurrence: int, noticed_after: float = 0.0
) -> float:
    """Seconds from the fault to its repair when handled by hand (module docstring).

    ``noticed_after``: for a fault without alarm, seconds until the first complaint reaches the operator.
    """
    if fault.type == FaultType.CELL_MISCONFIGURATION:
        delay = noticed_after + timing.complaint_handling + timing.triage
    else:
        delay = timing.detection + timing.triage
    if fault.type in LINK_FAULTS:
        delay += timing.handover + timing.transport_diagnosis
    if fault.type in REMOTE:
        delay += timing.remote_repair
    else:
        delay += field_repair_seconds(seed, fault.target, occurrence, fault.repair_minutes)
    return delay


def run_baseline(topology: Topology) -> tuple[KpiSeries, list[dict[str, Any]]]:
    """The KPI series and per-fault restoration of manual handling (no agents, no simulated kernel needed)."""
    clock = [topology.start_time]
    network = SimNetwork(topology.network, topology.seed, lambda: clock[0], lambda when, label, fn: _Timer())
    events: list[tuple[float, int, str, FaultSpec]] = []
    occurrences: dict[str, int] = {}
    for index, event in enumerate(topology.events):
        if event.fault is None:
            continue
        fault = event.fault
        occurrences[fault.target] = occurrences.get(fault.target, 0) + 1
        at = topology.start_time + event.at
        events.append((at, index, "inject", fault))
        complaints = [e.at for e in topology.events if e.ticket is not None and e.at >= event.at]
        noticed = (min(complaints) if complaints else topology.max_duration) - event.at
        delay = manual_repair_delay(fault, topology.baseline, topology.seed, occurrences[fault.target], noticed)
        events.append((at + delay, index, "repair", fault))
    network.sample(clock[0])
    for at, _, what, fault in sorted(events, key=lambda e: (e[0], e[1], e[2] != "inject")):
        clock[0] = at
        if what == "inject":
            network.inject(fault)
        else:
            network.repair_now(fault.target, "manual", "remote" if fault.type in REMOTE else "field")
        network.sample(at)
    return KpiSeries(network.samples()), [f.to_dict() for f in network.faults()]
