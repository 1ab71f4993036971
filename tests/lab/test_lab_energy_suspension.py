"""Energy saving stays suspended on the compensating cells for exactly as long as the compensation.

The optimization agent asks the energy-saving agent to suspend saving before it changes the
neighbour cells, then applies the compensation after ``timing.compensation_apply``. The suspension
must not run out on its own before the compensation ends, however late the compensation starts, and
saving comes back only once the compensation is cancelled or has expired.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from labsupport import run, variant


def _late_compensation(tmp_path: Path, apply_minutes: int, compensation_minutes: int, repair: str) -> Path:
    return variant(
        tmp_path,
        "fault-energy-optimization.yaml",
        ("compensation_minutes: 240", f"compensation_minutes: {compensation_minutes}"),
        ("\nscenario:\n", f"\ntiming: {{compensation_apply: {apply_minutes * 60}}}\nscenario:\n"),
        ("fault: {type: site_software_fault, target: SITE-06}", repair),
    )


def _assert_suspended_while_compensating(result: dict[str, object]) -> None:
    series = result["kpis"]["series"]  # type: ignore[index]
    assert any(p["compensating_cells"] > 0 for p in series)
    # every cell of this topology saves energy: each compensating cell must be one of the suspended
    exposed = [p for p in series if p["compensating_cells"] > p["energy_saving_suspended"]]
    assert not exposed, f"energy saving resumed while compensating: {exposed[:3]}"
    notes = result["notes"]  # type: ignore[index]
    ended = [n["t"] for n in notes if n["kind"] in ("compensation_cancelled", "compensation_expired")]
    resumed = [n["t"] for n in notes if n["kind"] == "energy_saving_resumed"]
    assert ended and resumed
    # saving comes back only once a compensation has ended (each resume follows an end)
    assert all(any(e <= r for e in ended) for r in resumed), (ended, resumed)
    assert min(resumed) >= min(ended)
    assert result["kpis"]["after"]["energy_saving_suspended"] == 0  # type: ignore[index]


@pytest.mark.parametrize(
    ("apply_minutes", "compensation_minutes", "repair"),
    [
        # the compensation is cancelled when the base station is back (remote reset)
        (30, 20, "fault: {type: site_software_fault, target: SITE-06}"),
        # the compensation runs out before the field repair: it expires instead of being cancelled
        (45, 60, "fault: {type: site_power_failure, target: SITE-06, repair_minutes: 300}"),
    ],
)
def test_suspension_lasts_as_long_as_a_late_compensation(
    apply_minutes: int, compensation_minutes: int, repair: str, tmp_path: Path
) -> None:
    path = _late_compensation(tmp_path, apply_minutes, compensation_minutes, repair)
    result = run(path, tmp_path / "state")
    _assert_suspended_while_compensating(result)
    assert result["outcome"]["closed_loop"], [c for c in result["outcome"]["checks"] if not c["ok"]]


def test_a_suspension_capped_by_its_template_is_extended_to_the_compensation(tmp_path: Path) -> None:
    # a week of compensation: the suspension asked for (a week plus the apply delay) exceeds the
    # 10080 minutes energy_saving_adjust_v1 allows, so it is capped and then extended
    path = _late_compensation(tmp_path, 30, 10080, "fault: {type: site_software_fault, target: SITE-06}")
    result = run(path, tmp_path / "state")
    _assert_suspended_while_compensating(result)
    extended = [m for m in result["messages"] if m["commuType"] == "taskAssign" and "extend-suspend" in m["task_id"]]
    assert len(extended) == 1
    assert result["outcome"]["closed_loop"]
