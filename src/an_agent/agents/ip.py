"""IP (transport) fault agent: link alarms, backhaul diagnosis, remote port resets.

On its own initiative it reports link-down alarms of its regions (after ``alarm_detection``) to the
service-layer cross-domain agent when it may talk to one (use case 2.1, step 3b); the links go in
``other`` since fault_diagnosis_v1 has no key for them.

Tasks it executes (payload ``fault_diagnosis_v1``):
``Diagnose`` the backhaul of the affected sites (and any link named in the payload): which link is down
and why — loss of light means a fibre cut (field maintenance), an error-disabled port can be reset
remotely; ``Repair`` a link by resetting its router ports.
"""

from __future__ import annotations

import functools
import threading

from an_agent.agents import payloads
from an_agent.agents.base import short
from an_agent.agents.environment import Alarm, NetworkEvent, RoleName
from an_agent.agents.findings import Finding, elements_in, link_ids
from an_agent.agents.once import OneAtATime
from an_agent.agents.sdk import LabBehaviour, NotFeasible, TaskFailure, TaskRun, verb_of
from an_agent.model import Task
from an_agent.schemas.validate import ValidatedPayload

_CAUSE = {
    "loss_of_light": (
        "link_cut",
        "fibre cut: loss of light on both router ports",
        False,
        "dispatch field maintenance to splice the fibre",
    ),
    "port_error_disabled": (
        "router_port_fault",
        "router port error-disabled (link flapping protection)",
        True,
        "reset the router ports remotely",
    ),
}


