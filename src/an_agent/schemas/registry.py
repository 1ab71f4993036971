"""The scenario schema templates an agent publishes, and the choice of a version for a client.

The shipped templates are JSON data files in ``an_agent/schemas/templates/`` (package data); an operator
may add a directory of their own. A scenario is looked up by its name (``fault_diagnosis``) or by a
schema_id (``fault_diagnosis_v1``); a scenario with several versions resolves to the highest ``_vN``.
`negotiate` picks the highest version that the agent has and the client supports (draft-zhou section 5).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from importlib import resources
from pathlib import Path

from an_agent.errors import ConfigError, SchemaError
from an_agent.schemas.jsonschema import example_value
from an_agent.schemas.template import Template

_VERSION = re.compile(r"_v(\d+)$")


_CLIENT_VERSION = re.compile(r"^(?:v?(\d+)|.*_v(\d+))$")


def _version(schema_id: str) -> int:
    match = _VERSION.search(schema_id)
    return int(match.group(1)) if match else 0


def parse_version(text: str) -> int:
    """A client's supported version as a number: ``2``, ``v2`` or a schema_id ``fault_diagnosis_v2``.

    Raises `SchemaError` for anything else.
    """
    match = _CLIENT_VERSION.match(text.strip())
    if not match:
        raise SchemaError(
            f"not a schema version: {text!r}",
            [f"supported-version: {text!r} is neither a number (2, v2) nor a schema_id (fault_diagnosis_v2)"],
        )
    return int(match.group(1) or match.group(2))


class TemplateRegistry:
    """An immutable set of templates, by schema_id."""

    def __init__(self, templates: Iterable[Template]) -> None:
        self._by_id: dict[str, Template] = {}
        for template in templates:
            if template.schema_id in self._by_id:
                raise ConfigError(f"two schema templates use the schema_id {template.schema_id!r}")
            self._by_id[template.schema_id] = template

    @classmethod
    def default(cls, extra_dirs: Iterable[Path] = ()) -> TemplateRegistry:
        """The templates shipped with an-agent, plus every ``*.json`` in ``extra_dirs`` (operators' own).

        Every file is checked before anything is served; `ConfigError` lists every problem found, one
        line per file and key (``FILE: KEY: problem``): unreadable or non-JSON files, invalid templates,
        constraints no value can satisfy, a schema_id used twice, a directory that is missing or holds
        no template.
        """
        templates: list[Template] = []
        package = resources.files("an_agent.schemas") / "templates"
        for entry in sorted(package.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                templates.append(_load(entry.read_text(encoding="utf-8"), f"templates/{entry.name}"))
        sources = {t.schema_id: f"an-agent's templates/{t.schema_id}.json" for t in templates}
        problems: list[str] = []
        for directory in extra_dirs:
            templates.extend(_load_dir(Path(directory), sources, problems))
        if problems:
            raise ConfigError(
                f"operator schema templates refused ({len(problems)} problem{'s' if len(problems) > 1 else ''}):\n  "
                + "\n  ".join(problems)
            )
        return cls(templates)

    def get(self, schema_id: str) -> Template:
        """The template with this schema_id; `SchemaError` if there is none."""
        try:
            return self._by_id[schema_id]
        except KeyError:
            raise SchemaError(
                f"unknown schema_id {schema_id!r}", [f"schema_id: not one of {', '.join(self.schema_ids)}"]
            ) from None

    def resolve(self, scenario_or_id: str) -> Template:
        """The template for a schema_id, or the newest version of a scenario; `SchemaError` if none."""
        if scenario_or_id in self._by_id:
            return self._by_id[scenario_or_id]
        matches = [t for t in self._by_id.values() if t.scenario == scenario_or_id]
        if not matches:
            known = sorted({t.scenario for t in self._by_id.values()})
            raise SchemaError(
                f"no schema template for scenario {scenario_or_id!r}", [f"scenario: not one of {', '.join(known)}"]
            )
        return max(matches, key=lambda t: _version(t.schema_id))

    def versions(self, scenario_or_id: str) -> list[Template]:
        """Every template of the scenario (named directly or through one of its schema_ids), oldest first."""
        scenario = self._by_id[scenario_or_id].scenario if scenario_or_id in self._by_id else scenario_or_id
        return sorted((t for t in self._by_id.values() if t.scenario == scenario), key=lambda t: _version(t.schema_id))

    def negotiate(self, scenario_or_id: str, supported: Collection[str] = ()) -> Template:
        """The template to serve a client that asks for ``scenario_or_id`` and supports ``supported``.

        Without ``supported`` this is `resolve` (an exact schema_id, else the newest version). With it,
        the highest version the agent has among those the client names (numbers or schema_ids, see
        `parse_version`); a schema_id in ``scenario_or_id`` then only names the scenario. Raises
        `SchemaError` listing the schema_ids the agent has when there is no common version.
        """
        if not supported:
            return self.resolve(scenario_or_id)
        wanted = {parse_version(v) for v in supported}
        have = self.versions(scenario_or_id)
        if not have:
            self.resolve(scenario_or_id)  # raises the "no such scenario" error, listing the scenarios
        common = [t for t in have if _version(t.schema_id) in wanted]
        if not common:
            listed = ", ".join(f"v{v}" for v in sorted(wanted))
            raise SchemaError(
                f"no common version of scenario {have[0].scenario!r}: the client supports {listed}",
                [f"supported-version: the agent has {', '.join(t.schema_id for t in have)}"],
            )
        return common[-1]

    @property
    def schema_ids(self) -> tuple[str, ...]:
        return tuple(sorted(self._by_id))

    def templates(self) -> list[Template]:
        """All templates, sorted by schema_id."""
        return [self._by_id[s] for s in self.schema_ids]


def _load_dir(directory: Path, sources: dict[str, str], problems: list[str]) -> list[Template]:
    """The valid templates of ``directory``; what is wrong goes to ``problems`` (``FILE: KEY: problem``)."""
    if not directory.is_dir():
        problems.append(f"{directory}: not a directory")
        return []
    paths = sorted(directory.glob("*.json"))
    if not paths:
        problems.append(f"{directory}: holds no *.json schema template")
    loaded: list[Template] = []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            problems.append(f"{path}: cannot be read ({exc.strerror})")
            continue
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            where = f"line {exc.lineno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else str(exc)
            problems.append(f"{path}: not JSON ({where})")
            continue
        try:
            template = Template.from_dict(data, str(path))
        except SchemaError as exc:
            problems.extend(f"{path}: {problem}" for problem in exc.problems)
            continue
        unsatisfiable = _unsatisfiable_keys(template)
        if unsatisfiable:
            problems.extend(f"{path}: {problem}" for problem in unsatisfiable)
            continue
        if template.schema_id in sources:
            problems.append(
                f"{path}: schema_id: {template.schema_id} is already defined by {sources[template.schema_id]}"
            )
            continue
        sources[template.schema_id] = str(path)
        loaded.append(template)
    return loaded


def _unsatisfiable_keys(template: Template) -> list[str]:
    """Keys whose stated constraints no value meets (the card could give no valid example)."""
    problems = []
    for key in template.keys:
        try:
            example_value(key)
        except ValueError:
            problems.append(f"{key.key_name}: no {key.key_type} value meets the constraints its description states")
    return problems


def _load(text: str, source: str) -> Template:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{source}: not JSON ({exc.msg} at line {exc.lineno})") from None
    try:
        return Template.from_dict(data, source)
    except SchemaError as exc:
        raise ConfigError(f"{exc}: " + "; ".join(exc.problems)) from None
