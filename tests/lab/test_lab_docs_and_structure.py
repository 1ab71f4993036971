"""topologies/README.md documents every default a topology author relies on; lab/ stays layered and small."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest
from labsupport import TOPOLOGIES

from an_agent.agents.environment import DEFAULT_SCHEMA_MODE, Timing
from an_agent.agents.roles import ROLES
from an_agent.lab import network, spec, topology

README = (TOPOLOGIES / "README.md").read_text(encoding="utf-8")
SRC = Path(__file__).resolve().parents[2] / "src" / "an_agent"


def _g(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value).lower() if isinstance(value, bool) else str(value)


@pytest.mark.parametrize("cls", [Timing, spec.BaselineTiming])
def test_every_timing_and_baseline_default_is_documented(cls: type) -> None:
    for f in fields(cls):
        assert f"`{f.name}` {_g(f.default)}" in README, f"{cls.__name__}.{f.name} = {f.default} is not documented"


def test_every_cell_default_is_documented() -> None:
    row = next(line for line in README.splitlines() if line.startswith("| | `cell_defaults` |"))
    for f in fields(spec.CellDefaults):
        shown = ("enabled" if f.default else "disabled") if f.name == "energy_saving" else _g(f.default)
        assert f"`{f.name}` {shown}" in row, f.name


def test_every_role_option_and_profile_default_is_documented() -> None:
    for role in ROLES.values():
        for option, value in role.behaviour.option_defaults.items():
            assert f"| `{option}` | `{_g(value)}` |" in README, f"{role.name}: option {option}"
        assert f"`{role.domain}` (" in README and str(role.name) in README.split("`domain`, `description`")[1]


def test_scenario_network_and_top_level_defaults_are_documented() -> None:
    expected = [
        f"`repair_minutes` | `{_g(spec.DEFAULT_REPAIR_MINUTES)}`",
        f"`coverage_loss` (cell_misconfiguration) | `{_g(spec.DEFAULT_COVERAGE_LOSS)}`",
        f"`neighbor_radius_km` | `{_g(spec.DEFAULT_NEIGHBOR_RADIUS_KM)}`",
        f"`max_duration_minutes` | `{spec.DEFAULT_MAX_DURATION_MINUTES}`",
        f"`start_time` | `{topology.DEFAULT_START}`",
        f"`schemas` | `{DEFAULT_SCHEMA_MODE}`",
        f'{_g(network.DEFAULT_FIELD_REPAIR_MINUTES)} min, then "no fault found"',
        "a link between two regions is owned, diagnosed and repaired by the IP agent of its `a` router's",
        "the default power step of a compensation",
    ]
    flat = " ".join(README.replace("| | ", "| ").split())
    for text in expected:
        assert text in flat, text


def _imports(path: Path) -> set[str]:
    """Every an_agent module ``path`` imports, at module level or inside functions."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("an_agent"):
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("an_agent"))
    return out


def test_lab_modules_import_each_other_without_a_circle() -> None:
    modules = {"an_agent." + ".".join(p.relative_to(SRC).with_suffix("").parts): p for p in (SRC / "lab").rglob("*.py")}
    graph = {name: {m for m in _imports(path) if m in modules and m != name} for name, path in modules.items()}
    state: dict[str, int] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = 1
        for dep in sorted(graph[name]):
            if state.get(dep) == 1:
                raise AssertionError("import circle: " + " -> ".join([*trail[trail.index(dep) :], dep]))
            if dep not in state:
                visit(dep, [*trail, dep])
        state[name] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    # agents/ sits below lab/: no behaviour imports the lab
    for path in (SRC / "agents").glob("*.py"):
        assert not {m for m in _imports(path) if m.startswith("an_agent.lab")}, path.name


def test_no_lab_module_holds_two_ideas() -> None:
    long = {p.name: n for p in (SRC / "lab").rglob("*.py") if (n := len(p.read_text().splitlines())) > 440}
    assert not long, f"split these: {long}"
