"""Lab topology files: agents, who may talk to whom, the simulated network, the scenario.

The format is documented in ``topologies/README.md`` and enforced by the JSON Schema shipped next to
this module (``topology.schema.json``), then by cross-reference checks (a site's backhaul names
existing links, a fault's target exists and has the right kind, ...). Every error names the file and
line: ``topologies/x.yaml:42: agents[2].port: -1 is less than the minimum of 0``.

`load_topology` returns a `Topology` (`an_agent.lab.agent.load_agent` builds one of its agents for
``an-agent serve --topology FILE --agent NAME``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import fields, replace
from importlib import resources
from pathlib import Path
from typing import Any

from an_agent.agents.environment import DEFAULT_SCHEMA_MODE, Layer, SchemaMode, Timing
from an_agent.agents.intent import intent_problems
from an_agent.clock import from_rfc3339
from an_agent.errors import ConfigError
from an_agent.lab.devices import devices_from
from an_agent.lab.outsiders import a2a_port_of, outsider_fields, outsider_problems, service_specs
from an_agent.lab.placement import hosts_from
from an_agent.lab.spec import (
    DEFAULT_COVERAGE_LOSS,
    DEFAULT_MAX_DURATION_MINUTES,
    DEFAULT_NEIGHBOR_RADIUS_KM,
    DEFAULT_REPAIR_MINUTES,
    AgentSpec,
    BaselineTiming,
    CellDefaults,
    CellSpec,
    EventSpec,
    FaultSpec,
    FaultType,
    LinkSpec,
    NetworkSpec,
    PlaceSpec,
    RegionSpec,
    Role,
    RouterSpec,
    SiteSpec,
    SkillSpec,
    TicketSpec,
    Topology,
)
from an_agent.lab.topology_memo import recall
from an_agent.lab.yamldoc import PathItem, YamlDocument, format_path, load_yaml

FORMAT = "an-agent-lab/1"
DEFAULT_START = "2025-06-01T08:00:00Z"
MAX_ERRORS = 12

__all__ = ["FORMAT", "Topology", "load_topology", "schema"]


def schema() -> dict[str, Any]:
    """The JSON Schema of the topology format."""
    text = resources.files("an_agent.lab").joinpath("topology.schema.json").read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def load_topology(path: Path) -> Topology:
    """Read, validate and build a topology; `ConfigError` listing each problem with ``file:line``."""
    remembered = recall(path)  # loaded once by the lab's template process, for its agents
    if remembered is not None:
        return remembered
    doc = load_yaml(path)
    _validate_schema(doc)
    problems = _Problems(doc)
    topology = _build(doc.data, problems, path)
    problems.raise_if_any()
    return topology


class _Problems:
    def __init__(self, doc: YamlDocument) -> None:
        self.doc = doc
        self.items: list[tuple[int, str]] = []

    def add(self, path: Sequence[PathItem], message: str, key: bool = False) -> None:
        line = self.doc.line_of(path, key)
        self.items.append((line, f"{self.doc.path}:{line}: {format_path(path)}: {message}"))

    def raise_if_any(self) -> None:
        if self.items:
            raise _error(self.doc, self.items)


def _error(doc: YamlDocument, items: list[tuple[int, str]]) -> ConfigError:
    ordered = [text for _, text in sorted(items, key=lambda item: item[0])]
    shown = ordered[:MAX_ERRORS]
    more = f"\n  ... and {len(ordered) - MAX_ERRORS} more" if len(ordered) > MAX_ERRORS else ""
    head = f"{doc.path}: invalid lab topology ({len(ordered)} problem{'s' if len(ordered) != 1 else ''})"
    return ConfigError(head + "\n  " + "\n  ".join(shown) + more)


def _validate_schema(doc: YamlDocument) -> None:
    import jsonschema
    from jsonschema.exceptions import best_match

    validator = jsonschema.Draft202012Validator(schema(), format_checker=jsonschema.FormatChecker())
    items: list[tuple[int, str]] = []
    for error in validator.iter_errors(doc.data):
        if error.context:  # oneOf/anyOf: the branch that came closest says most
            error = best_match(error.context)
        path = list(error.absolute_path)
        key = False
        message = error.message
        if error.validator in ("additionalProperties", "unevaluatedProperties") and isinstance(error.instance, dict):
            extra = _unexpected_keys(error)
            if extra:
                path.append(extra[0])
                key = True
                message = f"unknown key {extra[0]!r}" + (
                    f" (also: {', '.join(map(repr, extra[1:]))})" if extra[1:] else ""
                )
        line = doc.line_of(path, key)
        items.append((line, f"{doc.path}:{line}: {format_path(path)}: {message}"))
    if items:
        raise _error(doc, items)


def _unexpected_keys(error: Any) -> list[str]:
    allowed = set(error.schema.get("properties", {}))
    ref = error.schema.get("$ref")
    if ref:  # unevaluatedProperties next to a $ref: the referenced object's properties count too
        target: Any = schema()
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        allowed |= set(target.get("properties", {}))
    return sorted(str(k) for k in error.instance if str(k) not in allowed)


def _build(data: dict[str, Any], problems: _Problems, path: Path) -> Topology:
    provider = data.get("provider", "an-agent lab")
    schemas = _schema_mode(data.get("schemas", DEFAULT_SCHEMA_MODE))
    approval = data.get("schema_approval", "auto")
    agents: list[AgentSpec] = []
    names: dict[str, int] = {}
    regions = tuple(RegionSpec(r["name"], tuple(r.get("aliases", ()))) for r in data["network"]["regions"])
    region_names = {r.name for r in regions}
    _unique(problems, [r.name for r in regions], ["network", "regions"], "name", "region")
    for i, raw in enumerate(data["agents"]):
        if raw["name"] in names:
            first = names[raw["name"]]
            problems.add(["agents", i, "name"], f"agent name {raw['name']!r} is already used by agents[{first}]")
        names.setdefault(raw["name"], i)
        for j, region in enumerate(raw.get("regions", ())):
            if region not in region_names:
                problems.add(["agents", i, "regions", j], f"unknown region {region!r}; regions: {_list(region_names)}")
        layer = Layer(raw["layer"]) if "layer" in raw else None
        if raw["role"] == Role.FME_COPILOT and layer is None:
            problems.add(["agents", i], "an fme-copilot needs a layer: service (talks to the engineer) or resource")
        elif raw["role"] != Role.FME_COPILOT and layer is not None:
            problems.add(["agents", i, "layer"], f"layer is for fme-copilot agents, not {raw['role']}", key=True)
        options = dict(raw.get("options", {}))
        if raw["role"] == Role.SERVICE_INTENT and "intent" in options:
            for problem in intent_problems(options["intent"]):
                problems.add(["agents", i, "options", "intent"], problem)
            area = options["intent"].get("area") if isinstance(options["intent"], dict) else None
            if isinstance(area, str) and area not in region_names:
                problems.add(["agents", i, "options", "intent"], f"area: unknown region {area!r}")
        if layer is not None:
            options["layer"] = str(layer)
        agents.append(
            AgentSpec(
                name=raw["name"],
                role=Role(raw["role"]),
                description=raw.get("description"),
                domain=raw.get("domain"),
                provider=raw.get("provider", provider),
                regions=tuple(raw.get("regions", ())),
                port=raw.get("port", 0),
                address=raw.get("address"),
                schemas=_schema_mode(raw.get("schemas", schemas)),
                schema_approval=raw.get("schema_approval", approval),
                options=options,
                layer=layer,
                skills=tuple(
                    SkillSpec(s["name"], s.get("description"), tuple(s.get("tags", ())), tuple(s.get("examples", ())))
                    for s in raw.get("skills", ())
                ),
                a2a_port=raw.get("a2a_port"),
                templates=(path.parent / raw["templates"],) if "templates" in raw else (),
                host=raw.get("host"),
                **outsider_fields(raw, path.parent),
                southbound=raw.get("southbound", "simulator"),
            )
        )
        for key, message in outsider_problems(raw):
            problems.add(["agents", i, key], message)
    directories = [i for i, raw in enumerate(data["agents"]) if raw["role"] == Role.DIRECTORY]
    for i in directories[1:]:
        problems.add(["agents", i, "role"], f"a lab has one directory agent; agents[{directories[0]}] is already one")
    hosts = hosts_from(data.get("hosts", []), problems.add)
    host_names = {h.name: h for h in hosts}
    for i, agent in enumerate(agents):
        if agent.host is None:
            continue
        if agent.host not in host_names:
            problems.add(["agents", i, "host"], f"unknown host {agent.host!r}; hosts: {_list(set(host_names))}")
        elif agent.address is not None:
            problems.add(["agents", i, "address"], "an agent with a host is reached at the host's address", key=True)
        else:
            agents[i] = replace(agent, address=host_names[agent.host].address)
    talks_to: dict[str, tuple[str, ...]] = {}
    a2a_links: set[tuple[str, str]] = set()
    a2a_ports = {a.name: a2a_port_of(a) for a in agents}
    for sender, links in data["talks_to"].items():
        if sender not in names:
            problems.add(["talks_to", sender], f"unknown agent {sender!r}; agents: {_list(names)}", key=True)
        receivers = []
        for j, link in enumerate(links):
            receiver = link if isinstance(link, str) else link["agent"]
            receivers.append(receiver)
            if receiver not in names:
                problems.add(["talks_to", sender, j], f"unknown agent {receiver!r}; agents: {_list(names)}")
            elif receiver == sender:
                problems.add(["talks_to", sender, j], "an agent does not talk to itself")
            elif isinstance(link, dict) and link.get("transport") == "a2a":
                if a2a_ports.get(receiver) is None:
                    problems.add(
                        ["talks_to", sender, j, "transport"],
                        f"a2a needs {receiver} to serve A2A: give agent {receiver} an a2a_port",
                    )
                a2a_links.add((sender, receiver))
        talks_to[sender] = tuple(receivers)

    network = _network(data["network"], problems, region_names)
    events = _events(data["scenario"], problems, network, {a.name: a.role for a in agents})
    timing = Timing(**{f.name: float(data.get("timing", {}).get(f.name, f.default)) for f in fields(Timing)})
    baseline = BaselineTiming(
        **{f.name: float(data.get("baseline", {}).get(f.name, f.default)) for f in fields(BaselineTiming)}
    )
    start_text = data.get("start_time", DEFAULT_START)
    try:
        start = from_rfc3339(start_text)
    except ValueError as exc:
        problems.add(["start_time"], str(exc))
        start = from_rfc3339(DEFAULT_START)
    max_minutes = data["scenario"].get("max_duration_minutes", DEFAULT_MAX_DURATION_MINUTES)
    return Topology(
        name=data["name"],
        description=data.get("description", "").strip(),
        seed=int(data.get("seed", 0)),
        start_time=start,
        agents=tuple(agents),
        talks_to=talks_to,
        network=network,
        events=events,
        max_duration=float(max_minutes) * 60.0,
        timing=timing,
        baseline=baseline,
        source=path,
        peer_login_file=None if "peer_login_file" not in data else path.parent / data["peer_login_file"],
        a2a_links=frozenset(a2a_links),
        hosts=hosts,
        services=service_specs(data.get("services", []), path.parent),
        devices=devices_from(data.get("devices", []), problems.add, region_names, agents),
        users_file=None if "users_file" not in data else path.parent / data["users_file"],
    )


def _network(raw: dict[str, Any], problems: _Problems, region_names: set[str]) -> NetworkSpec:
    base = ["network"]
    defaults_raw = raw.get("cell_defaults", {})
    d = CellDefaults()
    defaults = CellDefaults(
        users=int(defaults_raw.get("users", d.users)),
        power_dbm=float(defaults_raw.get("power_dbm", d.power_dbm)),
        max_power_dbm=float(defaults_raw.get("max_power_dbm", d.max_power_dbm)),
        tilt_deg=float(defaults_raw.get("tilt_deg", d.tilt_deg)),
        min_tilt_deg=float(defaults_raw.get("min_tilt_deg", d.min_tilt_deg)),
        max_tilt_deg=float(defaults_raw.get("max_tilt_deg", d.max_tilt_deg)),
        energy_saving=defaults_raw.get("energy_saving", "enabled") == "enabled",
        saving_percent=float(defaults_raw.get("saving_percent", d.saving_percent)),
    )
    routers = []
    for i, r in enumerate(raw["routers"]):
        if r["region"] not in region_names:
            problems.add(
                [*base, "routers", i, "region"], f"unknown region {r['region']!r}; regions: {_list(region_names)}"
            )
        routers.append(RouterSpec(r["id"], r["region"], r.get("role", "access")))
    router_ids = {r.id for r in routers}
    _unique(problems, [r.id for r in routers], [*base, "routers"], "id", "router")
    links = []
    for i, raw_link in enumerate(raw["links"]):
        for end in ("a", "b"):
            if raw_link[end] not in router_ids:
                problems.add([*base, "links", i, end], f"unknown router {raw_link[end]!r}")
        links.append(LinkSpec(raw_link["id"], raw_link["a"], raw_link["b"]))
    link_ids = {k.id for k in links}
    _unique(problems, [k.id for k in links], [*base, "links"], "id", "link")
    sites = []
    cell_where: dict[str, list[PathItem]] = {}
    for i, s in enumerate(raw["sites"]):
        where: list[PathItem] = [*base, "sites", i]
        if s["region"] not in region_names:
            problems.add([*where, "region"], f"unknown region {s['region']!r}; regions: {_list(region_names)}")
        for j, link_id in enumerate(s["backhaul"]):
            if link_id not in link_ids:
                problems.add([*where, "backhaul", j], f"unknown link {link_id!r}")
        cells = _cells(s, defaults, problems, where)
        for k, cell in enumerate(cells):
            if cell.id in cell_where:
                problems.add(
                    [*where, "cells", k] if isinstance(s["cells"], list) else [*where, "cells"],
                    f"cell id {cell.id} is already used at {format_path(cell_where[cell.id])}",
                )
            cell_where.setdefault(cell.id, [*where, "cells", k])
        neighbors = s.get("neighbors")
        sites.append(
            SiteSpec(
                s["id"],
                s["region"],
                (float(s["pos"][0]), float(s["pos"][1])),
                tuple(s["backhaul"]),
                cells,
                None if neighbors is None else tuple(neighbors),
            )
        )
    site_ids = {s.id for s in sites}
    _unique(problems, [s.id for s in sites], [*base, "sites"], "id", "site")
    for i, s in enumerate(raw["sites"]):
        for j, n in enumerate(s.get("neighbors", ())):
            if n not in site_ids:
                problems.add([*base, "sites", i, "neighbors", j], f"unknown site {n!r}")
    places = []
    for i, p in enumerate(raw.get("places", ())):
        for j, site_id in enumerate(p["sites"]):
            if site_id not in site_ids:
                problems.add([*base, "places", i, "sites", j], f"unknown site {site_id!r}")
        places.append(PlaceSpec(p["name"], tuple(p.get("aliases", ())), tuple(p["sites"])))
    _unique(problems, [p.name for p in places], [*base, "places"], "name", "place")
    return NetworkSpec(
        regions=tuple(RegionSpec(r["name"], tuple(r.get("aliases", ()))) for r in raw["regions"]),
        routers=tuple(routers),
        links=tuple(links),
        sites=tuple(sites),
        places=tuple(places),
        neighbor_radius_km=float(raw.get("neighbor_radius_km", DEFAULT_NEIGHBOR_RADIUS_KM)),
        cell_defaults=defaults,
    )


def _cells(s: dict[str, Any], d: CellDefaults, problems: _Problems, where: list[PathItem]) -> tuple[CellSpec, ...]:
    raw_cells = s["cells"]
    per_site_users = s.get("users_per_cell")
    if isinstance(raw_cells, int):
        digits = s["id"].removeprefix("SITE-")
        raw_cells = [{"id": f"CELL-{digits}{k + 1:02d}"} for k in range(raw_cells)]
    out = []
    for k, c in enumerate(raw_cells):
        users = c.get("users", per_site_users)
        cell = CellSpec(
            id=c["id"],
            users=None if users is None else int(users),
            power_dbm=float(c.get("power_dbm", d.power_dbm)),
            max_power_dbm=float(c.get("max_power_dbm", d.max_power_dbm)),
            tilt_deg=float(c.get("tilt_deg", d.tilt_deg)),
            min_tilt_deg=float(c.get("min_tilt_deg", d.min_tilt_deg)),
            max_tilt_deg=float(c.get("max_tilt_deg", d.max_tilt_deg)),
            energy_saving=c.get("energy_saving", "enabled" if d.energy_saving else "disabled") == "enabled",
            saving_percent=float(c.get("saving_percent", d.saving_percent)),
        )
        at: list[PathItem] = [*where, "cells", k] if isinstance(s["cells"], list) else [*where, "cells"]
        if cell.power_dbm > cell.max_power_dbm:
            problems.add(at, f"{cell.id}: power_dbm {cell.power_dbm:g} is above max_power_dbm {cell.max_power_dbm:g}")
        if not cell.min_tilt_deg <= cell.tilt_deg <= cell.max_tilt_deg:
            problems.add(at, f"{cell.id}: tilt_deg {cell.tilt_deg:g} is outside min_tilt_deg..max_tilt_deg")
        out.append(cell)
    return tuple(out)


def _events(
    raw: dict[str, Any], problems: _Problems, network: NetworkSpec, roles: dict[str, str]
) -> tuple[EventSpec, ...]:
    links = {k.id for k in network.links}
    sites = {s.id for s in network.sites}
    cells = {c.id for s in network.sites for c in s.cells}
    events = []
    for i, e in enumerate(raw["events"]):
        where: list[PathItem] = ["scenario", "events", i]
        fault = ticket = None
        if "fault" in e:
            f = e["fault"]
            fault_type = FaultType(f["type"])
            kind = fault_type.target_kind
            if f["target"] not in {"link": links, "site": sites, "cell": cells}[kind]:
                problems.add(
                    [*where, "fault", "target"],
                    f"{fault_type} needs a {kind} as target; there is no {kind} {f['target']!r}",
                )
            fault = FaultSpec(
                fault_type,
                f["target"],
                float(f.get("repair_minutes", DEFAULT_REPAIR_MINUTES)),
                None if f.get("tilt_deg") is None else float(f["tilt_deg"]),
                float(f.get("coverage_loss", DEFAULT_COVERAGE_LOSS)),
            )
        elif "ticket" in e:
            t = e["ticket"]
            if roles.get(t["to"]) != "complaint":
                problems.add(
                    [*where, "ticket", "to"],
                    f"tickets go to a complaint agent; {t['to']!r} is "
                    + (f"a {roles[t['to']]} agent" if t["to"] in roles else "not an agent"),
                )
            ticket = TicketSpec(t["to"], t["text"])
        else:
            problems.add(where, "an event needs a fault or a ticket")
        events.append(EventSpec(float(e["at_minutes"]) * 60.0, fault, ticket))
    return tuple(sorted(events, key=lambda ev: ev.at))


def _schema_mode(value: Any) -> SchemaMode:
    """A ``schemas`` value (already checked by the JSON Schema); YAML reads an unquoted ``off`` as false."""
    mode: SchemaMode = "off" if value is False else value
    return mode


def _unique(problems: _Problems, values: list[str], where: list[PathItem], key: str, what: str) -> None:
    seen: dict[str, int] = {}
    for i, value in enumerate(values):
        if value in seen:
            problems.add([*where, i, key], f"{what} {value!r} is defined twice (first at index {seen[value]})")
        seen.setdefault(value, i)


def _list(names: Any) -> str:
    return ", ".join(sorted(names)) or "(none)"
