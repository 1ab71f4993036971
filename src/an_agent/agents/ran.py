"""RAN (mobile network) fault agent: detects base-station outages, reports, compensates, diagnoses, repairs.

On its own initiative (alarms of its regions, batched over ``batch_window`` after ``alarm_detection``;
option ``watch_alarms: false`` turns this off, as the quick-tour agent does, so the agent only works on
the tasks it is given):

1. reports the incident to the service-layer cross-domain agent when it may talk to one (use case 2.1);
2. asks the optimization agent, when it may talk to one, to compensate the lost coverage with the
   neighbour cells (FEASIBILITY first; a counter-proposal within each cell's limits is accepted when it
   still gives on average at least ``min_power_delta_db`` or some uptilt);
   without a service-layer agent it then diagnoses itself (use case 2.2): checks the sites'
   configuration and state, asks the IP agent to diagnose the backhaul, and repairs what it may
   (remote restart) or opens a trouble ticket;
3. waits until the sites are back in service, then has the compensation cancelled.

Diagnosis, repair and the wait for restoration are `an_agent.agents.ran_repair.RanRepair`'s.

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
from collections.abc import Mapping
from typing import Any, ClassVar

from an_agent.agents import payloads
from an_agent.agents.base import short, stamp
from an_agent.agents.environment import NetworkEvent, RoleName
from an_agent.agents.mandate import INTENT_TASK, Mandates
from an_agent.agents.ran_repair import RanRepair
from an_agent.agents.sdk import NotFeasible, TaskFailure, TaskRun, verb_of
from an_agent.model import Task
from an_agent.schemas.validate import ValidatedPayload

_ELEMENT_ID = re.compile(r"(?<![A-Z0-9])[A-Z][A-Z0-9]*+(?:-[A-Z0-9]++)+")
"""What a site or cell id looks like in a prompt (``SITE-02``, ``CELL-0401``): compared with the inventory."""


class RanFaultBehaviour(RanRepair):
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
        super().start()
        self.mandates = Mandates(self, "fault_management")
        self._open: dict[str, object] = {}
        """Sites whose outage is being handled, each by the token of the batch (`_handle_outage`) that has it."""
        self._alarms = self.env.scheduler.queue(f"{self.name} alarms")
        self.env.network.subscribe(self._on_event, "wireless", self.env.regions or None)
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
            if alarm.kind == "site_out_of_service":
                # Back in service: its next outage is a new one, reported even while the batch it was in
                # still waits for its other sites (found by lab soak: a site that failed again then was
                # never reported, because a site of its first batch stayed down for hours).
                with self._state_lock:
                    self._open.pop(alarm.element, None)
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
            token = object()
            with self._state_lock:
                batch = [a for a in alarms if a.element not in self._open]
                self._open.update((a.element, token) for a in batch)
            if batch:
                sites = sorted(a.element for a in batch)
                handler = functools.partial(self._handle_outage, batch, token)
                with self.traced(batch):  # the outage is handled in the trace of its fault
                    self.env.scheduler.spawn(f"{self.name} outage {sites[0]}", handler)

    def _handle_outage(self, alarms: list[Any], token: object) -> None:
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
                for site in sites:
                    if self._open.get(site) is token:
                        del self._open[site]

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
            """Some uptilt, or on average at least ``min_power_delta_db`` (per cell when the counter says)."""
            p = counter.get("payload", {})
            changes = [c for c in p.get("cell_changes") or [] if isinstance(c, dict)] or [p]
            power = sum(float(c.get("tx_power_delta_db", 0)) for c in changes) / len(changes)
            return power >= minimum or any(float(c.get("antenna_tilt_delta_deg", 0)) < 0 for c in changes)

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
        outcome = self.deliver(
            service,
            f"incident.{sites[0]}",
            ", ".join(sites),
            f"Report incident: {len(sites)} base station(s) out of service in the mobile network",
            value,
        )
        if outcome is not None and not outcome.finished:
            self.note("report_failed", f"incident not accepted by {service}: {outcome.reason}")

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

    def _named_elements(self, text: str) -> tuple[list[str], list[str]]:
        """The site and cell ids of the managed network (in this agent's regions) that ``text`` names."""
        words = set(_ELEMENT_ID.findall(text.upper()))
        network = self.env.network
        regions = list(self.env.regions) or None
        sites = sorted(s.site_id for s in network.sites(regions) if s.site_id in words)
        cells = sorted(c for s in network.sites(regions) for c in s.cell_ids if c in words)
        return sites, cells
