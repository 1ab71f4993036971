"""What the resource-layer FME copilot knows: device facts, alarm history, repair guidance, status.

Everything is read from the managed network at the moment of the query (no model, nothing downloaded):
the facts of a link, site or cell, the alarms it and the sites that depend on it raised, and
step-by-step guidance written from those facts for the fault on the ticket. Each answer is a JSON
object with an ``answer`` sentence for people and the structured parts (``facts``, ``alarms``,
``steps``, ``in_service``) for agents.

A guidance step says what to do (``action``), how long it takes on site (``minutes``), and its ``kind``:
``inspect`` and ``prepare`` steps change nothing, the ``repair`` step is the one that clears the fault,
a ``verify`` step asks the copilot whether the device is back in service.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from an_agent.agents.environment import ManagedNetwork


class Query(StrEnum):
    """The structured queries between the copilots (the first word of the query task's description)."""

    FACTS = "facts"
    ALARMS = "alarms"
    GUIDE = "guide"
    STATUS = "status"


TICKET_FAULT = {
    "link_cut": "fibre_cut",
    "router_port_fault": "port_fault",
    "site_power_failure": "mains_power_lost",
    "site_software_fault": "software_hang",
    "cell_misconfiguration": "cell_misconfiguration",
}
"""Our precise fault types -> the ``fault`` enumeration of trouble_ticket_v1."""

PROCEDURE_MINUTES = {
    "fibre_cut": 75,
    "port_fault": 30,
    "mains_power_lost": 50,
    "software_hang": 25,
    "cell_misconfiguration": 35,
    "unknown": 65,
}
"""How long the guided field procedure of each trouble_ticket_v1 ``fault`` takes, its steps together
(`repair_steps`): a field repair takes at least this, however short the fault's nominal repair time."""


def device_kind(network: ManagedNetwork, element: str) -> str:
    """``link``, ``site`` or ``cell``; `ValueError` for an element the network does not have."""
    for kind, lookup in (("link", network.link), ("site", network.site), ("cell", network.cell)):
        try:
            lookup(element)
        except (KeyError, ValueError):
            continue
        return kind
    raise ValueError(f"no link, site or cell {element!r} in the network")


def region_of(network: ManagedNetwork, element: str) -> str:
    """The management domain of a link, site or cell (`ValueError` when the network has no such element)."""
    kind = device_kind(network, element)
    if kind == "link":
        return network.link(element).region
    if kind == "site":
        return network.site(element).region
    return network.cell(element).region


def device_facts(network: ManagedNetwork, element: str) -> dict[str, Any]:
    kind = device_kind(network, element)
    if kind == "link":
        link = network.link(element)
        behind = network.sites_behind(element)
        facts: dict[str, Any] = {
            "kind": "link",
            "a": link.a,
            "b": link.b,
            "region": link.region,
            "up": link.up,
            "evidence": link.evidence,
            "sites_behind": behind,
        }
        text = (
            f"{element} is the fibre link between {link.a} and {link.b} ({link.region}); it is "
            + ("up" if link.up else f"down ({(link.evidence or 'no evidence').replace('_', ' ')})")
            + f"; {len(behind)} base station(s) are backhauled over it"
        )
        location = network.fault_location(element)
        if location is not None:
            facts["otdr"] = {
                "measured_from": location.measured_from,
                "span_km": location.span_km,
                "distance_km": location.distance_km,
            }
            text += (
                f"; an OTDR shot from {location.measured_from} finds the break at {location.distance_km} km "
                f"of the {location.span_km} km span"
            )
        return {"device": element, "facts": facts, "answer": text + "."}
    if kind == "site":
        site = network.site(element)
        diagnostics = network.radio_diagnostics(element)
        down = [k for k in site.backhaul if not network.link(k).up]
        facts = {
            "kind": "site",
            "region": site.region,
            "in_service": site.in_service,
            "cells": list(site.cell_ids),
            "backhaul": list(site.backhaul),
            "backhaul_down": down,
            "radio_finding": diagnostics.finding,
            "users": site.users,
        }
        text = (
            f"{element} ({site.region}, {len(site.cell_ids)} cells, {site.users} users) is "
            + ("in service" if site.in_service else "out of service")
            + f"; radio diagnostics: {diagnostics.finding.replace('_', ' ')}"
            + (f"; backhaul down: {', '.join(down)}" if down else "; backhaul up")
        )
        return {"device": element, "facts": facts, "answer": text + "."}
    cell = network.cell(element)
    facts = {
        "kind": "cell",
        "site": cell.site_id,
        "region": cell.region,
        "in_service": cell.in_service,
        "power_dbm": cell.power_dbm,
        "planned_power_dbm": cell.base_power_dbm,
        "tilt_deg": cell.tilt_deg,
        "planned_tilt_deg": cell.base_tilt_deg,
    }
    text = (
        f"{element} on {cell.site_id}: power {cell.power_dbm} dBm (planned {cell.base_power_dbm}), "
        f"tilt {cell.tilt_deg} deg (planned {cell.base_tilt_deg})"
    )
    return {"device": element, "facts": facts, "answer": text + "."}


def _related(network: ManagedNetwork, element: str) -> set[str]:
    kind = device_kind(network, element)
    if kind == "link":
        return {element, *network.sites_behind(element)}
    if kind == "site":
        return {element, *network.site(element).backhaul, *network.site(element).cell_ids}
    return {element, network.cell(element).site_id}


def alarm_history(network: ManagedNetwork, element: str, now: float) -> dict[str, Any]:
    """The alarms of ``element`` and of what depends on it (or it on), oldest first, with their ages."""
    related = _related(network, element)
    alarms = [a for a in network.alarm_log() if a.element in related]
    rows = [
        {
            "alarm_id": a.alarm_id,
            "element": a.element,
            "kind": a.kind,
            "severity": a.severity,
            "raised_minutes_ago": round((now - a.raised_at) / 60, 1),
            "cleared": a.cleared_at is not None,
            "text": a.text,
        }
        for a in alarms
    ]
    own = [a for a in alarms if a.element == element]
    active = [r for r in rows if not r["cleared"]]
    if not rows:
        text = f"no alarm on {element} or the elements that depend on it"
    else:
        first = own[0] if own else alarms[0]
        text = (
            f"{len(rows)} alarm(s) on {element} and its dependants, {len(active)} still active; "
            f"first: {first.kind.replace('_', ' ')} on {first.element} "
            f"{round((now - first.raised_at) / 60, 1):g} minutes ago ({first.text})"
        )
    return {"device": element, "alarms": rows, "answer": text + "."}


def repair_steps(network: ManagedNetwork, element: str, fault: str) -> dict[str, Any]:
    """Step-by-step guidance for ``fault`` (a trouble_ticket_v1 ``fault``) on ``element``, from its facts."""
    facts = device_facts(network, element)["facts"]
    if fault == "unknown":
        fault = observed_fault(network, element)
        if fault == "none":
            return {"device": element, "fault": fault, "steps": [], "answer": f"{element} shows no fault to repair."}
    steps: list[dict[str, Any]]
    if fault == "fibre_cut" and facts["kind"] == "link":
        otdr = facts.get("otdr")
        where = (
            f"about {otdr['distance_km']} km from {otdr['measured_from']} along the {otdr['span_km']} km route"
            if otdr
            else f"along the route from {facts['a']} to {facts['b']} (no OTDR reading: walk the route)"
        )
        steps = [
            _step("inspect", 10, f"At {facts['a']}, confirm loss of light on the port towards {facts['b']} and tag it"),
            _step("inspect", 20, f"Locate the break {where}; open the nearest joint box or duct"),
            _step("prepare", 15, "Strip, clean and cleave both fibre ends; check the cleave angle"),
            _step("repair", 25, f"Fusion-splice the fibres of {element}, sleeve the splices, close the enclosure"),
            _step("verify", 5, f"From {facts['a']}, check light is back and ask the copilot whether {element} is up"),
        ]
    elif fault == "port_fault" and facts["kind"] == "link":
        steps = [
            _step("inspect", 10, f"At {facts['a']}, read the port towards {facts['b']}: error-disabled"),
            _step("repair", 15, "Reseat or replace the optic, then shut and no-shut the port"),
            _step("verify", 5, f"Ask the copilot whether {element} is up"),
        ]
    elif fault == "mains_power_lost" and facts["kind"] == "site":
        steps = [
            _step("inspect", 10, f"At {element}, check the mains feed and the rectifier alarms"),
            _step("repair", 30, "Restore the mains supply (breaker, fuse or generator) and power the cabinet up"),
            _step("verify", 10, f"Wait for the cells {', '.join(facts['cells'])} to come up; ask the copilot"),
        ]
    elif fault == "software_hang" and facts["kind"] == "site":
        steps = [
            _step("inspect", 5, f"At {element}, connect to the baseband unit; it does not answer"),
            _step("repair", 15, "Power-cycle the baseband unit and wait for it to load its software"),
            _step("verify", 5, f"Ask the copilot whether {element} is in service"),
        ]
    elif fault == "cell_misconfiguration" and facts["kind"] == "cell":
        steps = [
            _step("inspect", 10, f"Check the antenna tilt of {element}: {facts['tilt_deg']} deg"),
            _step("repair", 20, f"Set the tilt back to the planned {facts['planned_tilt_deg']} deg"),
            _step("verify", 5, f"Ask the copilot whether {element} is back to plan"),
        ]
    else:
        steps = [
            _step("inspect", 30, f"Inspect {element} on site; report what you find in the ticket"),
            _step("repair", 30, f"Replace the faulty part of {element}"),
            _step("verify", 5, f"Ask the copilot whether {element} is back in service"),
        ]
    for number, step in enumerate(steps, start=1):
        step["step"] = number
    text = f"{len(steps)} steps to repair the {fault.replace('_', ' ')} on {element}: " + "; ".join(
        f"{s['step']}. {s['action']} ({s['minutes']} min)" for s in steps
    )
    return {"device": element, "fault": fault, "steps": steps, "answer": text + "."}


def observed_fault(network: ManagedNetwork, element: str) -> str:
    """The trouble_ticket_v1 ``fault`` the network's own evidence shows on ``element`` (``none``: healthy)."""
    kind = device_kind(network, element)
    if kind == "link":
        link = network.link(element)
        evidence = {"loss_of_light": "fibre_cut", "port_error_disabled": "port_fault"}
        return "none" if link.up else evidence.get(link.evidence or "", "unknown")
    if kind == "site":
        finding = network.radio_diagnostics(element).finding
        return {"healthy": "none", "software_hang": "software_hang", "mains_power_lost": "mains_power_lost"}.get(
            finding, "unknown"
        )
    cell = network.cell(element)
    return "none" if cell.tilt_deg == cell.base_tilt_deg else "cell_misconfiguration"


def _step(kind: str, minutes: int, action: str) -> dict[str, Any]:
    return {"kind": kind, "minutes": minutes, "action": action}


def device_status(network: ManagedNetwork, element: str) -> dict[str, Any]:
    """Whether ``element`` and what depends on it are back in service."""
    kind = device_kind(network, element)
    own: list[str] = []
    if kind == "link":
        up = network.link(element).up
        down = [s for s in network.sites_behind(element) if not network.site(s).in_service]
        # a site down for a fault of its own (power, software) is not the link's: found by lab soak, where
        # a spliced fibre was never "back" because a site behind it had lost power meanwhile
        own = [
            s for s in down if network.radio_diagnostics(s).finding not in ("healthy", "unreachable", "misconfigured")
        ]
        # nor is a site cut off by another link of its backhaul that is still down (found by lab soak: an
        # access link spliced while the core link above it was cut too was never "back", its ticket failed)
        own += [
            s
            for s in down
            if s not in own and any(k != element and not network.link(k).up for k in network.site(s).backhaul)
        ]
        down = [s for s in down if s not in own]
    elif kind == "site":
        up = network.site(element).in_service
        down = [] if up else [element]
    else:
        cell = network.cell(element)
        up = cell.in_service and cell.tilt_deg == cell.base_tilt_deg
        down = [] if up else [element]
    ok = up and not down
    text = (
        f"{element} is back in service" + ("" if kind != "link" else " and every site behind it is up")
        if ok
        else f"{element} is not back: " + ("still down" if not up else f"sites still down: {', '.join(down)}")
    )
    if ok and own:
        text += f" (except {', '.join(own)}, down for another fault)"
    return {"device": element, "in_service": ok, "sites_down": down, "answer": text + "."}
