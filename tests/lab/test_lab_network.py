"""SimNetwork: faults, alarms, coverage compensation, energy saving, KPIs; and the manual baseline."""

from __future__ import annotations

from typing import Any

import pytest
from labsupport import TOPOLOGIES

from an_agent.agents.environment import NetworkEvent
from an_agent.lab.baseline import manual_repair_delay, run_baseline
from an_agent.lab.network import SimNetwork, field_repair_seconds
from an_agent.lab.spec import FaultSpec, FaultType, Topology
from an_agent.lab.topology import load_topology


class _Clock:
    def __init__(self, start: float) -> None:
        self.now = start
        self.timers: list[tuple[float, Any]] = []

    def call_at(self, when: float, label: str, fn: Any) -> Any:
        self.timers.append((when, fn))

        class _T:
            def cancel(self) -> None:
                pass

        return _T()


def make(name: str) -> tuple[Topology, SimNetwork, _Clock, list[NetworkEvent]]:
    topology = load_topology(TOPOLOGIES / name)
    clock = _Clock(topology.start_time)
    network = SimNetwork(topology.network, topology.seed, lambda: clock.now, clock.call_at)
    events: list[NetworkEvent] = []
    network.subscribe(events.append)
    return topology, network, clock, events


def test_link_cut_takes_down_exactly_the_sites_behind_it() -> None:
    _, network, clock, events = make("cross-domain-fault.yaml")
    before = network.kpis()
    record = network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
    behind = network.sites_behind("LINK-C2")
    assert list(record.affected_sites) == behind and len(behind) == 22
    assert {s.site_id for s in network.sites() if not s.in_service} == set(behind)
    raised = [e.alarm for e in events if e.kind == "alarm_raised"]
    assert [a.element for a in raised if a.kind == "link_down"] == ["LINK-C2"]
    assert sorted(a.element for a in raised if a.kind == "site_out_of_service") == behind
    kpis = network.kpis()
    assert kpis.cells_in_service == before.cells_in_service - 66
    lost = sum(network.site(s).users for s in behind)
    assert kpis.users_without_coverage == pytest.approx(lost)  # nobody compensates here
    assert network.link("LINK-C2").evidence == "loss_of_light"
    assert not network.reset_port("LINK-C2", "test")  # a cut fibre does not come back with a port reset
    clock.now += 600
    eta = network.dispatch_field_repair("LINK-C2", "TT-1", "test", "splice")
    assert eta == clock.now + field_repair_seconds(network._seed, "LINK-C2", 1, 90.0)
    clock.now = eta
    clock.timers[0][1]()
    assert all(s.in_service for s in network.sites())
    assert network.faults()[0].restored_at == eta
    assert next(e.alarm.element for e in events if e.kind == "alarm_cleared") == "LINK-C2"
    assert network.residual_changes() == []


def test_compensation_recovers_coverage_and_energy_saving_weakens_it() -> None:
    _, network, _, _ = make("fault-energy-optimization.yaml")
    network.inject(FaultSpec(FaultType.SITE_SOFTWARE_FAULT, "SITE-06"))
    lost = network.kpis().users_without_coverage
    neighbours = network.neighbour_cells(list(network.site("SITE-06").cell_ids))
    assert neighbours and all(network.cell(c).site_id != "SITE-06" for c in neighbours)
    for cell in neighbours:
        view = network.cell(cell)
        network.set_cell_radio(cell, view.base_power_dbm + 1, view.base_tilt_deg - 3, "test")
    with_saving = network.kpis().users_without_coverage
    for cell in neighbours:
        network.set_energy_saving(cell, "suspended", "test")
    without_saving = network.kpis().users_without_coverage
    assert lost > with_saving > without_saving > 0
    assert network.kpis().energy_saving_suspended == len(neighbours)
    assert len(network.residual_changes()) >= len(neighbours)


def test_cell_limits_are_enforced() -> None:
    _, network, _, _ = make("fault-energy-optimization.yaml")
    with pytest.raises(ValueError, match="above the cell's limit of 46 dBm"):
        network.set_cell_radio("CELL-0701", 47, 6, "test")
    with pytest.raises(ValueError, match=r"outside 0\.\.12"):
        network.set_cell_radio("CELL-0701", 45, -1, "test")


def test_silent_misconfiguration_has_no_alarm_but_loses_coverage() -> None:
    _, network, _, events = make("iov-complaint.yaml")
    network.inject(FaultSpec(FaultType.CELL_MISCONFIGURATION, "CELL-1402", tilt_deg=14, coverage_loss=0.7))
    assert events == []
    assert network.kpis().users_without_coverage == pytest.approx(0.7 * network.cell("CELL-1402").users)
    diag = network.radio_diagnostics("SITE-14")
    assert diag.finding == "misconfigured" and diag.misconfigured_cells == {"CELL-1402": {"tilt_deg": 8.0}}
    assert network.restore_cell_config("CELL-1402", "test")
    assert network.kpis().users_without_coverage == 0


def test_users_per_cell_follow_the_seed() -> None:
    first = make("cross-domain-fault.yaml")[1]
    second = make("cross-domain-fault.yaml")[1]
    users = [first.cell(c).users for s in first.sites() for c in s.cell_ids]
    assert users == [second.cell(c).users for s in second.sites() for c in s.cell_ids]
    assert len(set(users)) > 10  # varied, not all the default


