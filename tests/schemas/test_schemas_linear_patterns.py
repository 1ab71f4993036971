"""Every regular expression of ours that reads client text (A2A text, prompts, XPath filters) is linear in
the text's length: a megabyte of one character class must not cost an hour (the A2A TCK's large payload
did, through the RAN role's id pattern). Checked by running each on adversarial megabyte inputs."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import an_agent

_INPUTS = (
    "A" * 300_000,
    "SITE-" * 60_000,
    " " * 300_000,
    "a" * 300_000,
    "x.y-" * 75_000,
    "## " * 100_000,
    "in 5m per " * 30_000,  # glued units and their evidence (round 8)
    "1dB/" * 75_000,
    "25e a month monthly fee " * 15_000,  # money per a period (round 9)
    "cat5e cat.6 " * 30_000,  # codes glued to their word (round 9)
)


def _patterns() -> list[tuple[str, re.Pattern[str]]]:
    found = []
    for info in pkgutil.walk_packages(an_agent.__path__, "an_agent."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found.append((f"{info.name}.{name}", value))
    return found


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_no_pattern_of_ours_backtracks_on_long_text() -> None:
    patterns = _patterns()
    assert len(patterns) > 50  # the walk found the package's patterns
    for _where, pattern in patterns:  # a quadratic one takes hours here, past the timeout
        for text in _INPUTS:
            pattern.findall(text)
            pattern.findall(text.upper())