class IpFaultBehaviour(LabBehaviour):
    role = RoleName.IP_FAULT
    description = "IP transport fault agent: link alarms, backhaul diagnosis, remote port resets"

    def start(self) -> None:
        self._alarms = self.env.scheduler.queue(f"{self.name} alarms")
        self._reported: set[str] = set()
        self._state = threading.Lock()
        self._resets: OneAtATime[bool] = OneAtATime(self.env.scheduler, "port reset")
        """One port reset per link at a time: a second repair of a link being reset takes its outcome."""
        self.env.network.subscribe(self._on_event, "ip_transport", self.env.regions or None)
        self.env.scheduler.spawn(f"{self.name} alarm monitor", self._monitor)

    def _on_event(self, event: NetworkEvent) -> None:
        alarm = event.alarm
        if alarm.domain != "ip_transport" or not self.env.in_scope(alarm.region):
            return
        if event.kind == "alarm_raised":
            self._alarms.put(event)
        else:
            with self._state:
                self._reported.discard(alarm.element)

    def _monitor(self) -> None:
        while True:
            event: NetworkEvent = self._alarms.get()
            with self._state:
                if event.alarm.element in self._reported:
                    continue
            self.env.scheduler.sleep(self.env.timing.alarm_detection)
            regions = list(self.env.regions) or None
            active = self.env.network.active_alarms(regions, "ip_transport")
            with self._state:
                alarms = [a for a in active if a.element not in self._reported]
                self._reported.update(a.element for a in alarms)
            if not alarms:
                continue
            with self.traced(alarms):  # the report is sent in the trace of the fault behind the alarms
                self._report(alarms)

    def _report(self, alarms: list[Alarm]) -> None:
        """Tell the cross-domain agent of ``alarms`` (use case 2.1, step 3b)."""
        links = sorted(a.element for a in alarms)
        self.note("incident", f"transport link(s) down: {short(links)}", links=links)
        services = self.env.peers_with_role(RoleName.CROSS_DOMAIN_FAULT)
        if not services:
            return
        value = payloads.envelope(
            "fault_diagnosis_v1",
            {
                "fault_type": "transmission_failure",
                "domain": "ip_transport",
                "severity": "critical",
                "alarm_ids": sorted(a.alarm_id for a in alarms),
                "other": [a.text for a in alarms],
            },
        )
        outcome = self.deliver(
            services[0],
            f"incident.{links[0]}",
            ", ".join(links),
            f"Report incident: {len(links)} transport link(s) down in the IP network",
            value,
        )
        if outcome is not None and not outcome.finished:
            self.note("report_failed", f"incident not accepted by {services[0]}: {outcome.reason}")

    # ---- tasks ----------------------------------------------------------------------------------------
    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        if payload is None or payload.schema_id != "fault_diagnosis_v1":
            raise NotFeasible(f"{self.name} takes fault_diagnosis_v1 tasks (diagnose, repair)")
        links = self._links_of(payload)
        if not links:
            raise NotFeasible(
                f"none of the sites or links named is backhauled over the links {self.name} manages "
                f"(regions {', '.join(self.env.regions) or 'all'})"
            )
        return f"{self.name} manages {len(links)} link(s) on that backhaul"

    def _links_of(self, payload: ValidatedPayload) -> list[str]:
        """The links of our regions on the affected sites' backhaul, plus links named in the free text."""
        network = self.env.network
        mine = {k.link_id for k in network.links(list(self.env.regions) or None)}
        named: set[str] = set()
        for site in payload.values.get("affected_site_ids") or []:
            try:
                named.update(network.site(site).backhaul)
            except ValueError:
                continue
        text = " ".join([str(payload.values.get("suspected_root_cause") or ""), *payload.other.fragments])
        named.update(elements_in(text, link_ids(network)))
        return sorted(named & mine)

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        if payload is None:
            raise TaskFailure("the task carries no fault_diagnosis_v1 payload")
        verb = verb_of(task)
        if verb == "diagnose":
            self._diagnose(payload, run)
        elif verb == "repair":
            self._repair(payload, run)
        else:
            raise TaskFailure(f"{self.name} diagnoses and repairs; it cannot {verb!r}")

    def _diagnose(self, payload: ValidatedPayload, run: TaskRun) -> None:
        network = self.env.network
        self.env.scheduler.sleep(self.env.timing.diagnosis)
        links = self._links_of(payload)
        sites = sorted(payload.values.get("affected_site_ids") or [])
        down = [network.link(k) for k in links if not network.link(k).up]
        if not down:
            finding = Finding(
                "none",
                None,
                f"backhaul of {short(sites) or short(links)} healthy: every link up ({short(links)})",
                False,
                ["look for the cause on the radio side"],
                [],
                [],
                self.name,
            )
            self.finish(run, finding.root_cause, finding.to_dict())
            return

        # The link that explains most of the affected sites is the cause; ties go to the nearest the core (the
        # one with more sites behind it): a site behind two cut links is back only when the upper one is, so
        # naming the lower one first sent field engineers to splice a link that could not come back (lab soak).
        def explained(link_id: str) -> list[str]:
            behind = set(network.sites_behind(link_id))
            return sorted(behind & set(sites)) if sites else sorted(behind)

        down.sort(key=lambda k: (-len(explained(k.link_id)), -len(network.sites_behind(k.link_id)), k.link_id))
        link = down[0]
        fault_type, cause, remote, advice = _CAUSE.get(
            link.evidence or "", ("unknown", "link down", False, "dispatch field maintenance")
        )
        root = f"{link.link_id} ({link.a} - {link.b}) down: {cause}"
        behind = explained(link.link_id)
        finding = Finding(fault_type, link.link_id, root, remote, [advice], behind, [], self.name)
        if len(down) > 1:
            finding.root_cause += "; also down: " + ", ".join(k.link_id for k in down[1:])
        self.note("diagnosis", f"{root}; {len(behind)} site(s) behind it", element=link.link_id, fault_type=fault_type)
        self.finish(run, finding.root_cause, finding.to_dict())

    def _repair(self, payload: ValidatedPayload, run: TaskRun) -> None:
        network = self.env.network
        down = [network.link(k) for k in self._links_of(payload) if not network.link(k).up]
        if not down:
            raise TaskFailure("no link of the request is down")
        # Only what a port reset can bring up: resetting the ports of a cut fibre above the faulty port (the
        # request names every link of the sites' backhaul) does nothing but count as a repair (lab soak).
        links = [k.link_id for k in down if _CAUSE.get(k.evidence or "", ("", "", False, ""))[2]]
        if not links:
            cause = f"{short([k.link_id for k in down])} down for a cause a port reset cannot repair"
            raise TaskFailure(f"{cause}: field maintenance needed")
        repaired = []
        for link in links:
            if self._resets.run(link, functools.partial(self._reset, link))[0]:
                repaired.append(link)
        if not repaired:
            raise TaskFailure(f"resetting the ports of {short(links)} did not bring them up: field maintenance needed")
        self.note("repair", f"router ports of {short(repaired)} reset: link(s) up", element=repaired[0])
        self.finish(run, f"{short(repaired)} back up after a port reset", {"repaired_link_ids": repaired})

    def _reset(self, link: str) -> bool:
        self.env.scheduler.sleep(self.env.timing.port_reset)
        return self.env.network.reset_port(link, self.name)
