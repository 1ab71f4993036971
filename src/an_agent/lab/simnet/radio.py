"""The radio part of the simulated network: sites and cells, coverage, RAN actions and diagnostics.

- a site is in service when it has no fault of its own and its backhaul is up (`Transport.backhaul_up`);
- the users of an out-of-service site lose coverage, except the share its in-service neighbour cells
  recover: on average ``POWER_GAIN_PER_DB`` per dB of extra power and ``TILT_GAIN_PER_DEG`` per degree
  of uptilt (scaled down when fewer than ``FULL_NEIGHBOURHOOD`` neighbour cells are in service), up to
  ``RECOVERY_CAP``;
- a neighbour cell still in energy saving transmits ``ES_POWER_PENALTY_DB`` below its setting at its
  planned saving (proportionally less at a reduced saving, nothing when suspended), which is why the
  optimization agent asks the energy-saving agent to suspend saving before compensating;
- a misconfigured cell (wrong tilt, no alarm) leaves ``coverage_loss`` of its users without coverage;
- an administratively locked cell serves none of its users and recovers nobody else's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from an_agent.agents.environment import CellView, RadioDiagnostics, SiteView
from an_agent.lab.simnet.state import Cell, NetState, Pending, Site

RECOVERY_CAP = 0.85
POWER_GAIN_PER_DB = 0.10
TILT_GAIN_PER_DEG = 0.06
FULL_NEIGHBOURHOOD = 6
"""Neighbour cells needed for the full effect; fewer recover proportionally less."""
ES_POWER_PENALTY_DB = 3.0
SITE_FAULTS = {"site_power_failure": "mains_power_lost", "site_software_fault": "software_hang"}
"""Fault type -> the cause a radio diagnosis finds."""


def es_penalty_db(cell: Cell) -> float:
    """How much below its power setting a cell in energy saving transmits (module docstring)."""
    if cell.es_state not in ("enabled", "reduced") or cell.base_saving <= 0:
        return 0.0
    return ES_POWER_PENALTY_DB * min(1.0, cell.saving / cell.base_saving)


class Radio:
    """Sites and cells over a `NetState` (module docstring)."""

    def __init__(self, state: NetState) -> None:
        self._s = state

    # ---- views -------------------------------------------------------------------------------------------
    def site(self, site_id: str) -> SiteView:
        with self._s.lock:
            site = self._s.site(site_id)
            users = sum(self._s.cells[c].users for c in site.cell_ids)
            return SiteView(site.site_id, site.region, site.in_service, site.cell_ids, site.backhaul, users)

    def sites(self, regions: Sequence[str] | None = None) -> list[SiteView]:
        sites = self._s.sites
        return [self.site(s) for s in sorted(sites) if regions is None or sites[s].region in regions]

    def cell(self, cell_id: str) -> CellView:
        with self._s.lock:
            cell = self._s.cell(cell_id)
            site = self._s.sites[cell.site_id]
            return CellView(
                cell_id=cell.cell_id,
                site_id=cell.site_id,
                region=site.region,
                in_service=site.in_service,
                users=cell.users,
                power_dbm=cell.power,
                base_power_dbm=cell.base_power,
                max_power_dbm=cell.max_power,
                tilt_deg=cell.tilt,
                base_tilt_deg=cell.base_tilt,
                min_tilt_deg=cell.min_tilt,
                max_tilt_deg=cell.max_tilt,
                energy_saving=cell.es_state,
                saving_percent=cell.saving,
                locked=cell.locked,
            )

    def neighbour_cells(self, cell_ids: Sequence[str]) -> list[str]:
        """The in-service cells of the sites next to those of ``cell_ids`` (not their own sites)."""
        with self._s.lock:
            own_sites = {self._s.cell(c).site_id for c in cell_ids}
            out: set[str] = set()
            for site_id in own_sites:
                for neighbour in self._s.sites[site_id].neighbours:
                    site = self._s.sites[neighbour]
                    if neighbour not in own_sites and site.in_service:
                        out.update(site.cell_ids)
            return sorted(out)

    def diagnostics(self, site_id: str) -> RadioDiagnostics:
        with self._s.lock:
            site = self._s.site(site_id)
            cells = self._s.cells
            misconfigured = {
                c: {"tilt_deg": round(cells[c].tilt - cells[c].base_tilt, 1)}
                for c in site.cell_ids
                if cells[c].coverage_loss > 0
            }
            if site.fault is not None:
                return RadioDiagnostics(site_id, False, SITE_FAULTS[site.fault], misconfigured)
            if not site.in_service:
                return RadioDiagnostics(site_id, False, "unreachable", misconfigured)
            return RadioDiagnostics(site_id, True, "misconfigured" if misconfigured else "healthy", misconfigured)

    # ---- actions (the caller of those taking `pending` holds the lock) -------------------------------------
    def check_cell_radio(self, cell_id: str, power_dbm: float, tilt_deg: float, by: str) -> None:
        """Refuse (ValueError, recorded as a limit refusal) a power or tilt beyond the cell's limits."""
        with self._s.lock:
            cell = self._s.cell(cell_id)
            problem = None
            if power_dbm > cell.max_power + 1e-9:
                problem = f"{cell_id}: {power_dbm:g} dBm is above the cell's limit of {cell.max_power:g} dBm"
            elif not cell.min_tilt - 1e-9 <= tilt_deg <= cell.max_tilt + 1e-9:
                problem = f"{cell_id}: tilt {tilt_deg:g} deg is outside {cell.min_tilt:g}..{cell.max_tilt:g} deg"
            if problem is not None:
                self._s.limit_refusals.append(f"{by}: {problem}")
                raise ValueError(problem)

    def set_cell_radio(self, cell_id: str, power_dbm: float, tilt_deg: float, by: str) -> None:
        with self._s.lock:
            self.check_cell_radio(cell_id, power_dbm, tilt_deg, by)
            cell = self._s.cell(cell_id)
            if (cell.power, cell.tilt) == (power_dbm, tilt_deg):
                return
            text = f"power {cell.power:g} -> {power_dbm:g} dBm, tilt {cell.tilt:g} -> {tilt_deg:g} deg"
            cell.power, cell.tilt = power_dbm, tilt_deg
            self._s.log(by, cell_id, "radio", text)

    def set_cell_locked(self, cell_id: str, locked: bool, by: str) -> None:
        """Lock (serve nobody) or unlock a cell."""
        with self._s.lock:
            cell = self._s.cell(cell_id)
            if cell.locked == locked:
                return
            cell.locked = locked
            self._s.log(by, cell_id, "admin_state", "locked" if locked else "unlocked")

    def reset_site(self, site_id: str, by: str) -> bool:
        """Remote restart: clears a software hang (True), nothing else. Caller holds the lock."""
        site = self._s.site(site_id)
        self._s.log(by, site_id, "reset", "remote restart of the base station")
        if site.fault != "site_software_fault":
            return False
        site.fault = None
        self._s.repaired(site_id, by, "remote")
        return True

    def restore_cell_config(self, cell_id: str, by: str) -> bool:
        """Back to the planned configuration: clears a misconfiguration (True). Caller holds the lock."""
        cell = self._s.cell(cell_id)
        text = f"planned configuration restored (tilt {cell.tilt:g} -> {cell.base_tilt:g} deg)"
        self._s.log(by, cell_id, "reconfigure", text)
        if cell.coverage_loss <= 0:
            return False
        cell.tilt = cell.base_tilt
        cell.coverage_loss = 0.0
        self._s.repaired(cell_id, by, "remote")
        return True

    def misconfigure(self, cell_id: str, tilt_deg: float | None, coverage_loss: float) -> None:
        """A silent misconfiguration: a wrong tilt (default planned + 8 deg), ``coverage_loss`` of users lost."""
        cell = self._s.cell(cell_id)
        cell.tilt = tilt_deg if tilt_deg is not None else cell.base_tilt + 8
        cell.coverage_loss = coverage_loss

    def refresh(self, pending: Pending, backhaul_up: Callable[[Sequence[str]], bool]) -> None:
        """Recompute which sites are in service; raise and clear ``site_out_of_service`` accordingly."""
        for site in sorted(self._s.sites.values(), key=lambda item: item.site_id):
            up = site.fault is None and backhaul_up(site.backhaul)
            key = (site.site_id, "site_out_of_service")
            if not up and key not in self._s.alarms:
                self._s.raise_alarm(
                    pending,
                    "wireless",
                    site.site_id,
                    "site_out_of_service",
                    "critical",
                    site.region,
                    f"{site.site_id} out of service: base station disconnected, {len(site.cell_ids)} cells down",
                )
            elif up and key in self._s.alarms:
                self._s.clear_alarm(pending, key)
            site.in_service = up

    # ---- coverage -----------------------------------------------------------------------------------------
    def recovery(self, site: Site) -> float:
        """The share of an out-of-service site's users its neighbour cells cover (module docstring)."""
        gains: list[float] = []
        for neighbour in site.neighbours:
            other = self._s.sites[neighbour]
            if not other.in_service:
                continue
            for cell_id in other.cell_ids:
                cell = self._s.cells[cell_id]
                if cell.locked:
                    continue
                penalty = es_penalty_db(cell)
                extra_db = max(0.0, cell.power - cell.base_power - penalty)
                uptilt = max(0.0, cell.base_tilt - cell.tilt) if cell.coverage_loss == 0 else 0.0
                gains.append(POWER_GAIN_PER_DB * extra_db + TILT_GAIN_PER_DEG * uptilt)
        if not gains:
            return 0.0
        scale = min(1.0, len(gains) / FULL_NEIGHBOURHOOD)
        return min(RECOVERY_CAP, sum(gains) / len(gains) * scale)

    def users_without_coverage(self, regions: Sequence[str] | None = None) -> float:
        """Users lost to misconfigurations, plus those of out-of-service sites not recovered by neighbours.

        With ``regions``: only the users of those regions' sites.
        """
        sites = {k: s for k, s in self._s.sites.items() if regions is None or s.region in regions}
        without = sum(
            c.users * (1.0 if c.locked else c.coverage_loss)
            for c in self._s.cells.values()
            if c.site_id in sites and sites[c.site_id].in_service
        )
        for site in sites.values():
            if not site.in_service:
                users = sum(self._s.cells[c].users for c in site.cell_ids)
                without += users * (1.0 - self.recovery(site))
        return without

    @staticmethod
    def residual(cell: Cell) -> str | None:
        """How the cell's power, tilt and admin state differ from the plan, or None when they do not."""
        if cell.locked:
            return f"{cell.cell_id}: administratively locked"
        if cell.power == cell.base_power and cell.tilt == cell.base_tilt:
            return None
        return (
            f"{cell.cell_id}: power {cell.power:g} dBm (planned {cell.base_power:g}), "
            f"tilt {cell.tilt:g} deg (planned {cell.base_tilt:g})"
        )

    @staticmethod
    def compensating(cell: Cell) -> bool:
        """True when the cell is off its planned power or tilt other than by a misconfiguration."""
        return (cell.power, cell.tilt) != (cell.base_power, cell.base_tilt) and cell.coverage_loss == 0
