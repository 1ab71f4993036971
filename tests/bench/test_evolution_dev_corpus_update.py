"""bench.evolution_dev_corpus --update: the table blocks of a document are regenerated, its prose kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.evolution_dev_corpus import report, update

DATA = Path(__file__).resolve().parent.parent / "evolution" / "data"


@pytest.mark.slow
def test_update_rewrites_the_blocks_and_keeps_the_prose(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    prose = ["# Corpora", "", "The corpus `tests/evolution/data/dev_other_corpus.jsonl`:", ""]
    stale = ["3 lines accepted, 0 refused, 1 clusters, 0 patches.", "", "| old |", "", "Patches no intent explains: x."]
    doc.write_text("\n".join([*prose, *stale, "", "Closing words."]), encoding="utf-8")
    assert update(doc) == ["dev_other_corpus.jsonl"]
    fresh = report(DATA / "dev_other_corpus.jsonl")
    assert doc.read_text(encoding="utf-8") == "\n".join([*prose, fresh, "", "Closing words."])
    assert update(doc) == []  # nothing changes the second time


def test_a_block_with_no_corpus_above_it_is_refused_and_the_file_kept(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    text = "# No corpus named\n\n3 lines accepted, 0 refused.\n\nPatches no intent explains: none.\n"
    doc.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="without a corpus"):
        update(doc)
    assert doc.read_text(encoding="utf-8") == text
