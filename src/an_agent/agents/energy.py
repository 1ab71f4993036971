"""Energy-saving agent: suspends, reduces and resumes energy saving on cells (energy_saving_adjust_v1).

``suspend`` and ``reduce`` last ``duration_minutes`` (then saving resumes by itself) unless a ``resume``
comes first. A cell suspended by two requests resumes when the last of them ends. FEASIBILITY refuses
cells outside the agent's regions and cells without an energy-saving function, with a counter-proposal
for the cells that have one.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

from an_agent.agents import payloads
from an_agent.agents.base import LabBehaviour, NotFeasible, TaskFailure, short, stamp
from an_agent.agents.environment import RoleName, Timer
from an_agent.model import Task
from an_agent.runtime.behaviour import TaskRun
from an_agent.schemas.validate import ValidatedPayload


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

    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
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
        if payload.values["action"] == "reduce" and payload.values.get("energy_saving_target_percent") is None:
            raise NotFeasible("reduce needs energy_saving_target_percent (the new saving target)")
        return f"energy saving can be {payload.values['action']}d on {len(cells)} cells"

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
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
        state = "suspended" if action == "suspend" else "reduced"
        percent = payload.values.get("energy_saving_target_percent")
        for cell_id in cells:
            self.env.network.set_energy_saving(cell_id, state, self.name, None if percent is None else float(percent))
        until = scheduler.now() + minutes * 60.0
        adjustment.timer = scheduler.call_at(
            until, f"{self.name} end of {task.task_id}", functools.partial(self._expire, task.task_id)
        )
        with self._state:
            self._active[task.task_id] = adjustment
        self.note(
            f"energy_saving_{state}",
            f"energy saving {state} on {len(cells)} cells for up to {minutes} min",
            cells=cells,
        )
        self.finish(
            run,
            f"energy saving {state} on {len(cells)} cells",
            {"adjustment_id": task.task_id, "cell_ids": cells, "state": state, "until": stamp(until)},
        )

    def _expire(self, adjustment_id: str) -> None:
        with self._state:
            adjustment = self._active.get(adjustment_id)
            cells = sorted(adjustment.cells) if adjustment else []
            if adjustment is not None:
                adjustment.cells = set()
        resumed = self._settle(cells)
        if resumed:
            self.note(
                "energy_saving_resumed",
                f"energy saving resumed on {len(resumed)} cells ({adjustment_id} ended)",
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
