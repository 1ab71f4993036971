"""Fixtures of the YANG layer tests: one real libyang context and the example profile."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from an_agent.yang import YangContext


@pytest.fixture(scope="session")
def ctx() -> YangContext:
    return YangContext.default()


@pytest.fixture(scope="session")
def example_profile() -> dict[str, object]:
    """The built-in example profile, src/an_agent/data/example-profile.json."""
    text = resources.files("an_agent").joinpath("data/example-profile.json").read_text(encoding="utf-8")
    loaded: dict[str, object] = json.loads(text)
    return loaded


@pytest.fixture(scope="session")
def example_profile_xml(ctx: YangContext, example_profile: dict[str, object]) -> str:
    return ctx.json_to_xml(example_profile)
