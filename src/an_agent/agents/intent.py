"""A CSS service intent as structured expectations with targets, and its fulfilment over time.

In the spirit of 3GPP TS 28.312 (intent-driven management): an `Intent` holds `Expectation`s; each
names its object (the service area), a verb (``ENSURE``, ``DELIVER``), `Target`s (a KPI name, a
condition, a value) and a context (``priority``: 1 comes first when targets conflict;
``max_breach_minutes``: how long a target may be missed in the observation window and the expectation
still count as fulfilled; ``relax_up_to``: how far the intent agent may relax the target when a
higher-priority expectation needs it). The intent travels as a ``service_intent_v1`` payload, its
shares as ``intent_task_v1`` payloads; this module reads both (the templates check the keys, this
module the structure inside ``expectations`` and ``targets``).

KPIs (`AreaKpis` of the intent's area): ``coverage_percent``, ``users_without_service`` (judged at
every instant: the time a target is missed is summed) and ``energy_kwh_per_day`` (watched as the
current draw times 24 h; judged on its average over the observation window: a day's energy is an
integral, a short peak does not break it).

The same `fulfilment` judges the intent agent's own KPI watch and the lab's outcome check (from the
network's KPI samples), so the agent's report and the lab's measurement can be compared.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from an_agent.agents import payloads
from an_agent.agents.environment import AreaKpis
from an_agent.errors import ConfigError, SchemaError

INTENT_TEMPLATE = "service_intent_v1"
KPI_NAMES = ("coverage_percent", "users_without_service", "energy_kwh_per_day")
AVERAGED = frozenset({"energy_kwh_per_day"})
"""KPIs judged on their average over the observation window (module docstring)."""
CONDITIONS = ("IS_LESS_THAN", "IS_GREATER_THAN")
VERBS = ("ENSURE", "DELIVER")
COVERAGE_KPIS = frozenset({"coverage_percent", "users_without_service"})
"""KPIs of the service's coverage (compensation and energy saving act on them)."""


def kpi_value(kpis: AreaKpis, name: str) -> float:
    """The value of KPI ``name`` (one of `KPI_NAMES`) in ``kpis``."""
    if name == "coverage_percent":
        return kpis.coverage_percent
    if name == "users_without_service":
        return kpis.users_without_service
    if name == "energy_kwh_per_day":
        return kpis.energy_kwh_per_day
    raise ValueError(f"unknown KPI {name!r}")


@dataclass(frozen=True)
class Target:
    """One expectation target: ``name`` ``condition`` ``value`` (``coverage_percent IS_GREATER_THAN 97``)."""

    name: str
    condition: str
    value: float

    def met(self, value: float) -> bool:
        if self.condition == "IS_LESS_THAN":
            return value < self.value
        return value > self.value

    def describe(self) -> str:
        sign = "<" if self.condition == "IS_LESS_THAN" else ">"
        return f"{self.name} {sign} {self.value:g}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "condition": self.condition, "value": self.value}


@dataclass(frozen=True)
class Expectation:
    expectation_id: str
    verb: str
    object: str
    targets: tuple[Target, ...]
    priority: int = 1
    max_breach_minutes: float = 0.0
    relax_up_to: float | None = None
    """The loosest value the (single) target may be relaxed to, None: not negotiable."""

    @property
    def kpis(self) -> frozenset[str]:
        return frozenset(t.name for t in self.targets)


@dataclass(frozen=True)
class Intent:
    intent_id: str
    area: str
    expectations: tuple[Expectation, ...]
    observation_minutes: int

    def expectation(self, expectation_id: str) -> Expectation:
        for e in self.expectations:
            if e.expectation_id == expectation_id:
                return e
        raise ValueError(f"intent {self.intent_id} has no expectation {expectation_id!r}")


