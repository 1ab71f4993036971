"""Issue 31: a new time concept is kept apart from a template's date-time key unless its fragments,
without their moments, restate that key (`evolution/time_concepts.py`), on the calibration probes of
`tests/evolution/data/moment_probes.json` (written apart from the held-out corpora)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.time_concepts import of_moments, restates, restating_group, strip_moment
from an_agent.schemas.registry import TemplateRegistry
from an_agent.schemas.template import KeyDef
from conftest import DATA

PROBES: list[dict[str, Any]] = json.loads((DATA / "moment_probes.json").read_text())["probes"]
NOW = 1_794_000_000.0


def _key(probe: dict[str, Any]) -> KeyDef:
    template = TemplateRegistry.default().get(probe["schema_id"])
    return next(k for k in template.keys if k.key_name == probe["key_name"])


def test_the_moment_is_stripped_and_its_preposition_kept() -> None:
    assert strip_moment("service restored 2027-01-15 at 15:00 UTC") == "service restored"
    assert strip_moment("down since 2027-01-16 03:20 UTC") == "down since"
    assert strip_moment("restoration time 2027-01-16T21:10Z") == "restoration time"
    assert strip_moment("repair by 2027-02-05 at 08:00 UTC at the latest") == "repair by at the latest"
    assert strip_moment("Site access granted from 2027-02-03 07:00 UTC, key at the reception").startswith(
        "Site access granted from"
    )
    assert of_moments(["restored 11:05", "back at 12:00", "all good"], NOW)
    assert not of_moments(["restored", "back", "all good", "fine at 10:00"], NOW)


@pytest.mark.slow
@pytest.mark.parametrize("probe", PROBES, ids=[f"{p['key_name']}-{p['kind']}-{i}" for i, p in enumerate(PROBES)])
def test_a_set_restates_its_key_or_is_another_concept(minilm: MiniLMEmbedder, probe: dict[str, Any]) -> None:
    assert restates(probe["texts"], _key(probe), minilm) == (probe["kind"] == "restates")
    assert restating_group(probe["texts"], _key(probe), minilm) == []  # one concept: no split


@pytest.mark.slow
def test_restating_lines_are_set_apart_from_a_new_concept(minilm: MiniLMEmbedder) -> None:
    by: dict[tuple[str, str], dict[str, Any]] = {}
    for p in PROBES:
        by.setdefault((p["key_name"], p["kind"]), p)  # the first set of each kind
    for name in ("occurred_at", "deadline"):
        restating, other = by[(name, "restates")], by[(name, "other")]
        texts = restating["texts"][:3] + other["texts"]
        assert restating_group(texts, _key(restating), minilm) == [0, 1, 2], name
