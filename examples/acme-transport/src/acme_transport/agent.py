"""`TransportFaultAgent`: the IP/transport fault role, written by a third party against an_agent.agents.sdk.

What it does with the tasks it is given (payload ``fault_diagnosis_v1``):

- ``Diagnose ...``: walks the backhaul of the affected sites, finds the link that is down and explains
  most of them, and answers with a finding (root cause, fault type, element, whether a remote repair
  is possible, the sites it explains). Loss of light is a fibre cut (field maintenance); an
  error-disabled port is reset remotely.
- ``Repair ...``: resets the router ports of the links of the request that are down.

FEASIBILITY: it accepts fault_diagnosis_v1 tasks about sites or links it manages (its regions), refuses
others with the reason, and counter-proposes a diagnosis when asked for something else on its links.

It imports one module of an-agent, the public API `an_agent.agents.sdk`; what it sees of the network
(``self.env.network``) is what the lab's own roles see.
"""

from __future__ import annotations

from typing import Any

from an_agent.agents.sdk import (
    API_VERSION,
    LabBehaviour,
    LinkView,
    NotFeasible,
    Task,
    TaskFailure,
    TaskRun,
    ValidatedPayload,
    verb_of,
)

if not API_VERSION.startswith("1."):  # written against version 1 of the API
    raise ImportError(f"acme-transport needs an-agent's behaviour API 1.x, this an-agent has {API_VERSION}")

_CAUSES = {
    "loss_of_light": ("link_cut", "fibre cut (loss of light)", False, "send field maintenance to splice the fibre"),
    "port_error_disabled": ("router_port_fault", "port error-disabled", True, "reset the router ports remotely"),
}
DIAGNOSIS_SECONDS = 240.0
"""Simulated time a diagnosis takes (measurements on the routers)."""


class TransportFaultAgent(LabBehaviour):
    """ACME transport fault agent (module docstring)."""

    description = "ACME transport fault agent: backhaul diagnosis and router port resets (third-party plugin)"

    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        if payload is None or payload.schema_id != "fault_diagnosis_v1":
            raise NotFeasible("ACME transport takes fault_diagnosis_v1 tasks only")
        links = self._links(payload)
        if not links:
            raise NotFeasible(f"no link managed by {self.name} carries the backhaul of those sites")
        verb = description.split()[0].lower() if description.split() else ""
        if verb not in ("diagnose", "repair"):
            counter = {"schema_id": "fault_diagnosis_v1", "payload": dict(payload.values)}
            raise NotFeasible(f"{self.name} diagnoses and repairs links; it cannot {verb!r}", counter=counter)
        return f"ACME transport manages {len(links)} link(s) of that backhaul"

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        if payload is None:
            raise TaskFailure("the task carries no fault_diagnosis_v1 payload")
        verb = verb_of(task)
        if verb == "diagnose":
            self._diagnose(payload, run)
        elif verb == "repair":
            self._repair(payload, run)
        else:
            raise TaskFailure(f"ACME transport cannot {verb!r}: it diagnoses and repairs")

    # ---- the work ---------------------------------------------------------------------------------------
    def _links(self, payload: ValidatedPayload) -> list[str]:
        network = self.env.network
        mine = {link.link_id for link in network.links(list(self.env.regions) or None)}
        named: set[str] = set()
        for site in payload.values.get("affected_site_ids") or []:
            try:
                named.update(network.site(site).backhaul)
            except ValueError:
                continue
        words = " ".join([str(payload.values.get("suspected_root_cause") or ""), *payload.other.fragments])
        named.update(word.strip(",.;") for word in words.split() if word.strip(",.;") in mine)
        return sorted(named & mine)

    def _diagnose(self, payload: ValidatedPayload, run: TaskRun) -> None:
        network = self.env.network
        self.env.scheduler.sleep(DIAGNOSIS_SECONDS)
        sites = sorted(payload.values.get("affected_site_ids") or [])
        down = [network.link(k) for k in self._links(payload) if not network.link(k).up]
        if not down:
            self.finish(
                run, "backhaul healthy: every link up", _finding("none", None, "backhaul healthy", False, [], [])
            )
            return

        def explained(link: LinkView) -> list[str]:
            behind = set(network.sites_behind(link.link_id))
            return sorted(behind & set(sites)) if sites else sorted(behind)

        down.sort(key=lambda k: (-len(explained(k)), k.link_id))
        link = down[0]
        fault_type, cause, remote, advice = _CAUSES.get(
            link.evidence or "", ("unknown", "link down", False, "send field maintenance")
        )
        root = f"{link.link_id} ({link.a} - {link.b}) down: {cause}"
        self.note("diagnosis", f"ACME: {root}", element=link.link_id, fault_type=fault_type)
        self.finish(run, root, _finding(fault_type, link.link_id, root, remote, [advice], explained(link), self.name))

    def _repair(self, payload: ValidatedPayload, run: TaskRun) -> None:
        network = self.env.network
        links = [k for k in self._links(payload) if not network.link(k).up]
        if not links:
            raise TaskFailure("no link of the request is down")
        run.block(f"resetting the router ports of {', '.join(links)}")
        repaired = [k for k in links if network.reset_port(k, self.name)]
        if not repaired:
            raise TaskFailure(f"resetting the ports of {', '.join(links)} did not bring them up")
        self.finish(run, f"{', '.join(repaired)} up again after a port reset", {"repaired_link_ids": repaired})


def _finding(
    fault_type: str, element: str | None, root: str, remote: bool, advice: list[str], sites: list[str], by: str = ""
) -> dict[str, Any]:
    return {
        "root_cause": root,
        "fault_type": fault_type,
        "element": element,
        "remote_repair_possible": remote,
        "recommendations": advice,
        "explained_site_ids": sites,
        "explained_cell_ids": [],
        "diagnosed_by": by,
    }
