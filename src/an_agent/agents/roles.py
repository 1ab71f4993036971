"""The lab roles: which behaviour class plays each, and what its profile says it can do."""

from __future__ import annotations

from dataclasses import dataclass

from an_agent.agents.complaint import ComplaintBehaviour
from an_agent.agents.energy import EnergySavingBehaviour
from an_agent.agents.environment import RoleName
from an_agent.agents.fme import FmeCopilotBehaviour
from an_agent.agents.ip import IpFaultBehaviour
from an_agent.agents.optimization import OptimizationBehaviour
from an_agent.agents.ran import RanFaultBehaviour
from an_agent.agents.sdk import LabBehaviour
from an_agent.agents.service import CrossDomainFaultBehaviour
from an_agent.agents.service_intent import ServiceIntentBehaviour
from an_agent.agents.trouble_ticket import TroubleTicketBehaviour
from an_agent.model import Skill

_JSON = "application/json;schema="


@dataclass(frozen=True)
class Role:
    name: RoleName
    behaviour: type[LabBehaviour]
    domain: str
    skills: tuple[Skill, ...]


def _skill(name: str, description: str, tags: list[str], schemas: list[str], examples: list[str]) -> Skill:
    return Skill(
        name=name,
        description=description,
        tags=tags,
        input_modes=["text/plain", *(_JSON + s for s in schemas)],
        output_modes=["application/json"],
        examples=examples,
    )


ROLES: dict[RoleName, Role] = {
    r.name: r
    for r in (
        Role(
            RoleName.CROSS_DOMAIN_FAULT,
            CrossDomainFaultBehaviour,
            "Service",
            (
                _skill(
                    "cross-domain-correlation",
                    "correlate incidents and complaints across the wireless and transport domains",
                    ["correlation", "incident", "cross-domain"],
                    ["fault_diagnosis_v1", "complaint_ticket_v1"],
                    ["Report incident: 22 base stations out of service"],
                ),
                _skill(
                    "repair-decision",
                    "decide between automatic repair and a trouble ticket for field maintenance",
                    ["repair", "trouble-ticket"],
                    ["fault_diagnosis_v1"],
                    [],
                ),
            ),
        ),
        Role(
            RoleName.RAN_FAULT,
            RanFaultBehaviour,
            "Wireless",
            (
                _skill(
                    "ran-fault-diagnosis",
                    "diagnose base-station and cell faults",
                    ["diagnose", "fault", "alarm"],
                    ["fault_diagnosis_v1", "intent_task_v1"],
                    ["Diagnose the radio side of SITE-07"],
                ),
                _skill(
                    "ran-remote-repair",
                    "restart base stations, restore planned cell configuration",
                    ["repair", "restart"],
                    ["fault_diagnosis_v1"],
                    ["Repair SITE-07 remotely"],
                ),
                _skill(
                    "service-verification",
                    "verify that sites and cells are back in service",
                    ["verify"],
                    ["fault_diagnosis_v1"],
                    ["Verify that service is restored on SITE-07"],
                ),
            ),
        ),
        Role(
            RoleName.IP_FAULT,
            IpFaultBehaviour,
            "IP transport",
            (
                _skill(
                    "transport-diagnosis",
                    "diagnose the backhaul of base stations: link and port faults",
                    ["diagnose", "transport", "backhaul"],
                    ["fault_diagnosis_v1"],
                    ["Diagnose the transport path of SITE-07"],
                ),
                _skill("port-reset", "reset router ports remotely", ["repair", "port"], ["fault_diagnosis_v1"], []),
            ),
        ),
        Role(
            RoleName.OPTIMIZATION,
            OptimizationBehaviour,
            "Wireless",
            (
                _skill(
                    "coverage-compensation",
                    "compensate a coverage hole with neighbour cells' power and tilt, within the cells' limits",
                    ["compensate", "coverage", "power", "tilt"],
                    ["coverage_compensation_v1", "intent_task_v1"],
                    ["Compensate the coverage of CELL-0701"],
                ),
            ),
        ),
        Role(
            RoleName.ENERGY_SAVING,
            EnergySavingBehaviour,
            "Wireless",
            (
                _skill(
                    "energy-saving-adjust",
                    "suspend, reduce or resume cell energy saving",
                    ["energy", "saving", "suspend", "resume"],
                    ["energy_saving_adjust_v1", "intent_task_v1"],
                    ["Suspend energy saving on CELL-0801"],
                ),
            ),
        ),
        Role(
            RoleName.SERVICE_INTENT,
            ServiceIntentBehaviour,
            "Service",
            (
                _skill(
                    "intent-assurance",
                    "hold a CSS service intent (expectations with targets on coverage, users without service and "
                    "energy per day), decompose it into tasks for the fault, optimization and energy-saving agents, "
                    "watch the KPIs against the targets, negotiate conflicting targets, report fulfilment",
                    ["intent", "assurance", "expectation", "negotiation"],
                    ["service_intent_v1", "intent_task_v1"],
                    ["Keep coverage of the metro area above 97 % at no more than 1000 kWh a day"],
                ),
            ),
        ),
        Role(
            RoleName.COMPLAINT,
            ComplaintBehaviour,
            "Service",
            (
                _skill(
                    "complaint-handling",
                    "parse natural-language trouble tickets, localise the management domain, "
                    "split into sub-tasks or forward",
                    ["complaint", "ticket", "iov"],
                    ["complaint_ticket_v1"],
                    ["Vehicles lose the network on the A4 near exit 12"],
                ),
            ),
        ),
        Role(
            RoleName.TROUBLE_TICKET,
            TroubleTicketBehaviour,
            "OSS",
            (
                _skill(
                    "sub-ticketing",
                    "split a localised complaint ticket into sub-tickets for the transport and mobile agents "
                    "of the domain, have the cause repaired and the restoration verified",
                    ["ticket", "sub-ticket", "oss", "iov"],
                    ["complaint_ticket_v1"],
                    ["Resolve complaint ticket TT-88213: intermittent_connectivity at A4 exit 12"],
                ),
            ),
        ),
        Role(
            RoleName.FME_COPILOT,
            FmeCopilotBehaviour,
            "Service",
            (
                _skill(
                    "fme-guidance",
                    "answer the field engineer's questions about a faulty device in natural language; "
                    "take repair trouble tickets; step-by-step repair guidance from the network's facts",
                    ["copilot", "field-maintenance", "trouble-ticket", "guidance"],
                    ["trouble_ticket_v1"],
                    ["How do I repair LINK-C2, step by step?", "Which alarms has SITE-07 raised?"],
                ),
            ),
        ),
    )
}
