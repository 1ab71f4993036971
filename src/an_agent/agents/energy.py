"""Energy-saving agent: suspends, reduces and resumes energy saving on cells (energy_saving_adjust_v1).

``suspend`` and ``reduce`` last ``duration_minutes`` (then saving resumes by itself) unless a ``resume``
comes first. A cell suspended by two requests resumes when the last of them ends. FEASIBILITY refuses
cells outside the agent's regions and cells without an energy-saving function, with a counter-proposal
for the cells that have one.

Under a service intent (`an_agent.agents.mandate`) the agent takes the ``energy_saving`` share: an
``energy_kwh_per_day`` target for an area. A suspension (or reduction) that would take the area's draw
above the target's rate (target / 24 h) is not feasible; the counter-proposal chooses per cell between
suspend, reduce and keep, from the cell's load and the coverage need (`choose`): the busiest cells first,
each suspended when that fits the target, else its saving reduced to `REDUCED_SHARE` of its plan (a
partial carrier shutdown: more power for the compensation at a part of the cost) when that fits, else
kept; the reduced cells are named in ``reduce_cell_ids`` with their ``energy_saving_target_percent``.
``relax`` (``intent_task_v1``, from the intent agent: the target loosened to keep a higher-priority
expectation) is feasible when the new value leaves room to suspend saving on the cells it names, else the
counter-proposal states the value that would; once assigned, saving is suspended on those cells until
``until``. ``restore`` puts the intent's own target back and resumes saving on the cells the relaxation
suspended (those another adjustment still holds stay suspended).
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass, replace

from an_agent.agents import payloads
from an_agent.agents.base import short, stamp
from an_agent.agents.environment import RoleName, Timer
from an_agent.agents.intent import Target
from an_agent.agents.mandate import INTENT_TASK, Mandate, Mandates, read_mandate
from an_agent.agents.sdk import LabBehaviour, NotFeasible, TaskFailure, TaskRun
from an_agent.errors import SchemaError
from an_agent.model import Task
from an_agent.schemas.validate import ValidatedPayload

REDUCED_SHARE = 0.5
"""A reduced saving keeps this share of the cell's planned saving (half its carriers stay switched off)."""


@dataclass
class _Adjustment:
    adjustment_id: str
    cells: set[str]
    timer: Timer | None = None


