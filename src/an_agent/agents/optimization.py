"""Experience-optimization agent: coverage compensation with neighbour cells, and its cancellation.

``Compensate`` (coverage_compensation_v1): the neighbour cells (given, or the in-service cells of the
sites next to the target cells) raise their power by ``tx_power_delta_db`` and change their tilt by
``antenna_tilt_delta_deg`` (or per cell, ``cell_changes``). FEASIBILITY checks each cell's own limits
(`an_agent.agents.compensation_plan`): when a cell cannot take what it is asked, the counter-proposal
names per cell what can be done: each within its own power and tilt limits, the power a limited cell
cannot take taken by the others with headroom (those bordering most of the outage first), the rest
made up with uptilt on the limited cell. Before changing the cells it asks the energy-saving agent to
suspend saving on them (an energy-saving cell would undo part of the increase); the compensation ends
when cancelled or after ``duration_minutes``, whichever comes first.

The suspension lasts exactly as long as the compensation it protects: the compensation starts only
after ``timing.compensation_apply`` (and its ``duration_minutes`` count from then), so the suspension
is asked for the compensation's duration plus that delay plus `SUSPENSION_MARGIN_MINUTES`, and is
extended when the energy-saving agent's answer (its ``until``) still ends before the compensation's
expiry. Its own end is thus only a safety net; saving resumes when the compensation ends, by the
explicit ``resume`` sent after the cancellation or expiry.

A counter-proposal of the energy-saving agent for some of the cells (an intent's energy target leaves
room for no more) is accepted: saving is suspended on those only, and the service-intent agent, which
watches the coverage, negotiates the rest (`an_agent.agents.service_intent`). Under a service intent the
agent takes the ``performance_optimization`` share (``intent_task_v1`` ``assure``).

``Cancel`` (coverage_compensation_v1 naming the target cells, the compensation id in ``other``, which
has no key for it): the planned power and tilt come back and energy saving is resumed on the cells no
other compensation still needs.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass, field
from typing import Any

from an_agent.agents import compensation_plan, payloads
from an_agent.agents.base import short, stamp
from an_agent.agents.environment import RoleName, Timer
from an_agent.agents.mandate import INTENT_TASK, Mandates
from an_agent.agents.sdk import LabBehaviour, NotFeasible, TaskFailure, TaskRun, verb_of
from an_agent.clock import from_rfc3339
from an_agent.model import Task
from an_agent.schemas.validate import ValidatedPayload

SUSPENSION_MARGIN_MINUTES = 1
"""How long after the compensation's expiry the suspension would end by itself (the resume comes first)."""
MAX_ADJUST_MINUTES = 10080
"""The longest ``duration_minutes`` energy_saving_adjust_v1 accepts (its template's range)."""


@dataclass
class _Compensation:
    compensation_id: str
    targets: list[str]
    neighbours: list[str]
    changes: dict[str, compensation_plan.CellChange]
    es_cells: list[str] = field(default_factory=list)
    timer: Timer | None = None


