"""Reading RFC 7951-shaped dicts (JSON or YAML profile files) with messages a person can act on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from an_agent.errors import ConfigError

MODULE_PREFIX = "irtf-agent:"


class DictReader:
    """Typed access to one JSON object; every complaint names the object's path.

    ``allowed`` lists the member names the YANG node has; any other member is
    refused (a typo in a profile file must not vanish silently). Members may
    carry the ``irtf-agent:`` module prefix, as RFC 7951 allows.
    """

    def __init__(self, value: object, where: str, allowed: frozenset[str]) -> None:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected an object, got {type(value).__name__}")
        self.where = where
        self.members: dict[str, Any] = {}
        for key, member in value.items():
            name = str(key).removeprefix(MODULE_PREFIX)
            if name not in allowed:
                raise ConfigError(f"{where}: unknown member {key!r}; expected one of {', '.join(sorted(allowed))}")
            self.members[name] = member

    def path(self, name: str) -> str:
        return f"{self.where}/{name}"

    def string(self, name: str, required: bool = False) -> str | None:
        value = self.members.get(name)
        if value is None:
            if required:
                raise ConfigError(f"{self.where}: missing mandatory member {name!r}")
            return None
        if isinstance(value, bool | dict | list):
            raise ConfigError(f"{self.path(name)}: expected a string, got {type(value).__name__}")
        return str(value)

    def required_str(self, name: str) -> str:
        value = self.string(name, required=True)
        assert value is not None
        return value

    def boolean(self, name: str) -> bool | None:
        value = self.members.get(name)
        if value is None or isinstance(value, bool):
            return value
        raise ConfigError(f"{self.path(name)}: expected true or false, got {value!r}")

    def str_list(self, name: str) -> list[str]:
        value = self.members.get(name)
        if value is None:
            return []
        if isinstance(value, str):
            return [value]  # a single value where a leaf-list is expected: forgive it
        if not isinstance(value, list) or any(isinstance(v, dict | list | bool) or v is None for v in value):
            raise ConfigError(f"{self.path(name)}: expected a list of strings")
        return [str(v) for v in value]

    def objects(self, name: str) -> list[tuple[str, object]]:
        """Entries of a list member, each with its path for nested readers."""
        value = self.members.get(name)
        if value is None:
            return []
        if not isinstance(value, list):
            raise ConfigError(f"{self.path(name)}: expected a list of objects")
        return [(f"{self.path(name)}[{i}]", entry) for i, entry in enumerate(value)]

    def member(self, name: str) -> tuple[str, object] | None:
        value = self.members.get(name)
        return None if value is None else (self.path(name), value)
