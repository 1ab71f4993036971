"""The shipped translation files of the templates, ``schemas/i18n/<language>.json``, read once.

One file per language other than English::

    {"language": "zh", "name": "...",
     "constraint_phrases": {"<English phrase>": "<the same phrase in this language>", ...},
     "templates": {"<schema_id>": {"<key_name>": "<description>"}}}

`an_agent.schemas.languages` serves the descriptions; `an_agent.schemas.values` reads the constraint
phrases (``Acceptable values:``, ``Range:``, ``Format:``, the list separator ...) so that a description in
any shipped language states the same machine-checkable constraints as its English original: a client that
asked for Chinese templates validates what it sends exactly as one that asked for English.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any

from an_agent.errors import ConfigError


@dataclass(frozen=True)
class Catalogue:
    """One language's translations: key descriptions by schema and the constraint phrases."""

    language: str
    name: str
    phrases: Mapping[str, str]  # English phrase -> this language's
    templates: Mapping[str, Mapping[str, str]]  # schema_id -> key_name -> description


@functools.cache
def catalogues() -> Mapping[str, Catalogue]:
    """Every shipped translation by (lower-case) language tag; ConfigError names a malformed file."""
    out: dict[str, Catalogue] = {}
    for entry in resources.files("an_agent").joinpath("schemas/i18n").iterdir():
        if not entry.name.endswith(".json"):
            continue
        try:
            document: Any = json.loads(entry.read_text(encoding="utf-8"))
            language = str(document["language"]).lower()
            phrases = {str(k): str(v) for k, v in document.get("constraint_phrases", {}).items()}
            templates = {
                str(s): MappingProxyType({str(k): str(v) for k, v in keys.items()})
                for s, keys in document["templates"].items()
            }
            name = str(document["name"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"template translations {entry.name} are malformed: {exc}") from None
        out[language] = Catalogue(language, name, MappingProxyType(phrases), MappingProxyType(templates))
    return MappingProxyType(out)
