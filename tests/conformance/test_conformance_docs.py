"""docs/conformance.md lists exactly the checks the kit has (the table is generated from the registry)."""

from __future__ import annotations

import re
from pathlib import Path

from an_agent.conformance import catalogue, catalogue_markdown

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def test_the_docs_table_is_the_registry() -> None:
    text = DOC.read_text()
    table = text.split("<!-- checks:begin -->\n", 1)[1].split("<!-- checks:end -->", 1)[0]
    assert table == catalogue_markdown(), (
        "docs/conformance.md is out of date: put the output of "
        "`python -c 'from an_agent.conformance import catalogue_markdown; print(catalogue_markdown())'` "
        "between its checks:begin and checks:end markers"
    )
    assert set(re.findall(r"^\| `([a-z0-9.-]+)` \|", table, re.MULTILINE)) == {c.id for c in catalogue()}
    assert f"all {len(catalogue())} checks pass" in text