def test_baseline_is_manual_and_sequential() -> None:
    topology = load_topology(TOPOLOGIES / "cross-domain-fault.yaml")
    series, faults = run_baseline(topology)
    fault = topology.events[0].fault
    assert fault is not None
    timing = topology.baseline
    expected = (
        timing.detection
        + timing.triage
        + timing.handover
        + timing.transport_diagnosis
        + field_repair_seconds(topology.seed, fault.target, 1, fault.repair_minutes)
    )
    assert faults[0]["restored_at"] - faults[0]["injected_at"] == pytest.approx(expected)
    assert manual_repair_delay(FaultSpec(FaultType.SITE_SOFTWARE_FAULT, "SITE-01"), timing, 1, 1) == pytest.approx(
        timing.detection + timing.triage + timing.remote_repair
    )
    fresh = make("cross-domain-fault.yaml")[1]
    lost = sum(fresh.site(s).users for s in faults[0]["affected_sites"])
    assert max(k.users_without_coverage for _, k in series.samples) == pytest.approx(lost)  # no compensation


def test_a_link_between_two_regions_belongs_to_the_region_of_its_a_router(tmp_path: Any) -> None:
    from labsupport import variant

    path = variant(
        tmp_path,
        "iov-complaint.yaml",
        (
            "    - {id: LINK-S2, a: CR-S, b: ACC-S2}\n",
            "    - {id: LINK-S2, a: CR-S, b: ACC-S2}\n    - {id: LINK-NS, a: CR-S, b: CR-N}\n",
        ),
    )
    topology = load_topology(path)
    clock = _Clock(topology.start_time)
    network = SimNetwork(topology.network, topology.seed, lambda: clock.now, clock.call_at)
    assert network.link("LINK-NS").region == "south"
    assert "LINK-NS" in [k.link_id for k in network.links(["south"])]
    assert "LINK-NS" not in [k.link_id for k in network.links(["north"])]
    network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-NS"))
    assert [a.element for a in network.active_alarms(["south"], "ip_transport")] == ["LINK-NS"]
    assert network.active_alarms(["north"], "ip_transport") == []


def test_one_field_job_per_ticket_and_per_fault() -> None:
    """A copilot resuming its ticket after a restart opens it again, or opens the fault's other ticket: one
    field job, recorded once, its time the first; the element's next fault gets a job of its own."""
    _, network, clock, _ = make("cross-domain-fault.yaml")
    network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
    eta = network.open_trouble_ticket("LINK-C2", "TT-1", "fme-copilot", "fibre_cut")
    clock.now += 600
    assert network.open_trouble_ticket("LINK-C2", "TT-1", "fme-copilot", "fibre_cut") == eta
    assert network.open_trouble_ticket("LINK-C2", "TT-2", "fme-copilot", "fibre_cut") == eta
    assert [t["ticket_id"] for t in network.tickets()] == ["TT-1"]
    assert [c.action for c in network.changes()].count("trouble_ticket") == 1
    assert network.repair_on_site("LINK-C2", "fme", "ticket TT-1")
    clock.now += 600
    # after the repair: a ticket resumed (or joined under another number) is that job, done
    assert network.open_trouble_ticket("LINK-C2", "TT-4", "fme-copilot", "fibre_cut") == eta
    assert [c.action for c in network.changes()].count("trouble_ticket") == 1
    network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
    assert network.open_trouble_ticket("LINK-C2", "TT-3", "fme-copilot", "fibre_cut") != eta
    assert [t["ticket_id"] for t in network.tickets()] == ["TT-1", "TT-3"]


def test_an_engineer_on_site_sees_the_fault_the_remote_view_cannot() -> None:
    """SITE-20 is behind the cut LINK-C2: remotely it is unreachable whether it has power or not; a field
    engineer at the site sees its own fault, and that none is left once its power is back."""
    _, network, clock, _ = make("cross-domain-fault.yaml")
    network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
    network.inject(FaultSpec(FaultType.SITE_POWER_FAILURE, "SITE-20"))
    assert network.fault_on_site("SITE-20") == "site_power_failure"
    assert network.fault_on_site("LINK-C2") == "link_cut"
    assert network.fault_on_site("SITE-21") is None
    clock.now += 600
    assert network.repair_on_site("SITE-20", "fme", "ticket TT-1")
    assert network.fault_on_site("SITE-20") is None
    assert not network.site("SITE-20").in_service  # still down: its backhaul is cut
    assert network.radio_diagnostics("SITE-20").finding != "healthy"


def test_a_repair_clears_every_fault_open_on_the_element_and_only_those() -> None:
    """A port error-disabled on a cut fibre takes the fault's place; the splice clears both. The records
    say so, and the next fault of that link is the one its next repair clears (found by lab soak: each
    repair marked the record of the fault before it, and one port fault's loop never closed)."""
    _, network, clock, _ = make("cross-domain-fault.yaml")
    cut = network.inject(FaultSpec(FaultType.LINK_CUT, "LINK-C2"))
    clock.now += 60
    port = network.inject(FaultSpec(FaultType.ROUTER_PORT_FAULT, "LINK-C2"))
    clock.now += 60
    assert network.repair_on_site("LINK-C2", "fme", "ticket TT-1")
    assert cut.repaired_at == port.repaired_at == clock.now
    assert network.fault_on_site("LINK-C2") is None
    clock.now += 600
    again = network.inject(FaultSpec(FaultType.ROUTER_PORT_FAULT, "LINK-C2"))
    clock.now += 60
    assert network.reset_port("LINK-C2", "ip-fault")
    assert again.repaired_at == clock.now and again.repaired_by == "ip-fault"
    assert cut.repaired_by == port.repaired_by == "fme"
