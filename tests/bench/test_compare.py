"""bench.compare: two result documents side by side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.compare import compare_rows, last_two, main


def _doc(started: str, ours: float, netconfd: float | None, met: bool | None) -> dict[str, object]:
    ratio = None if netconfd is None else ours / netconfd
    return {
        "mode": "quick",
        "started": started,
        "rows": [
            {
                "metric": "server CPU per <get>",
                "unit": "ms",
                "ours": ours,
                "netconfd": netconfd,
                "ratio": ratio,
                "met": met,
            },
            {"metric": f"only in {started}", "unit": "ms", "ours": 1.0, "netconfd": None, "ratio": None, "met": None},
        ],
    }


def test_rows_match_by_metric_and_show_change_and_ratios() -> None:
    cells = compare_rows(_doc("a", 0.5, 0.25, False), _doc("b", 0.25, 0.25, True))
    first = cells[0]
    assert first[0] == "server CPU per <get>"
    assert first[1:4] == ["0.5 ms", "0.25 ms", "-50%"]
    assert first[4:6] == ["2", "1"]
    assert first[6] == "NO -> yes"
    # a metric present in one run only is still listed, with a dash for the other
    assert cells[1][:3] == ["only in b", "-", "1 ms"]
    assert cells[2][:3] == ["only in a", "1 ms", "-"]


def test_last_two_picks_newest_of_mode(tmp_path: Path) -> None:
    for stamp in ["20260101T000000", "20260102T000000", "20260103T000000"]:
        (tmp_path / f"bench-quick-{stamp}.json").write_text("{}")
    (tmp_path / "bench-full-20260104T000000.json").write_text("{}")
    old, new = last_two(tmp_path, "quick")
    assert (old.name, new.name) == ("bench-quick-20260102T000000.json", "bench-quick-20260103T000000.json")
    with pytest.raises(FileNotFoundError, match="need two runs"):
        last_two(tmp_path, "full")


def test_cli_prints_table_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(_doc("a", 2.0, 1.0, False)))
    new.write_text(json.dumps(_doc("b", 1.0, 1.0, True)))
    assert main([str(old), str(new)]) == 0
    assert "-50%" in capsys.readouterr().out
    assert main([str(old), str(new), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0]["change"] == "-50%"
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main([str(bad), str(new)]) == 1
