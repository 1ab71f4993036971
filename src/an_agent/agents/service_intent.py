"""Service-intent agent: the CSS service intent above fault management, optimization and energy saving.

Use case 2.2 of draft-wang-nmrg-magent-im sits under a "CSS service intent: fault management,
performance optimization, energy saving". This agent holds that intent (its ``options.intent``, a
``service_intent_v1`` payload: expectations with targets, `an_agent.agents.intent`) and, on its own:

1. decomposes it: each of the fault, optimization and energy-saving agents it may talk to gets an
   ``intent_task_v1`` ``assure`` task with its share (``duty``), the expectations it serves and their
   targets, until the end of the observation window (FEASIBILITY first, then taskAssign);
2. watches the area's KPIs against the targets every ``watch_minutes`` of simulated time (at the
   start, then `WATCH_OFFSET_S` after each mark), noting
   when an expectation is missed and when it is met again;
3. negotiates when targets conflict: while a coverage expectation is missed and compensating
   neighbour cells are still saving energy (the energy-saving agent kept within the energy target),
   it asks the energy-saving agent to relax a lower-priority energy expectation for those cells —
   first by the least step (5 %), taking the energy-saving agent's counter-proposal when it stays
   within the expectation's ``relax_up_to``; when the area is back in service and no cell compensates
   any more, it restores the energy target (saving resumes on those cells);
4. at the end of the observation window, reports the fulfilment of each expectation (notes
   ``intent_fulfilment``, judged by `an_agent.agents.intent.fulfilment` on what it watched).

It takes no tasks itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from an_agent.agents import payloads
from an_agent.agents.base import short, stamp
from an_agent.agents.environment import AreaKpis, RoleName
from an_agent.agents.intent import COVERAGE_KPIS, Expectation, Intent, fulfilment, kpi_value, load_intent
from an_agent.agents.mandate import INTENT_TASK
from an_agent.agents.sdk import LabBehaviour, NotFeasible, TaskFailure, TaskRun
from an_agent.errors import AnAgentError
from an_agent.model import Task
from an_agent.schemas.validate import ValidatedPayload

FIRST_RELAX_STEP = 0.05
"""The first relaxation the agent proposes: the target loosened by 5 % (the least it may need)."""
WATCH_OFFSET_S = 7.0
"""The watches fall this long after each ``watch_minutes`` mark: off the whole and half minutes at which
the scenario and the other agents act, so that a watch never shares an instant with them (activities
woken at one simulated instant run in any order; the run must be the same every time)."""
DUTIES: tuple[tuple[RoleName, str, frozenset[str]], ...] = (
    (RoleName.RAN_FAULT, "fault_management", COVERAGE_KPIS),
    (RoleName.OPTIMIZATION, "performance_optimization", COVERAGE_KPIS),
    (RoleName.ENERGY_SAVING, "energy_saving", frozenset({"energy_kwh_per_day"})),
)
"""Who serves which share of the intent, and the KPIs of the expectations that share covers."""


class ServiceIntentBehaviour(LabBehaviour):
    role = RoleName.SERVICE_INTENT
    option_defaults: ClassVar[Mapping[str, Any]] = {"intent": None, "watch_minutes": 5}
    description = "Service-intent agent: holds the CSS service intent, decomposes it, watches it, negotiates"

    def start(self) -> None:
        options = {**self.option_defaults, **self.env.options}
        self.intent: Intent | None = None
        if options["intent"] is None:
            return
        self.intent = load_intent(options["intent"], self.name)
        self._watch = max(60.0, float(options["watch_minutes"]) * 60.0)
        self._samples: list[tuple[float, AreaKpis]] = []
        self._relaxed: tuple[Expectation, list[str]] | None = None
        self._refused: list[str] = []
        """The cells of the last relaxation the energy-saving agent and this one could not agree on."""
        self.env.scheduler.spawn(f"{self.name} intent {self.intent.intent_id}", self._run)

    # ---- it takes no tasks ----------------------------------------------------------------------------
    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        raise NotFeasible(f"{self.name} holds a service intent; it takes no tasks")

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        raise TaskFailure(f"{self.name} holds a service intent; it takes no tasks")

    # ---- the intent's life ----------------------------------------------------------------------------
    def _run(self) -> None:
        intent = self.intent
        assert intent is not None
        scheduler = self.env.scheduler
        # Bound before its peers are up: the first instant the lab plays is when they can be reached.
        scheduler.sleep(0)
        start = scheduler.now()
        end = start + intent.observation_minutes * 60.0
        self.note(
            "intent",
            f"service intent {intent.intent_id} for {intent.area}: "
            + "; ".join(
                f"{e.expectation_id} {', '.join(t.describe() for t in e.targets)}" for e in intent.expectations
            ),
            intent_id=intent.intent_id,
        )
        self._decompose(intent, end)
        missed: set[str] = set()
        tick = start + WATCH_OFFSET_S - self._watch
        while True:
            now = scheduler.now()
            kpis = self.env.network.area_kpis([intent.area])
            self._samples.append((now, kpis))
            self._judge(intent, kpis, missed)
            if now >= end:
                break
            self._resolve(intent, kpis, missed, end)
            # Watch on a fixed grid from the start (a negotiation takes simulated time: do not drift).
            while tick <= scheduler.now() and tick < end:
                tick = min(end, tick + self._watch)
            scheduler.sleep(max(0.0, tick - scheduler.now()))
        if self._relaxed is not None:
            self._restore(intent)
        self._report(intent, start, end)

    def _decompose(self, intent: Intent, end: float) -> None:
        for role, duty, kpis in DUTIES:
            expectations = [e for e in intent.expectations if e.kpis & kpis]
            peers = self.env.peers_with_role(role, intent.area)
            if not expectations or not peers:
                continue
            value = payloads.envelope(
                INTENT_TASK,
                {
                    "intent_id": intent.intent_id,
                    "action": "assure",
                    "duty": duty,
                    "expectation_ids": [e.expectation_id for e in expectations],
                    "area": intent.area,
                    "targets": [t.to_dict() for e in expectations for t in e.targets if t.name in kpis],
                    "until": stamp(end),
                },
            )
            try:
                outcome = self.ask(
                    peers[0],
                    f"{duty.replace('_', '-')}.{intent.intent_id}",
                    intent.area,
                    f"Assure {duty.replace('_', ' ')} in {intent.area} for intent {intent.intent_id}",
                    value,
                    expected_response="the share of the intent taken on",
                )
            except AnAgentError as exc:  # e.g. served on its own before its peers are up: watch all the same
                self.note("intent_refused", f"{peers[0]} not reached for {duty}: {exc}", peer=peers[0])
                continue
            if outcome.finished:
                self.note(
                    "intent_decomposed",
                    f"{peers[0]} takes {duty.replace('_', ' ')}: {short([e.expectation_id for e in expectations])}",
                    peer=peers[0],
                    duty=duty,
                )
            else:
                self.note("intent_refused", f"{peers[0]} does not take {duty}: {outcome.reason}", peer=peers[0])

    def _judge(self, intent: Intent, kpis: AreaKpis, missed: set[str]) -> None:
        """Note each expectation that starts or stops missing a target at this watch."""
        for expectation in intent.expectations:
            failing = [t for t in expectation.targets if not t.met(kpi_value(kpis, t.name))]
            eid = expectation.expectation_id
            if failing and eid not in missed:
                missed.add(eid)
                values = ", ".join(f"{t.name} {kpi_value(kpis, t.name):.1f} (target {t.describe()})" for t in failing)
                self.note("intent_missed", f"{eid} missed: {values}", expectation_id=eid)
            elif not failing and eid in missed:
                missed.discard(eid)
                self.note("intent_met", f"{eid} met again", expectation_id=eid)

    def _resolve(self, intent: Intent, kpis: AreaKpis, missed: set[str], end: float) -> None:
        """Negotiate a relaxation while coverage is missed, restore it once nothing compensates any more."""
        if self._relaxed is not None:
            if not self._compensating(intent) and not self._down_cells(intent):
                self._restore(intent)
            return
        coverage = [e for e in intent.expectations if e.expectation_id in missed and e.kpis & COVERAGE_KPIS]
        if not coverage:
            return
        first = min(coverage, key=lambda e: e.priority)
        energy = [
            e
            for e in intent.expectations
            if "energy_kwh_per_day" in e.kpis and e.relax_up_to is not None and e.priority > first.priority
        ]
        cells = [
            c for c in self._compensating(intent) if self.env.network.cell(c).energy_saving in ("enabled", "reduced")
        ]
        savers = self.env.peers_with_role(RoleName.ENERGY_SAVING, intent.area)
        if not energy or not cells or not savers or cells == self._refused:
            return  # nothing to negotiate, or the same request was refused already
        self._relax(intent, first, energy[0], cells, savers[0], end)

    def _relax(
        self, intent: Intent, keep: Expectation, relax: Expectation, cells: list[str], saver: str, end: float
    ) -> None:
        target = relax.targets[0]
        limit = relax.relax_up_to
        assert limit is not None
        first = round(min(limit, target.value * (1 + FIRST_RELAX_STEP)), 1)

        def proposal(value: float) -> dict[str, Any]:
            return payloads.envelope(
                INTENT_TASK,
                {
                    "intent_id": intent.intent_id,
                    "action": "relax",
                    "duty": "energy_saving",
                    "expectation_ids": [relax.expectation_id],
                    "area": intent.area,
                    "targets": [{**target.to_dict(), "value": value}],
                    "cell_ids": cells,
                    "until": stamp(end),
                    "other": f"keep {keep.expectation_id} (priority {keep.priority}) while neighbour cells compensate",
                },
            )

        def within_limit(counter: dict[str, Any]) -> bool:
            targets = counter.get("payload", {}).get("targets") or [{}]
            value = targets[0].get("value")
            return isinstance(value, int | float) and value <= limit + 1e-9

        outcome = self.ask(
            saver,
            f"relax.{relax.expectation_id}",
            ", ".join(cells),
            f"Relax {relax.expectation_id} of intent {intent.intent_id} to keep {keep.expectation_id}: "
            f"suspend energy saving on {len(cells)} compensating cells",
            proposal(first),
            within_limit,
        )
        if not outcome.finished:
            self._refused = cells
            self.note(
                "intent_conflict",
                f"{keep.expectation_id} missed and {relax.expectation_id} cannot be relaxed within "
                f"{limit:g}: {outcome.reason}",
                expectation_id=keep.expectation_id,
            )
            return
        agreed = (outcome.agreed or {}).get("payload", {}).get("targets", [{}])[0].get("value", first)
        self._relaxed = (relax, cells)
        self.note(
            "intent_negotiated",
            f"{relax.expectation_id} relaxed from {target.describe()} to {float(agreed):g} to keep "
            f"{keep.expectation_id}: saving suspended on {len(cells)} more cells ({short(cells)})",
            expectation_id=relax.expectation_id,
            value=agreed,
            cells=cells,
        )

    def _restore(self, intent: Intent) -> None:
        assert self._relaxed is not None
        relax, cells = self._relaxed
        savers = self.env.peers_with_role(RoleName.ENERGY_SAVING, intent.area)
        value = payloads.envelope(
            INTENT_TASK,
            {
                "intent_id": intent.intent_id,
                "action": "restore",
                "duty": "energy_saving",
                "expectation_ids": [relax.expectation_id],
                "area": intent.area,
                "targets": [t.to_dict() for t in relax.targets],
                "cell_ids": cells,
            },
        )
        outcome = self.ask(
            savers[0],
            f"restore.{relax.expectation_id}",
            ", ".join(cells),
            f"Restore the target of {relax.expectation_id}: {intent.area} is back in service, nothing compensates",
            value,
        )
        self._relaxed = None
        if outcome.finished:
            self.note(
                "intent_restored",
                f"{relax.expectation_id} back to {', '.join(t.describe() for t in relax.targets)}",
                expectation_id=relax.expectation_id,
            )
        else:
            self.note("restore_failed", f"{relax.expectation_id} not restored: {outcome.reason}")

    def _report(self, intent: Intent, start: float, end: float) -> None:
        results = [fulfilment(e, self._samples, start, end) for e in intent.expectations]
        for result in results:
            self.note(
                "intent_fulfilment",
                result.describe(),
                intent_id=intent.intent_id,
                start=start,
                end=end,
                **result.to_dict(),
            )
        met = sum(1 for r in results if r.fulfilled)
        self.note(
            "intent_report",
            f"intent {intent.intent_id}: {met} of {len(results)} expectations fulfilled over "
            f"{intent.observation_minutes} min",
            intent_id=intent.intent_id,
        )

    # ---- what it reads of the network ------------------------------------------------------------------
    def _down_cells(self, intent: Intent) -> list[str]:
        network = self.env.network
        return [c for s in network.sites([intent.area]) if not s.in_service for c in s.cell_ids]

    def _compensating(self, intent: Intent) -> list[str]:
        """The area's in-service cells off their planned power or tilt (compensating a neighbour)."""
        network = self.env.network
        out = []
        for site in network.sites([intent.area]):
            if not site.in_service:
                continue
            for cell_id in site.cell_ids:
                cell = network.cell(cell_id)
                if (cell.power_dbm, cell.tilt_deg) != (cell.base_power_dbm, cell.base_tilt_deg):
                    out.append(cell_id)
        return sorted(out)
