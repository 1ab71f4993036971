"""Per-cell coverage compensation: what each neighbour cell can do within its own limits.

A coverage_compensation_v1 request asks the neighbour cells for a power change and a tilt change
(the same for all, or per cell in ``cell_changes``). Each cell can only take what its own limits
allow: power up to its ``max_power_dbm`` (from its planned power: the compensation is set on top of
the plan), tilt within ``min_tilt_deg .. max_tilt_deg``. `plan` works out, per cell:

1. the power it can take: the wanted change, capped by its headroom (in `POWER_STEP_DB` steps);
2. the power the limited cells could not take is taken by the other cells, in `POWER_STEP_DB` steps,
   each within its own headroom: first the cells that contribute most to the coverage gap (border the
   most of the out-of-service sites: ``weights``), then those with the most headroom left;
3. what nobody can take is made up with uptilt on the cells that lost it (1 degree per
   `DB_PER_UPTILT_DEG` dB), within each one's tilt range;
4. the wanted tilt, within each cell's tilt range.

The plan is the request itself when every cell can take what it was asked; else it is the
counter-proposal, naming per cell what can be done and why (`CellChange.limit`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from an_agent.agents.environment import CellView

POWER_STEP_DB = 0.5
"""The smallest power change planned (settings move in half dB)."""
DB_PER_UPTILT_DEG = 2.0
"""The agent's own rule: one degree of extra uptilt makes up for this much power a cell cannot take."""
_EPS = 1e-9


@dataclass(frozen=True)
class CellChange:
    """The change of one cell: power and tilt relative to its plan; ``limit`` says what held it back."""

    cell_id: str
    power_db: float
    tilt_deg: float
    limit: str = ""

    def to_dict(self) -> dict[str, Any]:
        """As an item of coverage_compensation_v1 ``cell_changes``."""
        return {"cell_id": self.cell_id, "tx_power_delta_db": self.power_db, "antenna_tilt_delta_deg": self.tilt_deg}

    def describe(self) -> str:
        return f"{self.cell_id} {self.power_db:+g} dB {self.tilt_deg:+g} deg"


@dataclass(frozen=True)
class Plan:
    """Per-cell changes for a compensation, and whether they are what was asked."""

    changes: tuple[CellChange, ...]
    as_asked: bool

    @property
    def effective(self) -> bool:
        """True when some cell raises its power or uptilts (the plan compensates at all)."""
        return any(c.power_db > _EPS or c.tilt_deg < -_EPS for c in self.changes)

    def limited(self) -> list[CellChange]:
        return [c for c in self.changes if c.limit]

    def summary(self) -> str:
        """The changes grouped by value, e.g. ``23 cells +3 dB -2 deg; CELL-0701 +1 dB -3 deg``."""
        groups: dict[tuple[float, float], list[str]] = {}
        for change in self.changes:
            groups.setdefault((change.power_db, change.tilt_deg), []).append(change.cell_id)
        parts = []
        for (power, tilt), cells in sorted(groups.items(), key=lambda item: (-len(item[1]), item[1][0])):
            who = cells[0] if len(cells) == 1 else f"{len(cells)} cells"
            parts.append(f"{who} {power:+g} dB {tilt:+g} deg")
        return "; ".join(parts)


def _steps(value: float) -> float:
    """``value`` rounded down to whole `POWER_STEP_DB` steps."""
    return math.floor(value / POWER_STEP_DB + _EPS) * POWER_STEP_DB


def plan(
    cells: Sequence[CellView],
    wanted: Mapping[str, tuple[float, float]],
    weights: Mapping[str, float] | None = None,
) -> Plan:
    """Per-cell changes within each cell's limits for the ``wanted`` (power dB, tilt deg) of each cell.

    ``weights``: each cell's contribution to the coverage gap (higher takes the others' power first).
    """
    weights = weights or {}
    by_id = {c.cell_id: c for c in cells}
    power: dict[str, float] = {}
    shortfall: dict[str, float] = {}
    limits: dict[str, list[str]] = {c: [] for c in by_id}
    for cell_id, cell in sorted(by_id.items()):
        want = wanted[cell_id][0]
        room = max(0.0, _steps(cell.max_power_dbm - cell.base_power_dbm))
        power[cell_id] = min(want, room)
        shortfall[cell_id] = max(0.0, want - power[cell_id])
        if shortfall[cell_id] > _EPS:
            limits[cell_id].append(f"power limit {cell.max_power_dbm:g} dBm ({room:g} dB headroom)")
    missing = sum(shortfall.values())
    while missing > _EPS:  # the others take it, in steps, each within its headroom
        takers = [
            c
            for c, cell in by_id.items()
            if cell.max_power_dbm - cell.base_power_dbm - power[c] >= POWER_STEP_DB - _EPS and wanted[c][0] > 0
        ]
        if not takers:
            break
        taker = min(
            takers,
            key=lambda c: (-weights.get(c, 0.0), -(by_id[c].max_power_dbm - by_id[c].base_power_dbm - power[c]), c),
        )
        power[taker] += POWER_STEP_DB
        missing -= POWER_STEP_DB
    missing = max(0.0, missing)
    total_short = sum(shortfall.values())
    changes = []
    for cell_id, cell in sorted(by_id.items()):
        up_room = cell.base_tilt_deg - cell.min_tilt_deg
        down_room = cell.max_tilt_deg - cell.base_tilt_deg
        tilt = wanted[cell_id][1]
        if shortfall[cell_id] > _EPS and missing > _EPS:  # its share of what nobody could take, as uptilt
            share = missing * shortfall[cell_id] / total_short
            tilt -= math.ceil(share / DB_PER_UPTILT_DEG - _EPS)
        if tilt < -up_room - _EPS or tilt > down_room + _EPS:
            limits[cell_id].append(f"tilt range {cell.min_tilt_deg:g}..{cell.max_tilt_deg:g} deg")
            tilt = max(-up_room, min(down_room, tilt))
        changes.append(CellChange(cell_id, power[cell_id], tilt, "; ".join(limits[cell_id])))
    as_asked = all((c.power_db, c.tilt_deg) == wanted[c.cell_id] for c in changes)
    return Plan(tuple(changes), as_asked)


def wanted_changes(values: Mapping[str, Any], neighbours: Sequence[str]) -> dict[str, tuple[float, float]]:
    """(power dB, tilt deg) each neighbour is asked for: its ``cell_changes`` item, else the uniform deltas."""
    power = float(values.get("tx_power_delta_db") or 0)
    tilt = float(values.get("antenna_tilt_delta_deg") or 0)
    out = {c: (power, tilt) for c in neighbours}
    for item in values.get("cell_changes") or []:
        if isinstance(item, Mapping) and item.get("cell_id") in out:
            out[str(item["cell_id"])] = (
                float(item.get("tx_power_delta_db", power)),
                float(item.get("antenna_tilt_delta_deg", tilt)),
            )
    return out