class EnergySavingBehaviour(LabBehaviour):
    role = RoleName.ENERGY_SAVING
    description = "Energy-saving agent: suspends, reduces and resumes cell energy saving"

    def start(self) -> None:
        self._active: dict[str, _Adjustment] = {}
        self._state = threading.Lock()
        self.mandates = Mandates(self, "energy_saving")
        self._relaxed: dict[str, tuple[Mandate, str]] = {}
        """intent id -> (its own mandate, the adjustment that suspended saving for the relaxation)"""

    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        if payload is not None and payload.schema_id == INTENT_TASK:
            return self._intent_feasibility(payload, requester)
        if payload is None or payload.schema_id != "energy_saving_adjust_v1":
            raise NotFeasible(f"{self.name} takes energy_saving_adjust_v1 tasks")
        cells = list(payload.values["cell_ids"])
        network = self.env.network
        unknown, foreign, without = [], [], []
        for cell_id in cells:
            try:
                cell = network.cell(cell_id)
            except ValueError:
                unknown.append(cell_id)
                continue
            if not self.env.in_scope(cell.region):
                foreign.append(cell_id)
            elif cell.energy_saving == "disabled":
                without.append(cell_id)
        if unknown or foreign:
            raise NotFeasible(f"cells {short(unknown + foreign)} are unknown or not managed by {self.name}")
        if without:
            capable = [c for c in cells if c not in without]
            counter = None
            if capable:
                counter = payloads.envelope("energy_saving_adjust_v1", {**payload.values, "cell_ids": capable})
            raise NotFeasible(f"{short(without)} have no energy-saving function", counter)
        reducing = payload.values["action"] == "reduce" or bool(payload.values.get("reduce_cell_ids"))
        if reducing and payload.values.get("energy_saving_target_percent") is None:
            raise NotFeasible("reduce needs energy_saving_target_percent (the new saving target)")
        if not set(payload.values.get("reduce_cell_ids") or []) <= set(cells):
            raise NotFeasible("reduce_cell_ids names cells that are not in cell_ids")
        if payload.values["action"] in ("suspend", "reduce"):
            self._within_budget(payload)
        done = {"suspend": "suspended", "reduce": "reduced", "resume": "resumed"}[payload.values["action"]]
        reduced = len(payload.values.get("reduce_cell_ids") or []) if payload.values["action"] == "suspend" else 0
        if reduced:
            return f"energy saving can be suspended on {len(cells) - reduced} cells and reduced on {reduced}"
        return f"energy saving can be {done} on {len(cells)} cells"

    # ---- under a service intent -----------------------------------------------------------------------
    def _budget(self) -> tuple[Mandate, Target] | None:
        return self.mandates.target("energy_kwh_per_day", self.env.scheduler.now())

    def _within_budget(self, payload: ValidatedPayload) -> None:
        """`NotFeasible` (counter-proposal: the cells that fit) when the change breaks the intent's energy target."""
        held = self._budget()
        if held is None:
            return
        mandate, target = held
        network = self.env.network
        cells = [c for c in payload.values["cell_ids"] if network.cell(c).region == mandate.area]
        room = target.value / 24.0 - network.area_kpis([mandate.area]).energy_kw
        asked = self._percents(payload)
        if sum(self._cost(c, asked[c]) for c in cells) <= room + 1e-9:
            return
        suspend, reduce, percent = self.choose(cells, room, payload.values["action"] == "suspend")
        kept = len(cells) - len(suspend) - len(reduce)
        total = network.area_kpis([mandate.area]).energy_kw + sum(self._cost(c, asked[c]) for c in cells)
        reason = (
            f"saving {payload.values['action']}ed on {len(cells)} cells would take {mandate.area} to "
            f"{total * 24:.0f} kWh/day, above the {target.value:g} kWh/day target of {mandate.intent_id} "
            f"({', '.join(mandate.expectation_ids)}); {len(suspend) + len(reduce)} cells fit"
            + (
                f": {len(suspend)} suspended, {len(reduce)} reduced to {percent:g} %, {kept} kept saving"
                if reduce
                else ""
            )
        )
        counter = None
        if suspend or reduce:
            others = [c for c in payload.values["cell_ids"] if c not in cells]
            values = {**payload.values, "cell_ids": sorted(suspend + reduce + others)}
            if reduce and payload.values["action"] == "suspend":
                values.update({"reduce_cell_ids": sorted(reduce), "energy_saving_target_percent": percent})
            counter = payloads.envelope("energy_saving_adjust_v1", values)
        raise NotFeasible(reason, counter)

    def choose(self, cells: list[str], room_kw: float, may_suspend: bool) -> tuple[list[str], list[str], float]:
        """Per cell, busiest first: suspend when it fits ``room_kw``, else reduce when that fits, else keep.

        Returns the cells to suspend, those to reduce and the reduced saving percentage (`REDUCED_SHARE`
        of the least planned saving among the cells, so that no cell saves more than it plans to).
        """
        network = self.env.network
        views = {c: network.cell(c) for c in cells}
        percent = round(min((v.saving_percent for v in views.values()), default=0.0) * REDUCED_SHARE, 1)
        suspend: list[str] = []
        reduce: list[str] = []
        used = 0.0
        for cell_id in sorted(cells, key=lambda c: (-views[c].users, c)):
            full = self._cost(cell_id, 0.0)
            partial = self._cost(cell_id, percent)
            if may_suspend and used + full <= room_kw + 1e-9:
                suspend.append(cell_id)
                used += full
            elif percent > 0 and used + partial <= room_kw + 1e-9:
                reduce.append(cell_id)
                used += partial
        return suspend, reduce, percent

    def _cost(self, cell_id: str, percent: float) -> float:
        """How much more the cell draws with its saving at ``percent`` (0: suspended) than now."""
        cell = self.env.network.cell(cell_id)
        share = max(0.0, cell.saving_percent - percent) / max(cell.saving_percent, 1e-9)
        return self.env.network.saving_cost_kw([cell_id]) * share

    @staticmethod
    def _percents(payload: ValidatedPayload) -> dict[str, float]:
        """The saving percentage each cell of the request is asked to go to (0: suspended)."""
        values = payload.values
        percent = float(values.get("energy_saving_target_percent") or 0)
        reduced = set(values.get("reduce_cell_ids") or []) if values["action"] == "suspend" else set(values["cell_ids"])
        return {c: percent if c in reduced else 0.0 for c in values["cell_ids"]}

    def _intent_feasibility(self, payload: ValidatedPayload, requester: str | None) -> str:
        action = payload.values["action"]
        if action == "assure":
            mandate = self.mandates.feasibility(payload, requester)
            return f"{self.name} saves energy in {mandate.area} for {mandate.intent_id}"
        try:
            wanted = read_mandate(payload, requester)
        except SchemaError as exc:
            raise NotFeasible(f"{exc}: {'; '.join(exc.problems)}") from None
        held = self.mandates.get(wanted.intent_id)
        if held is None:
            raise NotFeasible(f"{self.name} holds no share of intent {wanted.intent_id}")
        if action == "restore":
            if wanted.intent_id not in self._relaxed:
                raise NotFeasible(f"the energy target of {wanted.intent_id} is not relaxed")
            return f"the energy target of {wanted.intent_id} can be restored"
        cells = list(payload.values.get("cell_ids") or [])
        target = next((t for t in wanted.targets if t.name == "energy_kwh_per_day"), None)
        if target is None or not cells:
            raise NotFeasible("a relaxation names the cells and the new energy_kwh_per_day target")
        network = self.env.network
        now_kw = network.area_kpis([wanted.area]).energy_kw
        needed = math.ceil((now_kw + network.saving_cost_kw(cells)) * 24.0 / 10.0) * 10.0
        if target.value + 1e-9 < needed:
            counter = dict(payload.values)
            counter["targets"] = [
                {**t.to_dict(), "value": needed} if t is target else t.to_dict() for t in wanted.targets
            ]
            counter["other"] = f"suspending saving on {len(cells)} cells takes {wanted.area} to {needed:g} kWh/day"
            raise NotFeasible(
                f"{target.value:g} kWh/day leaves no room to suspend saving on {len(cells)} cells in {wanted.area}: "
                f"{needed:g} kWh/day needed",
                payloads.envelope(INTENT_TASK, counter),
            )
        return f"{target.value:g} kWh/day leaves room to suspend saving on {len(cells)} cells"

    def _intent_task(self, task: Task, payload: ValidatedPayload, run: TaskRun) -> None:
        self._intent_feasibility(payload, task.send_from)  # the network may have changed since
        action = payload.values["action"]
        mandate = read_mandate(payload, task.send_from)
        if action == "assure":
            self.mandates.accept(task, mandate, run)
            return
        self.env.scheduler.sleep(self.env.timing.energy_saving_adjust)
        if action == "relax":
            self._relax(task, mandate, payload, run)
        else:
            self._restore(task, mandate, run)

    def _relax(self, task: Task, mandate: Mandate, payload: ValidatedPayload, run: TaskRun) -> None:
        """Hold the relaxed targets and suspend saving on the relaxation's cells until its ``until``."""
        scheduler = self.env.scheduler
        own = self.mandates.get(mandate.intent_id)
        assert own is not None  # checked by _intent_feasibility
        before = self._relaxed.get(mandate.intent_id)
        original = before[0] if before else own
        self.mandates.replace(replace(own, targets=mandate.targets, until=original.until))
        cells = sorted(c for c in payload.values["cell_ids"] if self.env.network.cell(c).energy_saving != "suspended")
        for cell_id in cells:
            self.env.network.set_energy_saving(cell_id, "suspended", self.name)
        until = mandate.until if mandate.until is not None else scheduler.now() + 60 * 60.0
        adjustment = _Adjustment(task.task_id, set(cells))
        adjustment.timer = scheduler.call_at(
            until, f"{self.name} end of {task.task_id}", functools.partial(self._expire, task.task_id)
        )
        with self._state:
            self._active[task.task_id] = adjustment
        self._relaxed[mandate.intent_id] = (original, task.task_id)
        if cells:
            self.note(
                "energy_saving_suspended",
                f"energy saving suspended on {len(cells)} cells for intent {mandate.intent_id}",
                cells=cells,
            )
        self.mandates.record(task, mandate, run, "intent_relaxed", "relaxes")

    def _restore(self, task: Task, mandate: Mandate, run: TaskRun) -> None:
        """The intent's own targets back; saving resumed on the cells only the relaxation held."""
        original, adjustment_id = self._relaxed.pop(mandate.intent_id)
        self.mandates.replace(original)
        self._end(adjustment_id, f"the target of {mandate.intent_id} restored")
        self.mandates.record(task, original, run, "intent_restored", "restores")

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        if payload is not None and payload.schema_id == INTENT_TASK:
            self._intent_task(task, payload, run)
            return
        if payload is None or payload.schema_id != "energy_saving_adjust_v1":
            raise TaskFailure("the task carries no energy_saving_adjust_v1 payload")
        self.feasibility("", payload, task.send_from)
        action = str(payload.values["action"])
        cells = sorted(payload.values["cell_ids"])
        scheduler = self.env.scheduler
        scheduler.sleep(self.env.timing.energy_saving_adjust)
        if action == "resume":
            with self._state:
                for adjustment in list(self._active.values()):
                    adjustment.cells -= set(cells)
            resumed = self._settle(cells)
            self.note("energy_saving_resumed", f"energy saving resumed on {len(resumed)} cells", cells=resumed)
            self.finish(run, f"energy saving resumed on {len(resumed)} cells", {"resumed_cell_ids": resumed})
            return
        minutes = int(payload.values.get("duration_minutes", 60))
        adjustment = _Adjustment(task.task_id, set(cells))
        percents = self._percents(payload)
        states: dict[str, list[str]] = {}
        for cell_id in cells:
            state = "suspended" if percents[cell_id] <= 0 and action == "suspend" else "reduced"
            states.setdefault(state, []).append(cell_id)
            percent = None if state == "suspended" else percents[cell_id]
            self.env.network.set_energy_saving(cell_id, state, self.name, percent)
        until = scheduler.now() + minutes * 60.0
        adjustment.timer = scheduler.call_at(
            until, f"{self.name} end of {task.task_id}", functools.partial(self._expire, task.task_id)
        )
        with self._state:
            self._active[task.task_id] = adjustment
        done = []
        for state, which in sorted(states.items(), key=lambda item: item[0] != "suspended"):
            to = f" to {percents[which[0]]:g} %" if state == "reduced" else ""
            done.append(f"{state} on {len(which)} cells{to}")
            self.note(
                f"energy_saving_{state}",
                f"energy saving {state}{to} on {len(which)} cells for up to {minutes} min",
                cells=which,
            )
        self.finish(
            run,
            "energy saving " + ", ".join(done),
            {
                "adjustment_id": task.task_id,
                "cell_ids": cells,
                "suspended_cell_ids": states.get("suspended", []),
                "reduced_cell_ids": states.get("reduced", []),
                "until": stamp(until),
            },
        )

    def _expire(self, adjustment_id: str) -> None:
        self._end(adjustment_id, f"{adjustment_id} ended")

    def _end(self, adjustment_id: str, why: str) -> None:
        """End an adjustment: saving resumes on its cells that no other adjustment holds."""
        with self._state:
            adjustment = self._active.get(adjustment_id)
            cells = sorted(adjustment.cells) if adjustment else []
            if adjustment is not None:
                adjustment.cells = set()
        resumed = self._settle(cells)
        if resumed:
            self.note(
                "energy_saving_resumed",
                f"energy saving resumed on {len(resumed)} cells ({why})",
                cells=resumed,
            )

    def _settle(self, cells: list[str]) -> list[str]:
        """Resume saving on the cells no active adjustment still holds; drop empty adjustments."""
        with self._state:
            for key, adjustment in list(self._active.items()):
                if not adjustment.cells:
                    if adjustment.timer is not None:
                        adjustment.timer.cancel()
                    del self._active[key]
            held = {c for a in self._active.values() for c in a.cells}
        resumed = []
        for cell_id in cells:
            if cell_id not in held and self.env.network.cell(cell_id).energy_saving != "enabled":
                self.env.network.set_energy_saving(cell_id, "enabled", self.name)
                resumed.append(cell_id)
        return resumed
