"""``an-agent lab generate``: a large topology in the lab format, from a size and a seed.

Each management domain (region) gets a core router, one aggregation router per 25 sites and one access
router per 5 sites, a RAN and an IP fault agent; the whole network shares a service-layer cross-domain
agent, an optimization agent, an energy-saving agent and a complaint agent. The scenario puts one fault
per domain (by default), cycling through a cut access link, an error-disabled aggregation port, a site
power failure and a base-station software hang, on elements the seed picks, a few minutes apart; a
customer complaint follows the first fault. The same arguments always give the same file.
"""

from __future__ import annotations

import math
import random
from typing import Any

import yaml

REGION_NAMES = ("north", "south", "east", "west", "central", "coast", "valley", "highland")
SITES_PER_AGGREGATION = 25
SITES_PER_ACCESS = 5
FAULT_CYCLE = ("link_cut", "router_port_fault", "site_power_failure", "site_software_fault")


def generate(
    sites: int, domains: int, seed: int = 1, faults: int | None = None, name: str | None = None, base_port: int = 0
) -> str:
    """The YAML text of a generated topology (module docstring). ``base_port`` 0 leaves ports free."""
    if sites < 1 or domains < 1 or domains > sites:
        raise ValueError("need at least one site per domain (1 <= domains <= sites)")
    rng = random.Random(seed)
    regions = [REGION_NAMES[d] if d < len(REGION_NAMES) else f"region-{d + 1}" for d in range(domains)]
    width = 3 if sites < 1000 else 4
    routers: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    site_rows: list[dict[str, Any]] = []
    places: list[dict[str, Any]] = []
    access_links: dict[str, list[str]] = {}
    core_links: dict[str, list[str]] = {}
    domain_sites: dict[str, list[str]] = {}
    number = 0
    for d, region in enumerate(regions):
        count = sites // domains + (1 if d < sites % domains else 0)
        side = max(1, math.ceil(math.sqrt(count)))
        x0 = d * (side + 3)
        core = f"CR-{d + 1}"
        routers.append({"id": core, "region": region, "role": "core"})
        domain_sites[region] = []
        for a in range(math.ceil(count / SITES_PER_AGGREGATION)):
            agg = f"AGG-{d + 1}-{a + 1}"
            routers.append({"id": agg, "region": region, "role": "aggregation"})
            core_link = f"LINK-{d + 1}-C{a + 1}"
            links.append({"id": core_link, "a": core, "b": agg})
            core_links.setdefault(region, []).append(core_link)
            in_agg = min(SITES_PER_AGGREGATION, count - a * SITES_PER_AGGREGATION)
            for k in range(math.ceil(in_agg / SITES_PER_ACCESS)):
                acc = f"ACC-{d + 1}-{a + 1}-{k + 1}"
                routers.append({"id": acc, "region": region})
                access = f"LINK-{d + 1}-A{a + 1}{k + 1:02d}"
                links.append({"id": access, "a": agg, "b": acc})
                access_links.setdefault(region, []).append(access)
                group = []
                for _ in range(min(SITES_PER_ACCESS, in_agg - k * SITES_PER_ACCESS)):
                    index = len(domain_sites[region])
                    number += 1
                    site_id = f"SITE-{number:0{width}d}"
                    group.append(site_id)
                    domain_sites[region].append(site_id)
                    site_rows.append(
                        {
                            "id": site_id,
                            "region": region,
                            "pos": [x0 + index % side, index // side],
                            "backhaul": [access, core_link],
                            "cells": 3,
                        }
                    )
                if a == 0 and k == 0:
                    places.append(
                        {
                            "name": f"{region} ring road",
                            "aliases": [f"{region} ring", f"{region} bypass"],
                            "sites": group,
                        }
                    )

    agents: list[dict[str, Any]] = [{"name": "service-fault", "role": "cross-domain-fault"}]
    for region in regions:
        agents.append({"name": f"ran-{region}", "role": "ran-fault", "regions": [region]})
        agents.append({"name": f"ip-{region}", "role": "ip-fault", "regions": [region]})
    agents += [
        {"name": "optimization", "role": "optimization"},
        {"name": "energy-saving", "role": "energy-saving"},
        {"name": "complaint", "role": "complaint"},
    ]
    if base_port:
        for i, agent in enumerate(agents):
            agent["port"] = base_port + i
    talks_to: dict[str, list[str]] = {
        "service-fault": [a["name"] for a in agents if a["role"] in ("ran-fault", "ip-fault")],
        "optimization": ["energy-saving"],
        "complaint": ["service-fault"],
    }
    for region in regions:
        talks_to[f"ran-{region}"] = ["service-fault", "optimization"]
        talks_to[f"ip-{region}"] = ["service-fault"]

    events: list[dict[str, Any]] = []
    for i in range(domains if faults is None else faults):
        region = regions[i % domains]
        kind = FAULT_CYCLE[i % len(FAULT_CYCLE)]
        if kind == "link_cut":
            target = access_links[region][0] if i == 0 else rng.choice(access_links[region])
        elif kind == "router_port_fault":
            target = rng.choice(core_links[region])
        else:
            target = rng.choice(domain_sites[region])
        fault: dict[str, Any] = {"type": kind, "target": target}
        if kind in ("link_cut", "site_power_failure"):
            fault["repair_minutes"] = rng.choice((90, 120, 150))
        events.append({"at_minutes": 5 + 9 * i, "fault": fault})
    if events:
        place = places[0]["name"]
        events.append(
            {
                "at_minutes": 14,
                "ticket": {
                    "to": "complaint",
                    "text": f"Ticket TT-{500000 + seed % 100000}. Customers around the {place} report no signal since "
                    "08:05. Please fix as soon as possible.",
                },
            }
        )

    document = {
        "format": "an-agent-lab/1",
        "name": name or f"generated-{sites}-sites-{domains}-domains",
        "description": f"Generated: {sites} sites in {domains} management domain(s), seed {seed}, "
        f"{len([e for e in events if 'fault' in e])} fault(s).",
        "seed": seed,
        "start_time": "2025-06-01T08:00:00Z",
        "provider": "ExampleCSP",
        "agents": agents,
        "talks_to": talks_to,
        "network": {
            "regions": [{"name": r} for r in regions],
            "neighbor_radius_km": 1.5,
            "cell_defaults": {
                "users": 100,
                "power_dbm": 43,
                "max_power_dbm": 46,
                "tilt_deg": 6,
                "energy_saving": "enabled",
                "saving_percent": 25,
            },
            "routers": routers,
            "links": links,
            "sites": site_rows,
            "places": places,
        },
        "scenario": {"max_duration_minutes": 1440, "events": events},
    }
    header = (
        f"# Generated by: an-agent lab generate --sites {sites} --domains {domains} --seed {seed}"
        + (f" --faults {faults}" if faults is not None else "")
        + "\n"
    )
    return header + yaml.safe_dump(document, sort_keys=False, width=120, default_flow_style=None)
