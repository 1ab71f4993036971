"""Scenario schema templates in the format of draft-zhou-structured-data-schema-interaction section 4.1.

A template is ``{"schema_id", "scenario", "keys": [{"key_name", "key_type", "required", "default_value",
"semantic_description"}, ...]}``; the reserved key ``other`` is optional and holds a string or an array of
strings. The template carries no machine-only members: the value constraints a server enforces are the
ones its semantic descriptions state for people and LLMs, written with these phrases (each ends at a
full stop):

``Acceptable values: a, b, c.``
    an enumeration: a string value (or each item of an array) must be one of these.
``Range: LOW to HIGH.`` (or ``LOW-HIGH``)
    inclusive bounds of an integer or number.
``Format: date-time.`` / ``Format: date.`` / ``Format: duration.`` / ``Format: TT-<digits>.``
    an RFC 3339 date-and-time, an ISO 8601 date, an ISO 8601 duration (``PT2H``, ``P1D``), or an
    identifier pattern of a string value.
``Unit: mbps.``
    the unit of an integer or number (informative: not checked, carried into the JSON Schema projection).
``Item format: CELL-<digits>.``
    the same, for each item of an array. Placeholders: ``<digits>``, ``<letters>``, ``<alnum>``.

`parse_constraints` reads them; `Template.from_dict` checks a template and raises `SchemaError` listing
every problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from an_agent.errors import SchemaError
from an_agent.schemas.values import KEY_TYPES, Constraints, KeyType, check_value, parse_constraints

OTHER_KEY = "other"

_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
_MAX_KEYS = 200


def is_snake_case(name: str) -> bool:
    """True when ``name`` is a snake_case key name (lower-case letters, digits, single underscores)."""
    return bool(_SNAKE.match(name))


@dataclass(frozen=True)
class KeyDef:
    """One key definition of a template, in the draft's format.

    ``experimental`` and ``deprecated`` are set only on keys that come from a schema patch
    (draft 6.2.3): the wire form then carries ``"experimental": true`` / ``"deprecated": true``.
    """

    key_name: str
    key_type: KeyType
    required: bool
    semantic_description: str
    default_value: Any = None
    experimental: bool = False
    deprecated: bool = False
    constraints: Constraints = field(default_factory=Constraints, compare=False)

    @classmethod
    def build(
        cls,
        key_name: str,
        key_type: KeyType,
        semantic_description: str,
        *,
        required: bool = False,
        default_value: Any = None,
        experimental: bool = False,
        deprecated: bool = False,
    ) -> KeyDef:
        """A key whose constraints are parsed from its description."""
        return cls(
            key_name=key_name,
            key_type=key_type,
            required=required,
            semantic_description=semantic_description,
            default_value=default_value,
            experimental=experimental,
            deprecated=deprecated,
            constraints=parse_constraints(semantic_description),
        )

    def with_description(self, semantic_description: str) -> KeyDef:
        """The same key with a refined description (constraints re-parsed)."""
        return replace(
            self, semantic_description=semantic_description, constraints=parse_constraints(semantic_description)
        )

    def to_dict(self) -> dict[str, Any]:
        """The draft's JSON form of this key definition."""
        out: dict[str, Any] = {
            "key_name": self.key_name,
            "key_type": self.key_type,
            "required": self.required,
            "default_value": self.default_value,
            "semantic_description": self.semantic_description,
        }
        if self.experimental:
            out["experimental"] = True
        if self.deprecated:
            out["deprecated"] = True
        return out


