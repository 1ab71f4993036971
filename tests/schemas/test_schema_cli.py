"""``an-agent schema ...`` commands."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from an_agent.cli import main

DEV = Path(__file__).parents[1] / "evolution" / "data" / "dev_other_corpus.jsonl"


def test_list_and_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [t["schema_id"] for t in listed] == [
        "agent_query_v1",
        "complaint_ticket_v1",
        "coverage_compensation_v1",
        "energy_saving_adjust_v1",
        "fault_diagnosis_v1",
        "intent_task_v1",
        "service_intent_v1",
        "trouble_ticket_v1",
    ]
    assert main(["schema", "show", "energy_saving_adjust", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["schema_id"] == "energy_saving_adjust_v1"
    assert main(["schema", "show", "coverage_compensation_v1"]) == 0
    out = capsys.readouterr().out
    assert "tx_power_delta_db: number, optional, default 0" in out and "Range: -10 to 10" in out
    assert main(["schema", "show", "flight_booking"]) == 1
    assert "no schema template for scenario" in capsys.readouterr().err


def test_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = tmp_path / "good.json"
    good.write_text(
        json.dumps(
            {
                "schema_id": "energy_saving_adjust_v1",
                "payload": {"cell_ids": ["CELL-0401"], "action": "reduce", "other": "<b>hot</b>"},
            }
        )
    )
    assert main(["schema", "validate", str(good), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["other"] == ["hot"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"schema_id": "energy_saving_adjust_v1", "payload": {"action": "stop"}}))
    assert main(["schema", "validate", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "  - cell_ids: required key is missing" in err and "  - action: 'stop' is not one of" in err


def test_cli_start_up_does_not_import_torch() -> None:
    code = (
        "import sys; from an_agent.cli import build_parser; build_parser(); "
        "print(any(m in sys.modules for m in ('torch', 'sentence_transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.slow
def test_map(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "schema",
                "map",
                "--scenario",
                "energy_saving_adjust",
                "--json",
                "Suspend energy saving on CELL-0401 for 2 hours, the cabinet is very hot",
            ]
        )
        == 0
    )
    result = json.loads(capsys.readouterr().out)
    assert result["envelope"] == {
        "schema_id": "energy_saving_adjust_v1",
        "payload": {
            "cell_ids": ["CELL-0401"],
            "action": "suspend",
            "duration_minutes": 120,
            "other": "the cabinet is very hot",
        },
    }
    assert main(["schema", "map", "--scenario", "energy_saving_adjust", "the cabinet is very hot"]) == 1
    assert "required keys not found in the text: cell_ids, action" in capsys.readouterr().err


@pytest.mark.slow
def test_replay_json_and_threshold_options(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["schema", "replay", str(DEV), "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert list(report) == [
        "lines",
        "accepted",
        "rejected",
        "blank_lines",
        "fragments",
        "clusters",
        "patches",
        "events",
    ]
    assert len(report["patches"]) == 6 and report["accepted"] == 85 and report["rejected"] == []
    assert report["lines"] == 85 and report["blank_lines"] == 0
    assert "replayed 85/85 usable lines" in captured.err
    assert main(["schema", "replay", str(DEV), "--json", "--heat-threshold", "1000"]) == 0
    assert json.loads(capsys.readouterr().out)["patches"] == []
    assert main(["schema", "replay", str(DEV)]) == 0
    human = capsys.readouterr().out
    assert (
        "85 lines read: 85 accepted, 0 refused; 85 fragments" in human
        and "6 patches" in human
        and "experimental" in human
    )
    header = next(line for line in human.splitlines() if line.startswith("CLUSTER"))
    assert header.split()[5:7] == ["COHESION", "CORE"]  # the purity-like share next to cohesion
    assert header.split()[-1] == "LINES"  # 1-based, as refused lines are numbered
    # Refused lines are counted and listed (1-based), in JSON and in the human output.
    lines = DEV.read_text().splitlines()
    bad = dict(json.loads(lines[0]), schema_id="nope_v1")
    log = tmp_path / "log.jsonl"
    # A blank line is not data but is counted: every line of the file is accounted for.
    log.write_text("\n".join([*lines[:3], "{oops", json.dumps(bad), "", *lines[3:]]) + "\n")
    assert main(["schema", "replay", str(log), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["accepted"] == 85 and [r["line"] for r in report["rejected"]] == [4, 5]
    # Member lines name the file's lines: the first three corpus lines are lines 1-3, the rest moved by 3.
    numbered = sorted(n for c in report["clusters"] for n in c["member_lines"])
    assert numbered == [1, 2, 3, *range(7, 89)]
    assert all(c["member_lines"] == [m + 1 for m in c["members"]] for c in report["clusters"])
    assert report["blank_lines"] == 1 and report["lines"] == 88
    assert main(["schema", "replay", str(log)]) == 0
    human = capsys.readouterr().out
    assert "88 lines read: 85 accepted, 2 refused, 1 blank" in human and "line 4: not JSON" in human
    assert "line 5: unknown schema_id 'nope_v1'" in human
