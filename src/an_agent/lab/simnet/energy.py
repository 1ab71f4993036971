"""Energy in the simulated network: cells' energy-saving state and the power they draw.

Power draw: ``BASE_CELL_KW + KW_PER_TX_WATT`` per W of transmit power per cell in service, less the
saving share while energy saving is enabled (or reduced); an out-of-service cell still idles at
``BASE_CELL_KW`` unless its site lost power.
"""

from __future__ import annotations

from an_agent.lab.simnet.state import Cell, NetState, Site

BASE_CELL_KW = 0.8
KW_PER_TX_WATT = 0.03
ES_STATES = ("enabled", "suspended", "reduced")


class Energy:
    """Energy saving over a `NetState` (module docstring)."""

    def __init__(self, state: NetState) -> None:
        self._s = state

    def check(self, cell_id: str, state: str, saving_percent: float | None = None) -> None:
        """What `set_energy_saving` refuses (ValueError), without changing anything."""
        if state not in ES_STATES:
            raise ValueError(f"energy-saving state must be enabled, suspended or reduced, not {state!r}")
        if state == "reduced" and saving_percent is None:
            raise ValueError("a reduced energy saving needs its saving percentage")
        if not self._s.cell(cell_id).es_configured:
            raise ValueError(f"{cell_id} has no energy-saving function")

    def set_energy_saving(self, cell_id: str, state: str, by: str, saving_percent: float | None = None) -> None:
        """Enable, suspend or reduce (to ``saving_percent``) a cell's energy saving; ValueError when it cannot."""
        with self._s.lock:
            self.check(cell_id, state, saving_percent)
            cell = self._s.cell(cell_id)
            saving = {"enabled": cell.base_saving, "suspended": 0.0}.get(state, saving_percent or 0.0)
            if (cell.es_state, cell.saving) == (state, saving):
                return
            text = f"energy saving {cell.es_state} -> {state}" + (f" ({saving:g} %)" if state == "reduced" else "")
            cell.es_state, cell.saving = state, saving
            self._s.log(by, cell_id, "energy_saving", text)

    @staticmethod
    def cell_kw(cell: Cell, site: Site) -> float:
        """What ``cell`` draws now (module docstring)."""
        if not site.in_service:  # out of service but powered (no backhaul, hung software): the radio idles
            return 0.0 if site.fault == "site_power_failure" else BASE_CELL_KW
        if cell.locked:
            return BASE_CELL_KW
        factor = 1.0 - cell.saving / 100.0 if cell.es_state in ("enabled", "reduced") else 1.0
        return (BASE_CELL_KW + KW_PER_TX_WATT * 10 ** ((cell.power - 30.0) / 10.0)) * factor

    @staticmethod
    def saving_cost_kw(cell: Cell, site: Site) -> float:
        """How much more ``cell`` would draw with its energy saving suspended (0 when nothing is saved now)."""
        if not site.in_service or cell.es_state not in ("enabled", "reduced") or cell.saving <= 0:
            return 0.0
        full = BASE_CELL_KW + KW_PER_TX_WATT * 10 ** ((cell.power - 30.0) / 10.0)
        return full * cell.saving / 100.0

    @staticmethod
    def adjusted(cell: Cell) -> bool:
        """True when the cell's energy saving is not as planned (suspended or reduced)."""
        return cell.es_configured and cell.es_state != "enabled"

    @staticmethod
    def residual(cell: Cell) -> str | None:
        """What is left changed in the cell's energy saving, or None when it is as planned."""
        expected = "enabled" if cell.es_configured else "disabled"
        if cell.es_state != expected or cell.saving != cell.base_saving:
            return f"{cell.cell_id}: energy saving {cell.es_state} (planned {expected})"
        return None