@dataclass(frozen=True)
class Template:
    """A scenario schema template: ``schema_id``, ``scenario`` and its key definitions in order."""

    schema_id: str
    scenario: str
    keys: tuple[KeyDef, ...]

    def key(self, name: str) -> KeyDef | None:
        for key in self.keys:
            if key.key_name == name:
                return key
        return None

    @property
    def key_names(self) -> tuple[str, ...]:
        return tuple(k.key_name for k in self.keys)

    def with_keys(self, extra: Iterable[KeyDef], refined: Mapping[str, str] | None = None) -> Template:
        """This template plus ``extra`` keys (before ``other``) and refined descriptions by key name.

        Base keys are never removed or retyped: a refinement replaces only the description, and an extra
        key whose name is already taken is ignored (conflict detection merges such keys beforehand).
        """
        refined = refined or {}
        base = [k.with_description(refined[k.key_name]) if k.key_name in refined else k for k in self.keys]
        taken = {k.key_name for k in base}
        added = []
        for key in extra:
            if key.key_name not in taken:
                taken.add(key.key_name)
                added.append(key)
        head = [k for k in base if k.key_name != OTHER_KEY]
        tail = [k for k in base if k.key_name == OTHER_KEY]
        return replace(self, keys=tuple(head + added + tail))

    def to_dict(self) -> dict[str, Any]:
        """The draft's JSON form of the template."""
        return {"schema_id": self.schema_id, "scenario": self.scenario, "keys": [k.to_dict() for k in self.keys]}

    @classmethod
    def from_dict(cls, data: Any, source: str = "template") -> Template:
        """Check and load a template in the draft's format; raises `SchemaError` listing every problem."""
        problems: list[str] = []
        if not isinstance(data, Mapping):
            raise SchemaError(f"{source}: a schema template must be a JSON object", ["(top level): not an object"])
        schema_id, scenario, raw_keys = data.get("schema_id"), data.get("scenario"), data.get("keys")
        if not isinstance(schema_id, str) or not schema_id:
            problems.append("schema_id: must be a non-empty string")
        if not isinstance(scenario, str) or not scenario:
            problems.append("scenario: must be a non-empty string")
        keys: list[KeyDef] = []
        if not isinstance(raw_keys, list) or not raw_keys:
            problems.append("keys: must be a non-empty array of key definitions")
            raw_keys = []
        if len(raw_keys) > _MAX_KEYS:
            problems.append(f"keys: at most {_MAX_KEYS} keys")
        seen: set[str] = set()
        for index, raw in enumerate(raw_keys):
            key = _key_from_dict(raw, index, problems)
            if key is None:
                continue
            if key.key_name in seen:
                problems.append(f"{key.key_name}: key names must be unique")
            seen.add(key.key_name)
            keys.append(key)
        if problems:
            raise SchemaError(f"{source}: invalid schema template", problems)
        assert isinstance(schema_id, str) and isinstance(scenario, str)
        return cls(schema_id=schema_id, scenario=scenario, keys=tuple(keys))


def _key_from_dict(raw: Any, index: int, problems: list[str]) -> KeyDef | None:
    if not isinstance(raw, Mapping):
        problems.append(f"keys[{index}]: must be an object")
        return None
    name = raw.get("key_name")
    where = name if isinstance(name, str) and name else f"keys[{index}]"
    before = len(problems)
    if not isinstance(name, str) or not is_snake_case(name):
        problems.append(f"{where}: key_name must be a snake_case string")
    key_type = raw.get("key_type")
    if key_type not in KEY_TYPES:
        problems.append(f"{where}: key_type must be one of {', '.join(KEY_TYPES)}")
    required = raw.get("required")
    if not isinstance(required, bool):
        problems.append(f"{where}: required must be true or false")
    description = raw.get("semantic_description")
    if not isinstance(description, str) or not description.strip():
        problems.append(f"{where}: semantic_description must be a non-empty string")
    if name == OTHER_KEY and (required is not False or key_type not in ("string", "array")):
        problems.append("other: the reserved key must be optional (required: false) and of type string or array")
    for flag in ("experimental", "deprecated"):
        if flag in raw and not isinstance(raw[flag], bool):
            problems.append(f"{where}: {flag} must be true or false")
    if len(problems) > before:
        return None
    assert isinstance(name, str) and isinstance(description, str) and isinstance(required, bool)
    key = KeyDef.build(
        name,
        key_type,  # type: ignore[arg-type]  # checked against KEY_TYPES above
        description,
        required=required,
        default_value=raw.get("default_value"),
        experimental=bool(raw.get("experimental", False)),
        deprecated=bool(raw.get("deprecated", False)),
    )
    c = key.constraints
    if c.minimum is not None and key_type not in ("integer", "number"):
        problems.append(f"{where}: a Range is stated but key_type is {key_type}")
    if c.value_format and key_type != "string":
        problems.append(f"{where}: a Format is stated but key_type is {key_type}")
    if c.item_format and key_type != "array":
        problems.append(f"{where}: an Item format is stated but key_type is {key_type}")
    if key.default_value is not None and not _default_ok(key):
        problems.append(f"{where}: default_value {key.default_value!r} does not conform to the key")
    return key


def _default_ok(key: KeyDef) -> bool:
    return check_value(key.key_type, key.constraints, key.default_value) is None
