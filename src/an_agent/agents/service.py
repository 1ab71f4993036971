"""Service-layer cross-domain fault agent (draft section 2.1, figure 1).

It receives incident reports from the domain agents (3a RAN, 3b IP) and complaints (3c), and after
``correlation_window`` correlates them with the topology (4): out-of-service sites all backhauled over a
link that is down make one *cross-domain* fault, whose root cause is asked of the IP agent responsible
for that link (5); sites not explained by any transport fault are radio-side faults, diagnosed by the
RAN agent. Each diagnosis is evaluated with FULFILLMENT negotiation. Then it decides (6): automatic
repair by the domain agent when the diagnosis says it is possible, otherwise a trouble ticket for
field maintenance; and it has the RAN agent verify that service is restored.

Incident reports finish as soon as they are registered; a complaint stays open until its incident is
resolved, and finishes with the resolution (what the customer is told). The reports, the incidents made
of them and what is asked of the domain agents about an incident: `an_agent.agents.incidents`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from typing import Any, ClassVar

from an_agent.agents.base import short
from an_agent.agents.environment import RoleName
from an_agent.agents.field import FieldRepair, ticket_id
from an_agent.agents.findings import Finding, elements_in, link_ids
from an_agent.agents.incidents import (
    Incident,
    Report,
    backhaul_request,
    diagnosis_request,
    repair_request,
    verification_request,
)
from an_agent.agents.once import OneAtATime
from an_agent.agents.sdk import NotFeasible, TaskFailure, TaskRun, verb_of
from an_agent.model import Task
from an_agent.schemas.validate import ValidatedPayload

SECOND_LOOKS = 2
"""How many times a site still out of service after its incident ended is investigated again."""


class CrossDomainFaultBehaviour(FieldRepair):
    role = RoleName.CROSS_DOMAIN_FAULT
    option_defaults: ClassVar[Mapping[str, Any]] = {"auto_repair": True}
    description = "Service-layer cross-domain fault agent: correlation, diagnosis orchestration, repair decisions"

    def start(self) -> None:
        self._pending: list[Report] = []
        self._correlating = False
        self._incidents: list[Incident] = []
        self._state = threading.Lock()
        self._repairs: OneAtATime[str] = OneAtATime(self.env.scheduler, "repair")
        """The repair under way per element: incidents that reach the same root cause join it."""
        self._second_looks: dict[str, int] = {}
        """How often each site was investigated again on its own (`_second_look`), to stop at `SECOND_LOOKS`."""
        if self.env.incarnation > 1:
            self.env.scheduler.spawn(f"{self.name} look again after a restart", self._look_again)

    def _look_again(self) -> None:
        """Started again (killed, or cut from its lab): the incidents it was handling were in the memory of
        the process that died, and the reports that opened them had ended. What is still out of service
        (alarms of sites and links) is correlated anew, as a report of its own; the peers join what is
        already under way (an open field ticket takes the new request in). Found by lab soak: after a
        restart mid-incident nobody verified the repair or looked at the sites still down."""
        alarms = self.env.network.active_alarms(list(self.env.regions) or None)
        sites = sorted({a.element for a in alarms if a.kind == "site_out_of_service"})
        links = sorted({a.element for a in alarms if a.domain == "ip_transport"})
        if not sites and not links:
            return
        self.note(
            "correlation",
            f"started again: {short(sites + links)} still out of service, correlated anew",
            sites=sites,
            links=links,
        )
        self._register(Report(self.name, f"restart.{self.env.incarnation}", sites=sites, links=links))

    # ---- tasks ----------------------------------------------------------------------------------------
    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        if payload is None or payload.schema_id not in ("fault_diagnosis_v1", "complaint_ticket_v1"):
            raise NotFeasible(
                f"{self.name} takes incident reports (fault_diagnosis_v1) and complaints (complaint_ticket_v1)"
            )
        return "incident reports and complaints are correlated across the domains"

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        if payload is None:
            raise TaskFailure("the task carries no structured payload")
        network = self.env.network
        report = Report(task.send_from or "?", task.task_id)
        if payload.schema_id == "complaint_ticket_v1":
            report.complaint = dict(payload.values)
            report.sites = self._complaint_sites(payload)
            report.resolution = self.env.scheduler.future(f"{self.name} complaint {task.task_id}")
        elif verb_of(task) == "report":
            report.sites = sorted(payload.values.get("affected_site_ids") or [])
            text = " ".join(payload.other.fragments)
            report.links = elements_in(text, link_ids(network))
        else:
            raise TaskFailure(f"{self.name} registers incident reports and complaints; it cannot {verb_of(task)!r}")
        self._register(report)
        if report.resolution is None:
            self.finish(
                run,
                f"incident report registered for correlation ({short(report.sites + report.links)})",
                {"registered": report.sites + report.links},
            )
            return
        resolution = report.resolution.wait()
        if not resolution.get("resolved"):
            raise TaskFailure(str(resolution.get("summary", "the complaint could not be resolved")))
        self.finish(run, str(resolution["summary"]), resolution)

    def _complaint_sites(self, payload: ValidatedPayload) -> list[str]:
        location = str(payload.values.get("location") or "").lower()
        for place in self.env.network.places():
            names = [place.name.lower(), *(a.lower() for a in place.aliases)]
            if any(n and (n in location or location in n) for n in names if location):
                return list(place.site_ids)
        return []

    # ---- correlation (step 4) -------------------------------------------------------------------------
    def _register(self, report: Report) -> None:
        with self._state:
            attached = self._attach(report)
            if attached:
                return
            self._pending.append(report)
            if self._correlating:
                return
            self._correlating = True
        self.env.scheduler.spawn(f"{self.name} correlation", self._correlate)

    def _attach(self, report: Report) -> bool:
        """Join a late report to the incidents being handled; True when nothing is left to correlate.

        A complaint joins the incident whose sites it names. Out-of-service sites join the incident that
        has them, or the cross-domain incident whose link is on their backhaul and still down; the report
        then keeps only the sites no incident explains. (Caller holds the lock.)
        """
        network = self.env.network
        if report.complaint is not None:
            for incident in self._incidents:
                if set(report.sites) & set(incident.sites):
                    incident.complaints.append(report)
                    incident.reports.append(report.task_id)
                    return True
            return False
        left: list[str] = []
        for site in report.sites:
            backhaul = network.site(site).backhaul
            joined = next(
                (
                    i
                    for i in self._incidents
                    if site in i.sites
                    or (i.link and i.link in backhaul and not report.second_look and not network.link(i.link).up)
                ),
                None,
            )
            if joined is None:
                left.append(site)
                continue
            if site not in joined.sites:
                joined.sites = sorted([*joined.sites, site])
                self.note(
                    "correlation",
                    f"{site} joins the cross-domain fault of {joined.link}",
                    link=joined.link,
                    sites=[site],
                )
            if report.task_id not in joined.reports:
                joined.reports.append(report.task_id)
        report.sites = left
        known = {i.link for i in self._incidents}
        report.links = [k for k in report.links if k not in known]
        return not report.sites and not report.links

    def _correlate(self) -> None:
        self.env.scheduler.sleep(self.env.timing.correlation_window)
        network = self.env.network
        with self._state:
            reports = [r for r in self._pending if not self._attach(r)]
            self._pending = []
            self._correlating = False
        outage = sorted({s for r in reports if r.complaint is None for s in r.sites})
        links = sorted({k for r in reports for k in r.links})
        remaining = set(outage)
        incidents: list[Incident] = []
        # Transport first: the down link that explains most out-of-service sites makes a cross-domain fault.
        for link in sorted(links, key=lambda k: (-len(set(network.sites_behind(k)) & remaining), k)):
            explained = sorted(set(network.sites_behind(link)) & remaining)
            remaining -= set(explained)
            incidents.append(Incident("cross-domain", link, explained, link))
            if explained:
                self.note(
                    "correlation",
                    f"cross-domain fault: {len(explained)} base station(s) out of service "
                    f"({short(explained)}) are all backhauled over {link}, which is down",
                    link=link,
                    sites=explained,
                )
            else:
                self.note("correlation", f"transport fault on {link} without base stations out of service", link=link)
        for site in sorted(remaining):
            incidents.append(Incident("radio", site, [site]))
            self.note("correlation", f"{site} out of service with its backhaul up: radio-side fault", sites=[site])
        for report in reports:
            if report.complaint is None:
                continue
            target = next((i for i in incidents if set(report.sites) & set(i.sites)), None)
            if target is None:
                target = Incident("complaint", f"complaint.{report.task_id}", list(report.sites))
                incidents.append(target)
                self.note(
                    "correlation",
                    f"complaint about {short(report.sites) or 'an unknown place'} matches no alarm: investigating",
                    sites=report.sites,
                )
            target.complaints.append(report)
        for incident in incidents:
            incident.reports = [r.task_id for r in reports]
            with self._state:
                self._incidents.append(incident)
            self.env.scheduler.spawn(f"{self.name} incident {incident.key}", functools.partial(self._resolve, incident))

    # ---- diagnosis, decision, repair (steps 5-8) --------------------------------------------------------
    def _resolve(self, incident: Incident) -> None:
        started = self.env.scheduler.now()
        try:
            summary = self._handle_incident(incident, started)
            resolution = {"resolved": True, "summary": summary}
        except TaskFailure as exc:
            self.note("unresolved", f"incident {incident.key}: {exc}")
            resolution = {"resolved": False, "summary": str(exc)}
        with self._state:
            self._incidents.remove(incident)
            complaints = list(incident.complaints)
        for report in complaints:
            if report.resolution is not None:
                report.resolution.set(resolution)

    def _second_look(self, incident: Incident) -> list[str]:
        """Sites of a repaired cross-domain incident that are still out of service while their backhaul is up
        had a fault of their own, hidden behind the link's (a site's power failure behind a cut fibre:
        found by lab soak, where nobody ever looked at it again): they are correlated again, as a report
        of their own, at most `SECOND_LOOKS` times per site. Returns them (not this incident's to verify)."""
        if incident.kind != "cross-domain":
            return []
        network = self.env.network
        hidden = []
        cut_off = []
        for site in incident.sites:
            view = network.site(site)
            if view.in_service:
                continue
            if not all(network.link(link).up for link in view.backhaul):
                if incident.link is not None and network.link(incident.link).up:
                    cut_off.append(site)
                continue
            with self._state:
                looks = self._second_looks.get(site, 0)
                if looks >= SECOND_LOOKS:
                    continue
                self._second_looks[site] = looks + 1
                incident.sites = [s for s in incident.sites if s != site]  # no longer this incident's
            hidden.append(site)
        if hidden:
            self.note(
                "correlation",
                f"{short(hidden)} still out of service with the backhaul over {incident.link} up again: "
                "a fault of their own, investigated on its own",
                sites=hidden,
            )
            self._register(Report(self.name, f"second-look.{incident.key}", sites=hidden, second_look=True))
        if cut_off:
            # Still cut off by another link of their backhaul (an access link cut below the core link just
            # repaired): they join that link's incident, whose repair brings them back or sends them to a
            # second look of their own (found by lab soak: that incident had no sites, nobody looked again).
            with self._state:
                incident.sites = [s for s in incident.sites if s not in cut_off]
            self.note(
                "correlation",
                f"{short(cut_off)} still out of service with {incident.link} up again: cut off by another link",
                sites=cut_off,
            )
            self._register(Report(self.name, f"handed-over.{incident.key}", sites=cut_off))
        return hidden + cut_off

    def _handle_incident(self, incident: Incident, started: float) -> str:
        network = self.env.network
        if incident.kind == "cross-domain":
            assert incident.link is not None
            owner = self._one(RoleName.IP_FAULT, network.link(incident.link).region)
            expected = incident.sites
        else:
            region = network.site(incident.sites[0]).region if incident.sites else None
            owner = self._one(RoleName.RAN_FAULT, region)
            expected = []
        value = diagnosis_request(incident, started)
        target = incident.link or ", ".join(incident.sites)
        outcome = self.ask_surely(
            owner,
            f"diagnose.{incident.key}",
            target,
            f"Diagnose the {incident.kind} fault affecting {short(incident.sites) or target}",
            value,
            expected_response="root_cause, fault_type, element, explained_site_ids",
        )
        if not outcome.finished:
            raise TaskFailure(f"diagnosis by {owner} failed: {outcome.reason}")
        finding = Finding.from_dict(outcome.result())
        fulfilled = self.evaluate(owner, outcome, ["root_cause", "fault_type"], {"explained_site_ids": expected})
        self.note(
            "fulfillment",
            f"diagnosis of {incident.key} by {owner} "
            + ("fulfils" if fulfilled else "does not fulfil")
            + " the request",
            fulfilled=fulfilled,
        )
        if finding.fault_type == "unknown" and incident.sites:
            # No radio-side evidence: the transport domain is the next suspect (a cross-domain fault after all).
            owner, finding = self._transport_diagnosis(incident, started, finding)
        if not finding.is_fault or finding.element is None:
            if incident.kind == "complaint":
                return f"no network fault found at {short(incident.sites)}: {finding.root_cause}"
            raise TaskFailure(f"no root cause found: {finding.root_cause}")
        self.note_root_cause(finding, owner)
        actions = self._repair(owner, finding, started)
        hidden = self._second_look(incident)
        self._verify(incident, finding, hidden)
        return f"root cause: {finding.root_cause}; {actions}; service restored"

    def _transport_diagnosis(self, incident: Incident, started: float, radio: Finding) -> tuple[str, Finding]:
        network = self.env.network
        owner = self._one(RoleName.IP_FAULT, network.site(incident.sites[0]).region)
        self.note("correlation", f"{radio.root_cause}: asking {owner} about the backhaul", sites=incident.sites)
        value = backhaul_request(incident, started)
        outcome = self.ask_surely(
            owner,
            f"diagnose-transport.{incident.key}",
            ", ".join(incident.sites),
            f"Diagnose the backhaul of {short(incident.sites)}",
            value,
            expected_response="root_cause, fault_type, element, explained_site_ids",
        )
        if not outcome.finished:
            raise TaskFailure(f"transport diagnosis by {owner} failed: {outcome.reason}")
        return owner, Finding.from_dict(outcome.result())

    def _repair(self, owner: str, finding: Finding, started: float) -> str:
        """Repair ``finding.element`` once, however many incidents lead to it at the same time: the first
        decides and acts, the others wait for its outcome (found by lab soak: overlapping faults made
        several incidents of one link, and each reset its ports or opened a ticket)."""
        element = finding.element
        assert element is not None

        def join() -> None:
            self.note("decision", f"the repair of {element} is under way: this incident waits for it", element=element)

        return self._repairs.run(element, functools.partial(self._act, owner, finding, started), join)[0]

    def _act(self, owner: str, finding: Finding, started: float) -> str:
        assert finding.element is not None
        auto = bool({**self.option_defaults, **self.env.options}["auto_repair"])
        if finding.remote_repair_possible and auto:
            self.note(
                "decision",
                f"automatic repair of {finding.element} by {owner}: " + "; ".join(finding.recommendations),
                element=finding.element,
            )
            value = repair_request(finding)
            outcome = self.ask_surely(
                owner,
                f"repair.{finding.element}",
                finding.element,
                f"Repair {finding.element} remotely: {'; '.join(finding.recommendations)}",
                value,
            )
            if outcome.finished:
                return f"repaired remotely by {owner}"
            self.note("decision", f"automatic repair failed ({outcome.reason}): trouble ticket instead")
        else:
            why = "automatic repair is not possible" if not finding.remote_repair_possible else "auto repair is off"
            self.note(
                "decision", f"trouble ticket for field maintenance on {finding.element}: {why}", element=finding.element
            )
        return self.field_repair(finding, ticket_id(finding.element, started))

    def _verify(self, incident: Incident, finding: Finding, hidden: list[str]) -> None:
        network = self.env.network
        sites = sorted((set(incident.sites) | set(finding.explained_site_ids)) - set(hidden))
        cells = finding.explained_cell_ids if finding.fault_type == "cell_misconfiguration" else []
        by_region: dict[str | None, list[str]] = {}
        for site in sites:
            by_region.setdefault(network.site(site).region, []).append(site)
        if not by_region and cells:
            by_region[network.cell(cells[0]).region] = []
        for region, region_sites in sorted(by_region.items(), key=lambda item: str(item[0])):
            ran = self._one(RoleName.RAN_FAULT, region)
            value = verification_request(finding, region_sites, cells)
            outcome = self.ask_surely(
                ran,
                f"verify.{incident.key}",
                ", ".join(region_sites + cells),
                f"Verify that service is restored on {short(region_sites + cells)}",
                value,
            )
            if not outcome.finished:
                raise TaskFailure(f"restoration not confirmed by {ran}: {outcome.reason}")
            self.note(
                "restored",
                f"{ran} confirms {short(region_sites + cells)} back in service",
                sites=region_sites,
                cells=cells,
            )

    def _one(self, role: RoleName, region: str | None) -> str:
        found = self.env.peers_with_role(role, region)
        if not found:
            raise TaskFailure(f"no {role} agent for region {region} among the agents {self.name} may talk to")
        return found[0]
