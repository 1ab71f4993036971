"""RAN (mobile network) fault agent: detects base-station outages, reports, compensates, diagnoses, repairs.

On its own initiative (alarms of its regions, batched over ``batch_window`` after ``alarm_detection``;
option ``watch_alarms: false`` turns this off, as the quick-tour agent does, so the agent only works on
the tasks it is given):

1. reports the incident to the service-layer cross-domain agent when it may talk to one (use case 2.1);
2. asks the optimization agent, when it may talk to one, to compensate the lost coverage with the
   neighbour cells (FEASIBILITY first; a counter-proposal within the cells' power limits is accepted
   when it still gives at least ``min_power_delta_db`` or some uptilt);
   without a service-layer agent it then diagnoses itself (use case 2.2): checks the sites'
   configuration and state, asks the IP agent to diagnose the backhaul, and repairs what it may
   (remote restart) or opens a trouble ticket;
3. waits until the sites are back in service, then has the compensation cancelled.

Under a service intent it takes the ``fault_management`` share (``intent_task_v1`` ``assure``,
`an_agent.agents.mandate`): the area's service is its to restore.

Tasks it executes (by the first word of the task description, payload ``fault_diagnosis_v1``):
``Diagnose`` the radio side of sites or cells, ``Repair`` (remote base-station restart, planned cell
configuration), ``Verify`` that sites/cells are back in service (finishes when they are). A task with
a prompt only (``text/plain``, no payload) names its sites and cells in the prompt: every site or cell
id of the managed network written in its target object or task description.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from an_agent.agents import payloads
from an_agent.agents.base import NotFeasible, TaskFailure, short, stamp, verb_of
from an_agent.agents.environment import NetworkEvent, RoleName, SimFuture
from an_agent.agents.field import FieldRepair, ticket_id
from an_agent.agents.findings import FAULT_TEMPLATE_TYPE, Finding
from an_agent.agents.mandate import INTENT_TASK, Mandates
from an_agent.model import Task
from an_agent.runtime.behaviour import TaskRun
from an_agent.schemas.validate import ValidatedPayload

_ELEMENT_ID = re.compile(r"[A-Z][A-Z0-9]*(?:-[A-Z0-9]+)+")
"""What a site or cell id looks like in a prompt (``SITE-02``, ``CELL-0401``): compared with the inventory."""


@dataclass
class _Waiter:
    sites: frozenset[str]
    cells: frozenset[str]
    future: SimFuture[Any]


class RanFaultBehaviour(FieldRepair):
    role = RoleName.RAN_FAULT
    option_defaults: ClassVar[Mapping[str, Any]] = {
        "compensation_power_db": 4.0,
        "compensation_tilt_deg": 2.0,
        "compensation_minutes": 240,
        "min_power_delta_db": 1.0,
        "watch_alarms": True,
    }
    description = "Mobile network (RAN) fault agent: base-station outage detection, diagnosis and repair"

    def start(self) -> None:
        self.mandates = Mandates(self, "fault_management")
        self._waiters: list[_Waiter] = []
        self._open: set[str] = set()
        self._state_lock = threading.Lock()
        self._alarms = self.env.scheduler.queue(f"{self.name} alarms")
        self.env.network.subscribe(self._on_event)
        if {**self.option_defaults, **self.env.options}["watch_alarms"]:
            self.env.scheduler.spawn(f"{self.name} alarm monitor", self._monitor)

    # ---- alarms -----------------------------------------------------------------------------------
    def _on_event(self, event: NetworkEvent) -> None:
        alarm = event.alarm
        if alarm.domain != "wireless" or not self.env.in_scope(alarm.region):
            return
        if event.kind == "alarm_raised" and alarm.kind == "site_out_of_service":
            self._alarms.put(event)
        elif event.kind == "alarm_cleared":
            self._check_waiters()

    def _monitor(self) -> None:
        timing = self.env.timing
        while True:
            event: NetworkEvent = self._alarms.get()
            with self._state_lock:
                if event.alarm.element in self._open:
                    continue
            self.env.scheduler.sleep(timing.alarm_detection + timing.batch_window)
            regions = list(self.env.regions) or None
            alarms = [a for a in self.env.network.active_alarms(regions, "wireless") if a.kind == "site_out_of_service"]
            with self._state_lock:
                batch = [a for a in alarms if a.element not in self._open]
                self._open.update(a.element for a in batch)
            if batch:
                sites = sorted(a.element for a in batch)
                handler = functools.partial(self._handle_outage, batch)
                self.env.scheduler.spawn(f"{self.name} outage {sites[0]}", handler)

    def _handle_outage(self, alarms: list[Any]) -> None:
        network = self.env.network
        sites = sorted(a.element for a in alarms)
        cells = [c for s in sites for c in network.site(s).cell_ids]
        first = min(a.raised_at for a in alarms)
        served = self.mandates.describe(network.site(sites[0]).region, self.env.scheduler.now())
        self.note(
            "incident",
            f"{len(sites)} base station(s) out of service: {short(sites)}"
            + (f"; restoring the service{served}" if served else ""),
            sites=sites,
            alarm_ids=sorted(a.alarm_id for a in alarms),
        )
        try:
            services = self.env.peers_with_role(RoleName.CROSS_DOMAIN_FAULT)
            if services:
                self._report(services[0], sites, cells, alarms, first)
            compensation = self._compensate(sites, cells)
            if not services:
                self._diagnose_and_repair(sites, alarms, first)
            restored = self.wait_restored(sites, [])
            if restored is None:
                self.note("not_restored", f"{short(sites)} not back in service within the restoration timeout")
            if compensation is not None:
                self._cancel_compensation(*compensation, sites=sites, cells=cells)
        finally:
            with self._state_lock:
                self._open.difference_update(sites)

    # ---- use case 2.2: compensation ------------------------------------------------------------------
    def _compensate(self, sites: list[str], cells: list[str]) -> tuple[str, str] | None:
        optimizers = self.env.peers_with_role(RoleName.OPTIMIZATION)
        if not optimizers:
            return None
        options = {**self.option_defaults, **self.env.options}
        minimum = float(options["min_power_delta_db"])
        value = payloads.envelope(
            "coverage_compensation_v1",
            {
                "target_cell_ids": cells,
                "tx_power_delta_db": float(options["compensation_power_db"]),
                "antenna_tilt_delta_deg": -float(options["compensation_tilt_deg"]),
                "duration_minutes": int(options["compensation_minutes"]),
                "compensation_reason": "neighbour_outage",
            },
        )

        def acceptable(counter: dict[str, Any]) -> bool:
            p = counter.get("payload", {})
            return float(p.get("tx_power_delta_db", 0)) >= minimum or float(p.get("antenna_tilt_delta_deg", 0)) < 0

        outcome = self.ask(
            optimizers[0],
            f"compensate.{sites[0]}",
            ", ".join(cells),
            f"Compensate the coverage of {len(cells)} cells of {len(sites)} out-of-service base station(s) "
            "with the neighbour cells' power and tilt",
            value,
            acceptable,
            expected_response="compensation_id of the compensation applied",
        )
        if not outcome.finished:
            self.note("compensation_refused", f"no coverage compensation: {outcome.reason}")
            return None
        result = outcome.result()
        return optimizers[0], str(result.get("compensation_id", ""))

    def _cancel_compensation(self, optimizer: str, compensation_id: str, sites: list[str], cells: list[str]) -> None:
        value = payloads.envelope(
            "coverage_compensation_v1",
            {
                "target_cell_ids": cells,
                "tx_power_delta_db": 0,
                "antenna_tilt_delta_deg": 0,
                "compensation_reason": "neighbour_outage",
                "other": f"cancel compensation {compensation_id}: {short(sites)} back in service",
            },
        )
        outcome = self.ask(
            optimizer,
            f"cancel-compensation.{sites[0]}",
            ", ".join(cells),
            f"Cancel the coverage compensation {compensation_id}: the base stations are back in service",
            value,
        )
        if not outcome.finished:
            self.note("cancel_failed", f"compensation {compensation_id} not cancelled: {outcome.reason}")

    # ---- use case 2.1: report to the service layer ---------------------------------------------------
    def _report(self, service: str, sites: list[str], cells: list[str], alarms: list[Any], first: float) -> None:
        value = payloads.envelope(
            "fault_diagnosis_v1",
            {
                "fault_type": "base_station_outage",
                "affected_site_ids": sites,
                "affected_cell_ids": cells,
                "domain": "wireless",
                "severity": "critical" if len(sites) >= 5 else "major",
                "alarm_ids": sorted(a.alarm_id for a in alarms),
                "occurred_at": stamp(first),
            },
        )
        outcome = self.ask(
            service,
            f"incident.{sites[0]}",
            ", ".join(sites),
            f"Report incident: {len(sites)} base station(s) out of service in the mobile network",
            value,
        )
        if not outcome.finished:
            self.note("report_failed", f"incident not accepted by {service}: {outcome.reason}")

    # ---- use case 2.2: diagnose and repair on our own ------------------------------------------------
    def _diagnose_and_repair(self, sites: list[str], alarms: list[Any], first: float) -> None:
        network = self.env.network
        self.env.scheduler.sleep(self.env.timing.config_check)
        radio = {s: network.radio_diagnostics(s) for s in sites}
        self.note(
            "config_check",
            "configuration and state checked: " + ", ".join(f"{s} {d.finding}" for s, d in sorted(radio.items())),
        )
        remaining = set(sites)
        ips = self.env.peers_with_role(RoleName.IP_FAULT, network.site(sites[0]).region)
        if ips:
            value = payloads.envelope(
                "fault_diagnosis_v1",
                {
                    "fault_type": "base_station_outage",
                    "affected_site_ids": sites,
                    "domain": "ip_transport",
                    "alarm_ids": sorted(a.alarm_id for a in alarms),
                    "suspected_root_cause": "backhaul transport of the sites",
                    "occurred_at": stamp(first),
                },
            )
            outcome = self.ask(
                ips[0],
                f"diagnose.{sites[0]}",
                ", ".join(sites),
                "Diagnose the transport (backhaul) path of the out-of-service base stations",
                value,
                expected_response="root_cause, fault_type, element, explained_site_ids",
            )
            finding = Finding.from_dict(outcome.result())
            if outcome.finished:
                self.evaluate(ips[0], outcome, ["root_cause", "fault_type"], {})
            if finding.is_fault and finding.element:
                self.note_root_cause(finding, ips[0])
                self._repair_transport(ips[0], finding, first)
                remaining -= set(finding.explained_site_ids)
        for site in sorted(remaining):
            finding = self._radio_finding(site, radio[site].finding)
            self.note(
                "root_cause",
                finding.root_cause,
                fault_type=finding.fault_type,
                element=site,
                sites=[site],
                diagnosed_by=self.name,
            )
            if finding.remote_repair_possible:
                self._restart(site)
            else:
                self.field_repair(finding, ticket_id(site, first))

    def _repair_transport(self, ip: str, finding: Finding, first: float) -> None:
        assert finding.element is not None
        if finding.remote_repair_possible:
            value = payloads.envelope(
                "fault_diagnosis_v1",
                {
                    "fault_type": FAULT_TEMPLATE_TYPE.get(finding.fault_type, "transmission_failure"),
                    "affected_site_ids": finding.explained_site_ids,
                    "domain": "ip_transport",
                    "suspected_root_cause": finding.root_cause,
                    "other": f"repair: reset the router ports of {finding.element}",
                },
            )
            outcome = self.ask(
                ip, f"repair.{finding.element}", finding.element, f"Repair {finding.element} remotely", value
            )
            if outcome.finished:
                self.note("repair", f"{ip} repaired {finding.element} remotely", element=finding.element)
                return
        self.field_repair(finding, ticket_id(finding.element, first))

    def _restart(self, site: str) -> bool:
        self.env.scheduler.sleep(self.env.timing.site_reset)
        ok = self.env.network.reset_site(site, self.name)
        self.note(
            "repair" if ok else "repair_failed",
            f"remote restart of {site} " + ("restored it" if ok else "did not clear the fault"),
            element=site,
        )
        self._check_waiters()
        return ok

    def _radio_finding(self, site: str, finding: str) -> Finding:
        if finding == "software_hang":
            return Finding(
                "site_software_fault",
                site,
                f"{site}: base station software hang (no response on the "
                "S1/NG interface, out-of-band management answers)",
                True,
                ["restart the base station remotely"],
                [site],
                diagnosed_by=self.name,
            )
        if finding == "mains_power_lost":
            return Finding(
                "site_power_failure",
                site,
                f"{site}: mains power failure (power system alarm before the site went silent)",
                False,
                ["dispatch field maintenance to restore power"],
                [site],
                diagnosed_by=self.name,
            )
        if finding == "unreachable":
            return Finding(
                "unknown",
                site,
                f"{site}: unreachable, no radio-side evidence: backhaul suspected",
                False,
                ["diagnose the transport path"],
                [],
                diagnosed_by=self.name,
            )
        return Finding("none", site, f"{site}: in service, no radio-side fault", False, [], [], diagnosed_by=self.name)

    # ---- tasks from other agents ----------------------------------------------------------------------
    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        if payload is not None and payload.schema_id == INTENT_TASK:
            mandate = self.mandates.feasibility(payload, requester)
            return f"{self.name} restores the service of {mandate.area}: fault management for {mandate.intent_id}"
        if payload is not None and payload.schema_id != "fault_diagnosis_v1":
            raise NotFeasible(f"{self.name} takes fault_diagnosis_v1 tasks (diagnose, repair, verify)")
        network = self.env.network
        if payload is None:
            sites, cells = self._named_elements(description)
            if not sites and not cells:
                raise NotFeasible(
                    f"{self.name} takes fault_diagnosis_v1 payloads, or a prompt naming its sites or cells "
                    "(e.g. SITE-02, CELL-0401)"
                )
        else:
            sites = list(payload.values.get("affected_site_ids", []))
        foreign = []
        for site in sites:
            try:
                region = network.site(site).region
            except ValueError:
                raise NotFeasible(f"there is no site {site}") from None
            if not self.env.in_scope(region):
                foreign.append(f"{site} ({region})")
        if foreign:
            raise NotFeasible(
                f"{', '.join(foreign)} not managed by {self.name} (regions {', '.join(self.env.regions)})"
            )
        return f"{self.name} manages these sites and cells"

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        if payload is not None and payload.schema_id == INTENT_TASK:
            self.mandates.accept(task, self.mandates.feasibility(payload, task.send_from), run)
            return
        verb = verb_of(task)
        if payload is None:
            sites, cells = self._named_elements(task.content or "")
            if not sites and not cells:
                raise TaskFailure(
                    "the task carries no fault_diagnosis_v1 payload and its prompt names no site or cell of "
                    f"{self.name}'s network"
                )
        else:
            sites = list(payload.values.get("affected_site_ids") or [])
            cells = list(payload.values.get("affected_cell_ids") or [])
        if verb == "diagnose":
            self._task_diagnose(sites, cells, run)
        elif verb == "repair":
            self._task_repair(sites, cells, run)
        elif verb == "verify":
            restored = self.wait_restored(sites, cells)
            if restored is None:
                raise TaskFailure(f"{short(sites + cells)} not back in service within the restoration timeout")
            self.finish(
                run,
                f"{short(sites + cells)} back in service",
                {"restored_at": stamp(restored), "site_ids": sites, "cell_ids": cells},
            )
        else:
            raise TaskFailure(f"{self.name} diagnoses, repairs and verifies; it cannot {verb!r}")

    def _task_diagnose(self, sites: list[str], cells: list[str], run: TaskRun) -> None:
        network = self.env.network
        self.env.scheduler.sleep(self.env.timing.config_check)
        sites = sorted(set(sites) | {network.cell(c).site_id for c in cells})
        findings = []
        for site in sites:
            diag = network.radio_diagnostics(site)
            if diag.misconfigured_cells:
                for cell, deltas in sorted(diag.misconfigured_cells.items()):
                    findings.append(
                        Finding(
                            "cell_misconfiguration",
                            cell,
                            f"{cell}: antenna tilt {deltas['tilt_deg']:+g} deg off the planned value (configuration "
                            "changed outside planning): coverage hole",
                            True,
                            ["restore the planned cell configuration"],
                            [site],
                            [cell],
                            self.name,
                        )
                    )
            else:
                findings.append(self._radio_finding(site, diag.finding))
        faults = [f for f in findings if f.is_fault]
        if faults:
            main = faults[0]
            main.explained_site_ids = sorted({s for f in faults for s in f.explained_site_ids})
            main.explained_cell_ids = sorted({c for f in faults for c in f.explained_cell_ids})
            main.recommendations = sorted({r for f in faults for r in f.recommendations})
            if len(faults) > 1:
                main.root_cause += "; also " + "; ".join(f.root_cause for f in faults[1:])
            result = main
        elif any(f.fault_type == "unknown" for f in findings):
            unknown = [f.element for f in findings if f.fault_type == "unknown" and f.element]
            result = Finding(
                "unknown",
                None,
                f"{short(unknown)} unreachable without radio-side evidence: transport suspected",
                False,
                ["diagnose the backhaul"],
                [],
                [],
                self.name,
            )
        else:
            result = Finding(
                "none",
                None,
                f"no radio-side fault on {short(sites)}: cells in service as planned",
                False,
                [],
                sites,
                [],
                self.name,
            )
        self.finish(run, result.root_cause, result.to_dict())

    def _named_elements(self, text: str) -> tuple[list[str], list[str]]:
        """The site and cell ids of the managed network (in this agent's regions) that ``text`` names."""
        words = set(_ELEMENT_ID.findall(text.upper()))
        network = self.env.network
        regions = list(self.env.regions) or None
        sites = sorted(s.site_id for s in network.sites(regions) if s.site_id in words)
        cells = sorted(c for s in network.sites(regions) for c in s.cell_ids if c in words)
        return sites, cells

    def _task_repair(self, sites: list[str], cells: list[str], run: TaskRun) -> None:
        network = self.env.network
        done = []
        for cell in cells:
            self.env.scheduler.sleep(self.env.timing.cell_reconfigure)
            if network.restore_cell_config(cell, self.name):
                done.append(f"{cell}: planned configuration restored")
        for site in sites:
            if network.radio_diagnostics(site).finding == "software_hang" and self._restart(site):
                done.append(f"{site}: restarted")
        self._check_waiters()
        if not done:
            raise TaskFailure(f"nothing {self.name} may repair remotely on {short(sites + cells)}")
        self.note("repair", "; ".join(done), element=(cells + sites)[0])
        self.finish(run, "; ".join(done), {"repaired": done})

    # ---- restoration ------------------------------------------------------------------------------------
    def wait_restored(self, sites: list[str], cells: list[str]) -> float | None:
        """Wait (simulated time) until the sites are in service and the cells as planned; None on timeout."""
        scheduler = self.env.scheduler
        future = scheduler.future(f"{self.name} restoration of {short(sites + cells)}")
        with self._state_lock:
            self._waiters.append(_Waiter(frozenset(sites), frozenset(cells), future))
        self._check_waiters()
        timer = scheduler.call_at(
            scheduler.now() + self.env.timing.restoration_timeout,
            f"{self.name} restoration timeout",
            lambda: future.set(None),
        )
        restored: float | None = future.wait()
        timer.cancel()
        return restored

    def _check_waiters(self) -> None:
        network = self.env.network
        with self._state_lock:
            waiters = list(self._waiters)
        for waiter in waiters:
            sites_ok = all(network.site(s).in_service for s in waiter.sites)
            cells_ok = all(
                c not in network.radio_diagnostics(network.cell(c).site_id).misconfigured_cells for c in waiter.cells
            )
            if sites_ok and cells_ok:
                with self._state_lock:
                    if waiter in self._waiters:
                        self._waiters.remove(waiter)
                waiter.future.set(self.env.scheduler.now())