def parse_targets(raw: Any, where: str, problems: list[str]) -> tuple[Target, ...]:
    """Targets from a JSON list of ``{name, condition, value}`` (problems appended, bad ones skipped)."""
    if not isinstance(raw, list) or not raw:
        problems.append(f"{where}: a non-empty list of targets is needed")
        return ()
    out = []
    for i, item in enumerate(raw):
        here = f"{where}[{i}]"
        if not isinstance(item, dict):
            problems.append(f"{here}: expected an object with name, condition, value")
            continue
        name, condition, value = item.get("name"), item.get("condition"), item.get("value")
        if name not in KPI_NAMES:
            problems.append(f"{here}.name: {name!r} is not one of {', '.join(KPI_NAMES)}")
        if condition not in CONDITIONS:
            problems.append(f"{here}.condition: {condition!r} is not one of {', '.join(CONDITIONS)}")
        if not isinstance(value, int | float) or isinstance(value, bool):
            problems.append(f"{here}.value: expected a number, got {value!r}")
        if name in KPI_NAMES and condition in CONDITIONS and isinstance(value, int | float):
            out.append(Target(str(name), str(condition), float(value)))
    return tuple(out)


def _number(context: Mapping[str, Any], key: str, where: str, problems: list[str]) -> float | None:
    value = context.get(key)
    if value is None:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        problems.append(f"{where}.{key}: expected a number >= 0, got {value!r}")
        return None
    return float(value)


def _expectation(raw: Any, where: str, area: str, problems: list[str]) -> Expectation | None:
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected an object (expectation_id, verb, object, targets, context)")
        return None
    unknown = sorted(set(raw) - {"expectation_id", "verb", "object", "targets", "context"})
    if unknown:
        problems.append(f"{where}: unknown keys {', '.join(unknown)}")
    eid = raw.get("expectation_id")
    if not isinstance(eid, str) or not eid.startswith("EXP-"):
        problems.append(f"{where}.expectation_id: expected EXP-..., got {eid!r}")
    verb = raw.get("verb", "ENSURE")
    if verb not in VERBS:
        problems.append(f"{where}.verb: {verb!r} is not one of {', '.join(VERBS)}")
    obj = raw.get("object", area)
    if obj != area:
        problems.append(f"{where}.object: {obj!r} is not the intent's area {area!r}")
    targets = parse_targets(raw.get("targets"), f"{where}.targets", problems)
    context = raw.get("context", {})
    if not isinstance(context, dict):
        problems.append(f"{where}.context: expected an object")
        context = {}
    priority = context.get("priority", 1)
    if not isinstance(priority, int) or isinstance(priority, bool) or priority < 1:
        problems.append(f"{where}.context.priority: expected an integer >= 1, got {priority!r}")
        priority = 1
    breach = _number(context, "max_breach_minutes", f"{where}.context", problems) or 0.0
    relax = _number(context, "relax_up_to", f"{where}.context", problems)
    if relax is not None and len(targets) != 1:
        problems.append(f"{where}.context.relax_up_to: only an expectation with one target can be relaxed")
    if not isinstance(eid, str):
        return None
    return Expectation(eid, str(verb), str(obj), targets, priority, breach, relax)


def parse_intent(values: Mapping[str, Any]) -> Intent:
    """The intent of a validated ``service_intent_v1`` payload; `SchemaError` listing every structural problem."""
    problems: list[str] = []
    area = str(values["area"])
    raw = values["expectations"]
    expectations = [_expectation(e, f"expectations[{i}]", area, problems) for i, e in enumerate(raw)]
    found = [e for e in expectations if e is not None]
    ids = [e.expectation_id for e in found]
    if len(set(ids)) != len(ids):
        problems.append("expectations: expectation ids must be unique")
    if not raw:
        problems.append("expectations: an intent needs at least one expectation")
    if problems:
        raise SchemaError(f"service intent {values.get('intent_id')!r} is not valid", problems)
    return Intent(str(values["intent_id"]), area, tuple(found), int(values.get("observation_minutes", 240)))


def intent_problems(raw: Any) -> list[str]:
    """What is wrong with a ``service_intent_v1`` payload (a topology's ``options.intent``); [] when nothing."""
    try:
        parse_intent(payloads.validate({"schema_id": INTENT_TEMPLATE, "payload": raw}).values)
    except SchemaError as exc:
        return list(exc.problems) or [str(exc)]
    return []