class OptimizationBehaviour(LabBehaviour):
    role = RoleName.OPTIMIZATION
    description = "Experience-optimization agent: coverage compensation with neighbour cells' power and tilt"

    def start(self) -> None:
        self.mandates = Mandates(self, "performance_optimization")
        self._active: dict[str, _Compensation] = {}
        self._state = threading.Lock()

    # ---- feasibility ----------------------------------------------------------------------------------
    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        if payload is not None and payload.schema_id == INTENT_TASK:
            mandate = self.mandates.feasibility(payload, requester)
            return f"{self.name} keeps the coverage of {mandate.area} for {mandate.intent_id}"
        if payload is None or payload.schema_id != "coverage_compensation_v1":
            raise NotFeasible(f"{self.name} takes coverage_compensation_v1 tasks")
        targets = list(payload.values["target_cell_ids"])
        if description.lower().startswith("cancel"):
            if not self._matching(payload):
                raise NotFeasible(f"no active compensation for {short(targets)}")
            return "the compensation is active and can be cancelled"
        neighbours = self._neighbours(payload)
        if not neighbours:
            raise NotFeasible(f"no neighbour cell in service around {short(targets)}")
        planned = self._plan(payload, neighbours)
        if planned.as_asked:
            return f"{len(neighbours)} neighbour cells can take {planned.summary()}"
        network = self.env.network
        headroom = {c: network.cell(c).max_power_dbm - network.cell(c).base_power_dbm for c in neighbours}
        limited = sorted(planned.limited(), key=lambda c: (headroom[c.cell_id], c.cell_id))  # the tightest first
        reason = "; ".join(f"{c.cell_id} is held by its {c.limit}" for c in limited[:3]) + (
            f" and {len(limited) - 3} more cells by theirs" if len(limited) > 3 else ""
        )
        if not planned.effective:
            raise NotFeasible(reason + "; no compensation is possible")
        counter = dict(payload.values)
        counter.update({"neighbor_cell_ids": neighbours, "cell_changes": [c.to_dict() for c in planned.changes]})
        counter["other"] = f"per cell within its limits: {planned.summary()}"
        raise NotFeasible(
            f"not every neighbour cell can take {counter.get('tx_power_delta_db', 0):+g} dB and "
            f"{counter.get('antenna_tilt_delta_deg', 0):+g} deg: {reason}",
            payloads.envelope("coverage_compensation_v1", counter),
        )

    def _plan(self, payload: ValidatedPayload, neighbours: list[str]) -> compensation_plan.Plan:
        """What each neighbour can do within its own limits; the cells bordering most of the outage first."""
        network = self.env.network
        targets = list(payload.values["target_cell_ids"])
        down_sites = sorted({network.cell(c).site_id for c in targets})
        weights: dict[str, float] = {}
        for site in down_sites:
            for cell_id in network.neighbour_cells(list(network.site(site).cell_ids)):
                weights[cell_id] = weights.get(cell_id, 0.0) + 1.0
        wanted = compensation_plan.wanted_changes(payload.values, neighbours)
        return compensation_plan.plan([network.cell(c) for c in neighbours], wanted, weights)

    def _neighbours(self, payload: ValidatedPayload) -> list[str]:
        network = self.env.network
        given = payload.values.get("neighbor_cell_ids")
        candidates = list(given) if given else network.neighbour_cells(list(payload.values["target_cell_ids"]))
        return sorted(c for c in candidates if network.cell(c).in_service and self.env.in_scope(network.cell(c).region))

    def _matching(self, payload: ValidatedPayload) -> list[_Compensation]:
        text = payloads.other_text(payload)
        targets = set(payload.values["target_cell_ids"])
        with self._state:
            named = [c for cid, c in sorted(self._active.items()) if cid.lower() in text]
            return named or [c for _, c in sorted(self._active.items()) if targets & set(c.targets)]

    # ---- tasks ----------------------------------------------------------------------------------------
    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        if payload is not None and payload.schema_id == INTENT_TASK:
            self.mandates.accept(task, self.mandates.feasibility(payload, task.send_from), run)
            return
        if payload is None or payload.schema_id != "coverage_compensation_v1":
            raise TaskFailure("the task carries no coverage_compensation_v1 payload")
        if verb_of(task) == "cancel":
            self._cancel(payload, run)
        else:
            self.feasibility("compensate", payload, task.send_from)  # the network may have changed since
            self._compensate(task, payload, run)

    def _compensate(self, task: Task, payload: ValidatedPayload, run: TaskRun) -> None:
        network = self.env.network
        scheduler = self.env.scheduler
        targets = list(payload.values["target_cell_ids"])
        neighbours = self._neighbours(payload)
        planned = self._plan(payload, neighbours)  # as asked: feasibility just said so
        minutes = int(payload.values.get("duration_minutes", 120))
        comp = _Compensation(task.task_id, targets, neighbours, {c.cell_id: c for c in planned.changes})
        saving = [c for c in neighbours if network.cell(c).energy_saving == "enabled"]
        savers = self.env.peers_with_role(RoleName.ENERGY_SAVING)
        suspended_until: float | None = None
        if saving and savers:
            apply_minutes = math.ceil(self.env.timing.compensation_apply / 60.0)
            suspended_until, comp.es_cells = self._suspend(
                savers[0],
                f"suspend.{task.task_id}",
                saving,
                minutes + apply_minutes + SUSPENSION_MARGIN_MINUTES,
                f"Suspend energy saving on {len(saving)} neighbour cells while they compensate the "
                f"coverage of {short(targets)}",
            )
        scheduler.sleep(self.env.timing.compensation_apply)
        with self._state:
            self._active[comp.compensation_id] = comp
        self._apply(neighbours)
        expires = scheduler.now() + minutes * 60.0
        comp.timer = scheduler.call_at(
            expires, f"{self.name} expiry {comp.compensation_id}", functools.partial(self._expire, comp.compensation_id)
        )
        if comp.es_cells and suspended_until is not None and suspended_until < expires:
            # The energy-saving agent shortened it (or the duration hit its maximum): extend it to the expiry.
            self._suspend(
                savers[0],
                f"extend-suspend.{task.task_id}",
                comp.es_cells,
                math.ceil((expires - scheduler.now()) / 60.0) + SUSPENSION_MARGIN_MINUTES,
                f"Extend the suspension of energy saving on {len(comp.es_cells)} cells to the end of "
                f"compensation {comp.compensation_id}",
            )
        self.note(
            "compensation_applied",
            f"{len(neighbours)} neighbour cells within their limits ({planned.summary()}) cover {short(targets)}",
            compensation_id=comp.compensation_id,
            cells=neighbours,
            changes=[c.to_dict() for c in planned.changes],
        )
        self.finish(
            run,
            f"compensation {comp.compensation_id} applied on {len(neighbours)} neighbour cells",
            {
                "compensation_id": comp.compensation_id,
                "neighbor_cell_ids": neighbours,
                "cell_changes": [c.to_dict() for c in planned.changes],
                "energy_saving_suspended": comp.es_cells,
                "expires_at": stamp(expires),
            },
        )

    def _suspend(
        self, saver: str, slug: str, cells: list[str], minutes: int, description: str
    ) -> tuple[float | None, list[str]]:
        """Have ``saver`` suspend energy saving on ``cells``: when it ends by itself (None: refused), and on
        which cells (a counter-proposal for some of them, e.g. within an intent's energy target, is taken)."""
        value = payloads.envelope(
            "energy_saving_adjust_v1",
            {
                "cell_ids": cells,
                "action": "suspend",
                "duration_minutes": min(MAX_ADJUST_MINUTES, minutes),
                "reason": "coverage_compensation",
            },
        )

        def some_of_them(counter: dict[str, Any]) -> bool:
            offered = counter.get("payload", {})
            kept = offered.get("cell_ids") or []
            return offered.get("action") == "suspend" and bool(kept) and set(kept) <= set(cells)

        outcome = self.ask(saver, slug, ", ".join(cells), description, value, some_of_them)
        if not outcome.finished:
            self.note("energy_saving_refused", f"energy saving stays on: {outcome.reason}")
            return None, []
        agreed_payload = (outcome.agreed or value)["payload"]
        agreed = sorted(agreed_payload["cell_ids"])
        reduced = sorted(agreed_payload.get("reduce_cell_ids") or [])
        if len(agreed) < len(cells) or reduced:
            region = self.env.network.cell(cells[0]).region
            served = self.mandates.describe(region, self.env.scheduler.now())
            self.note(
                "energy_saving_partial",
                f"energy saving suspended on {len(agreed) - len(reduced)}"
                + (f", reduced on {len(reduced)}" if reduced else "")
                + f" of {len(cells)} compensating cells: {outcome.refusals[0]}"
                + (f"; coverage{served} may stay short: the intent's owner arbitrates" if served else ""),
                cells=agreed,
                reduced=reduced,
            )
        until = outcome.result().get("until")
        try:
            return (from_rfc3339(until) if isinstance(until, str) else math.inf), agreed
        except ValueError:
            return math.inf, agreed  # an agent that does not say when: trust it to hold until the resume

    def _apply(self, cells: list[str]) -> None:
        """Set each cell to its planned values plus the strongest compensation still active on it."""
        network = self.env.network
        with self._state:
            active = list(self._active.values())
        for cell_id in sorted(cells):
            cell = network.cell(cell_id)
            using = [c.changes[cell_id] for c in active if cell_id in c.changes]
            power = cell.base_power_dbm + max((c.power_db for c in using), default=0.0)
            tilt = cell.base_tilt_deg + min((c.tilt_deg for c in using), default=0.0)
            network.set_cell_radio(cell_id, power, tilt, self.name)

    def _cancel(self, payload: ValidatedPayload, run: TaskRun) -> None:
        comps = self._matching(payload)
        if not comps:
            raise TaskFailure(f"no active compensation for {short(list(payload.values['target_cell_ids']))}")
        self.env.scheduler.sleep(self.env.timing.compensation_apply)
        resumed = self._end(comps, "cancelled")
        ids = [c.compensation_id for c in comps]
        self.finish(
            run,
            f"compensation {', '.join(ids)} cancelled; planned power and tilt restored",
            {"cancelled": ids, "energy_saving_resumed": resumed},
        )

    def _expire(self, compensation_id: str) -> None:
        with self._state:
            comp = self._active.get(compensation_id)
        if comp is not None:
            self._end([comp], "expired")

    def _end(self, comps: list[_Compensation], how: str) -> list[str]:
        with self._state:
            for comp in comps:
                self._active.pop(comp.compensation_id, None)
                if comp.timer is not None:
                    comp.timer.cancel()
            still = {c for other in self._active.values() for c in other.es_cells}
        cells = sorted({c for comp in comps for c in comp.neighbours})
        self._apply(cells)
        resume = sorted({c for comp in comps for c in comp.es_cells} - still)
        self.note(
            f"compensation_{how}",
            f"compensation {', '.join(c.compensation_id for c in comps)} {how}: "
            f"{len(cells)} cells back to planned power and tilt",
            cells=cells,
        )
        savers = self.env.peers_with_role(RoleName.ENERGY_SAVING)
        if resume and savers:
            value = payloads.envelope(
                "energy_saving_adjust_v1",
                {
                    "cell_ids": resume,
                    "action": "resume",
                    "reason": "fault_recovery",
                },
            )
            outcome = self.ask(
                savers[0],
                f"resume.{comps[0].compensation_id}",
                ", ".join(resume),
                f"Resume energy saving on {len(resume)} cells: the compensation is over",
                value,
            )
            if not outcome.finished:
                self.note("resume_failed", f"energy saving not resumed: {outcome.reason}")
                return []
        return resume
