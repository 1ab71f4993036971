"""Per-cell compensation plans: each cell within its own limits, the others taking what one cannot."""

from __future__ import annotations

from an_agent.agents.compensation_plan import plan, wanted_changes
from an_agent.agents.environment import CellView


def cell(
    cell_id: str, power: float = 43.0, max_power: float = 47.0, tilt: float = 6.0, min_tilt: float = 0.0
) -> CellView:
    return CellView(
        cell_id=cell_id,
        site_id="SITE-" + cell_id[5:7],
        region="metro",
        in_service=True,
        users=140,
        power_dbm=power,
        base_power_dbm=power,
        max_power_dbm=max_power,
        tilt_deg=tilt,
        base_tilt_deg=tilt,
        min_tilt_deg=min_tilt,
        max_tilt_deg=12.0,
        energy_saving="enabled",
        saving_percent=30.0,
    )


def changes(cells: list[CellView], power: float, tilt: float, **weights: float) -> dict[str, tuple[float, float]]:
    result = plan(
        cells, {c.cell_id: (power, tilt) for c in cells}, {k.replace("_", "-"): v for k, v in weights.items()}
    )
    return {c.cell_id: (c.power_db, c.tilt_deg) for c in result.changes}


def test_a_request_every_cell_can_take_is_the_plan() -> None:
    cells = [cell("CELL-0101"), cell("CELL-0102")]
    result = plan(cells, {"CELL-0101": (3.0, -1.0), "CELL-0102": (3.0, -1.0)})
    assert result.as_asked and not result.limited()
    assert result.summary() == "2 cells +3 dB -1 deg"


def test_the_power_one_cell_cannot_take_is_taken_by_the_others_within_their_own_limits() -> None:
    cells = [cell("CELL-0101"), cell("CELL-0102"), cell("CELL-0103"), cell("CELL-0701", power=45.0, max_power=46.0)]
    result = plan(cells, {c.cell_id: (3.0, -1.0) for c in cells})
    got = {c.cell_id: (c.power_db, c.tilt_deg) for c in result.changes}
    # CELL-0701 takes its 1 dB; its missing 2 dB go to the others in half dB, most headroom left first
    assert got == {
        "CELL-0101": (4.0, -1.0),
        "CELL-0102": (3.5, -1.0),
        "CELL-0103": (3.5, -1.0),
        "CELL-0701": (1.0, -1.0),
    }
    assert not result.as_asked and [c.cell_id for c in result.limited()] == ["CELL-0701"]
    assert "46 dBm" in result.limited()[0].limit
    for c in cells:  # no cell leaves its limits
        assert c.base_power_dbm + got[c.cell_id][0] <= c.max_power_dbm
        assert c.min_tilt_deg <= c.base_tilt_deg + got[c.cell_id][1] <= c.max_tilt_deg


def test_a_cell_without_headroom_gets_none_and_the_others_compensate_more() -> None:
    others = [cell("CELL-0101", max_power=48.0), cell("CELL-0102", max_power=48.0)]
    full = changes([*others, cell("CELL-0701", power=45.0, max_power=46.0)], 3.0, -1.0)
    none = changes([*others, cell("CELL-0701", power=46.0, max_power=46.0)], 3.0, -1.0)
    assert none["CELL-0701"][0] == 0.0 and full["CELL-0701"][0] == 1.0
    assert sum(p for p, _ in none.values()) == sum(p for p, _ in full.values()) == 9.0
    assert none["CELL-0101"][0] + none["CELL-0102"][0] > full["CELL-0101"][0] + full["CELL-0102"][0]


def test_the_cells_bordering_most_of_the_outage_take_the_missing_power_first() -> None:
    cells = [cell("CELL-0101"), cell("CELL-0201"), cell("CELL-0701", power=46.0, max_power=46.0)]
    got = changes(cells, 2.0, 0.0, CELL_0201=2.0, CELL_0101=1.0)
    assert got["CELL-0201"] == (4.0, 0.0) and got["CELL-0101"] == (2.0, 0.0)


def test_what_nobody_can_take_becomes_uptilt_within_each_cells_tilt_range() -> None:
    cells = [cell("CELL-0101", max_power=46.0), cell("CELL-0701", power=46.0, max_power=46.0, tilt=2.0, min_tilt=0.0)]
    result = plan(cells, {c.cell_id: (4.0, -1.0) for c in cells})
    got = {c.cell_id: (c.power_db, c.tilt_deg) for c in result.changes}
    # 1 dB short on CELL-0101, 4 dB on CELL-0701: 1 deg per 2 dB, CELL-0701 stops at its 0 deg minimum
    assert got == {"CELL-0101": (3.0, -2.0), "CELL-0701": (0.0, -2.0)}
    assert "tilt range 0..12 deg" in result.changes[1].limit and result.effective


def test_a_cell_that_can_do_nothing_makes_the_plan_ineffective() -> None:
    result = plan([cell("CELL-0701", power=46.0, max_power=46.0, tilt=0.0)], {"CELL-0701": (3.0, 0.0)})
    assert not result.effective


def test_per_cell_requests_take_precedence_over_the_common_deltas() -> None:
    values = {
        "tx_power_delta_db": 3,
        "antenna_tilt_delta_deg": -1,
        "cell_changes": [{"cell_id": "CELL-0701", "tx_power_delta_db": 1, "antenna_tilt_delta_deg": -2}],
    }
    assert wanted_changes(values, ["CELL-0101", "CELL-0701"]) == {"CELL-0101": (3.0, -1.0), "CELL-0701": (1.0, -2.0)}
    # an agreed counter-proposal is feasible as it stands
    cells = [cell("CELL-0101"), cell("CELL-0701", power=45.0, max_power=46.0)]
    assert plan(cells, wanted_changes(values, ["CELL-0101", "CELL-0701"])).as_asked
