"""The RAN fault agent's diagnosis, repair and restoration (`an_agent.agents.ran` builds on it).

Diagnosis of the radio side of sites and cells (configuration and state, the radio finding of each
site), the backhaul diagnosis asked of the IP agent, remote repair (base-station restart, planned cell
configuration) or a field repair with a trouble ticket (`an_agent.agents.field`), and the wait until
sites and cells are back in service. Detection, reporting and compensation live in `an_agent.agents.ran`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from an_agent.agents import payloads
from an_agent.agents.base import short, stamp
from an_agent.agents.environment import RoleName, SimFuture
from an_agent.agents.field import FieldRepair, ticket_id
from an_agent.agents.findings import FAULT_TEMPLATE_TYPE, Finding
from an_agent.agents.once import OneAtATime
from an_agent.agents.sdk import TaskFailure, TaskRun


@dataclass
class _Waiter:
    sites: frozenset[str]
    cells: frozenset[str]
    future: SimFuture[Any]


class RanRepair(FieldRepair):
    """Diagnosis, repair and restoration of the radio side (module docstring); a base of the RAN fault agent."""

    def start(self) -> None:
        self._waiters: list[_Waiter] = []
        self._state_lock = threading.Lock()
        self._restarts: OneAtATime[bool] = OneAtATime(self.env.scheduler, "restart")
        """One restart per base station at a time: a second repair of a station being restarted takes the
        outcome of the restart under way (lab soak: a restarted assigner asked again, the station was
        restarted twice, the second time while it was working)."""

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
        """Restart ``site``'s base station remotely (or take the outcome of its restart under way); whether
        that restored it."""
        return self._restarts.run(site, lambda: self._restart_now(site))[0]

    def _restart_now(self, site: str) -> bool:
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
        if not done and sites + cells and self._nothing_to_repair(sites, cells):
            # Repaired already, e.g. by this agent before a restart (a task resumes from its start): done, not
            # failed (found by lab soak: the failure sent a field engineer to a site that was working)
            text = f"{short(sites + cells)}: nothing left to repair (back to normal already)"
            self.finish(run, text, {"repaired": []})
            return
        if not done:
            raise TaskFailure(f"nothing {self.name} may repair remotely on {short(sites + cells)}")
        self.note("repair", "; ".join(done), element=(cells + sites)[0])
        self.finish(run, "; ".join(done), {"repaired": done})

    def _nothing_to_repair(self, sites: list[str], cells: list[str]) -> bool:
        """Every site's radio side healthy and every cell as planned (what a remote repair would have fixed)."""
        network = self.env.network
        if any(network.radio_diagnostics(s).finding != "healthy" for s in sites):
            return False
        return all(network.cell(c).tilt_deg == network.cell(c).base_tilt_deg for c in cells)

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