def load_intent(raw: Any, agent: str) -> Intent:
    """The intent of a ``service_intent_v1`` payload (a topology's ``options.intent``); `ConfigError` if bad."""
    try:
        return parse_intent(payloads.validate({"schema_id": INTENT_TEMPLATE, "payload": raw}).values)
    except SchemaError as exc:
        raise ConfigError(f"agent {agent}: options.intent: {exc}: " + "; ".join(exc.problems)) from None


# ---- fulfilment --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TargetResult:
    """How one target fared over the observation window."""

    target: Target
    judged_value: float
    """The value judged: at the end, or the window average for `AVERAGED` KPIs."""
    worst: float
    breach_minutes: float
    met: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.target.to_dict(),
            "judged_value": round(self.judged_value, 2),
            "worst": round(self.worst, 2),
            "breach_minutes": round(self.breach_minutes, 1),
            "met": self.met,
        }


@dataclass(frozen=True)
class Fulfilment:
    """An expectation's fulfilment: every target met (within ``max_breach_minutes``)."""

    expectation_id: str
    fulfilled: bool
    targets: tuple[TargetResult, ...] = field(default_factory=tuple)

    def describe(self) -> str:
        parts = []
        for r in self.targets:
            how = "average" if r.target.name in AVERAGED else "at the end"
            parts.append(
                f"{r.target.describe()}: {r.judged_value:.1f} {how}, worst {r.worst:.1f}, "
                f"missed {r.breach_minutes:.0f} min"
            )
        return f"{self.expectation_id} {'fulfilled' if self.fulfilled else 'NOT fulfilled'} ({'; '.join(parts)})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "expectation_id": self.expectation_id,
            "fulfilled": self.fulfilled,
            "targets": [t.to_dict() for t in self.targets],
        }


def fulfilment(
    expectation: Expectation,
    samples: Sequence[tuple[float, AreaKpis]],
    start: float,
    end: float,
    targets: Mapping[str, Target] | None = None,
) -> Fulfilment:
    """Judge ``expectation`` on step ``samples`` (each holds until the next) over [start, end].

    ``targets`` replaces a target by KPI name (the value in force after a negotiation); by default the
    expectation's own. A target counts as met when its judged value meets it and it was missed for at
    most the expectation's ``max_breach_minutes``; an averaged KPI is judged on its window average
    (module docstring) and has no breach allowance of its own.
    """
    steps = _steps(samples, start, end)
    results = []
    for original in expectation.targets:
        target = (targets or {}).get(original.name, original)
        values = [(kpi_value(k, target.name), hi - lo) for lo, hi, k in steps]
        breach = sum(d for v, d in values if not target.met(v)) / 60.0
        worse = max if target.condition == "IS_LESS_THAN" else min
        worst = worse(v for v, _ in values) if values else 0.0
        if target.name in AVERAGED:
            total = sum(d for _, d in values)
            judged = sum(v * d for v, d in values) / total if total > 0 else worst
            met = target.met(judged)
        else:
            judged = values[-1][0] if values else 0.0
            met = target.met(judged) and breach <= expectation.max_breach_minutes + 1e-9
        results.append(TargetResult(target, judged, worst, breach, met))
    return Fulfilment(expectation.expectation_id, all(r.met for r in results), tuple(results))


def _steps(samples: Sequence[tuple[float, AreaKpis]], start: float, end: float) -> list[tuple[float, float, AreaKpis]]:
    """The intervals [lo, hi) within [start, end] and the KPIs in force in each."""
    out: list[tuple[float, float, AreaKpis]] = []
    ordered = sorted(samples, key=lambda s: s[0])
    for i, (t, kpis) in enumerate(ordered):
        t_next = ordered[i + 1][0] if i + 1 < len(ordered) else end
        lo = max(t, start) if i else start  # the first sample holds from the start
        hi = min(t_next, end)
        if hi > lo:
            out.append((lo, hi, kpis))
    if not out and ordered:
        before = [k for t, k in ordered if t <= end]
        out.append((start, max(end, start + 1e-9), (before or [ordered[0][1]])[-1]))
    return out
