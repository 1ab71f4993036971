"""The outcome of a run under a service intent: one check per expectation, and the intent's KPI view.

For each ``service-intent`` agent with an intent, the lab measures every expectation itself, on the
network's exact KPI samples of the intent's area (`SimNetwork.area_samples`), over the window the agent
reported on (else the run's start and the intent's observation time), with the same judgement the
agent uses (`an_agent.agents.intent.fulfilment`). An expectation's check passes when the lab finds it
fulfilled AND the agent reported it fulfilled: a missed target, a missing report, or a report that
disagrees with the measurement each fail it.

`intent_view` is the ``kpis.intent`` part of the result (per intent: its expectations, the lab's
fulfilment, the agent's report, and the KPI series of the area) that the HTML report plots.
"""

from __future__ import annotations

from typing import Any

from an_agent.agents.intent import Intent, fulfilment, load_intent
from an_agent.lab.journal import Note
from an_agent.lab.network import SimNetwork
from an_agent.lab.result import Check
from an_agent.lab.spec import Role
from an_agent.lab.topology import Topology


def intents(topology: Topology) -> list[tuple[str, Intent]]:
    """The intents the topology's service-intent agents hold: (agent, intent)."""
    return [
        (a.name, load_intent(a.options["intent"], a.name))
        for a in topology.agents
        if a.role == Role.SERVICE_INTENT and a.options.get("intent") is not None
    ]


def _window(agent: str, intent: Intent, notes: list[Note], start: float) -> tuple[float, float]:
    for note in notes:
        if (
            note.agent == agent
            and note.kind == "intent_fulfilment"
            and note.details.get("intent_id") == intent.intent_id
        ):
            return float(note.details["start"]), float(note.details["end"])
    return start, start + intent.observation_minutes * 60.0


def _reported(agent: str, intent: Intent, notes: list[Note]) -> dict[str, Note]:
    return {
        str(n.details.get("expectation_id")): n
        for n in notes
        if n.agent == agent and n.kind == "intent_fulfilment" and n.details.get("intent_id") == intent.intent_id
    }


def intent_checks(topology: Topology, network: SimNetwork, notes: list[Note]) -> list[Check]:
    """One check per expectation of every intent (module docstring)."""
    checks = []
    for agent, intent in intents(topology):
        start, end = _window(agent, intent, notes, topology.start_time)
        samples = network.area_samples(intent.area)
        reported = _reported(agent, intent, notes)
        for expectation in intent.expectations:
            measured = fulfilment(expectation, samples, start, end)
            note = reported.get(expectation.expectation_id)
            name = f"intent {intent.intent_id} {expectation.expectation_id}: " + ", ".join(
                t.describe() for t in expectation.targets
            )
            if note is None:
                checks.append(Check(name, False, f"{agent} reported no fulfilment; measured: {measured.describe()}"))
                continue
            agrees = bool(note.details.get("fulfilled")) == measured.fulfilled
            detail = f"measured: {measured.describe()}"
            if not agrees:
                detail += f"; but {agent} reported: {note.text}"
            checks.append(Check(name, measured.fulfilled and agrees, detail))
    return checks


def intent_view(topology: Topology, network: SimNetwork, notes: list[Note]) -> list[dict[str, Any]]:
    """The ``kpis.intent`` rows (module docstring); times are seconds after the run's start."""
    start = topology.start_time
    out = []
    for agent, intent in intents(topology):
        begin, end = _window(agent, intent, notes, start)
        samples = network.area_samples(intent.area)
        reported = _reported(agent, intent, notes)
        out.append(
            {
                "agent": agent,
                "intent_id": intent.intent_id,
                "area": intent.area,
                "window": [round(begin - start, 3), round(end - start, 3)],
                "expectations": [
                    {
                        "expectation_id": e.expectation_id,
                        "verb": e.verb,
                        "priority": e.priority,
                        "targets": [t.to_dict() for t in e.targets],
                        "measured": fulfilment(e, samples, begin, end).to_dict(),
                        "reported": reported[e.expectation_id].text if e.expectation_id in reported else None,
                    }
                    for e in intent.expectations
                ],
                "series": [
                    {
                        "t": round(t - start, 3),
                        "coverage_percent": round(k.coverage_percent, 2),
                        "users_without_service": round(k.users_without_service, 1),
                        "energy_kwh_per_day": round(k.energy_kwh_per_day, 1),
                    }
                    for t, k in samples
                ],
            }
        )
    return out
