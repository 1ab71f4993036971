"""The simulated field maintenance engineer (FME) of draft section 2.1, steps 7-8.

A person with an app: the engineer is a NETCONF client named ``fme`` of the service-layer copilot
(not an agent: it has no server). On a ticket it asks, in natural language, what the device is, which
alarms it raised and how to repair it, travels, follows the guidance step by step on simulated time —
the ``repair`` step is its hands on the network (`ManagedNetwork.repair_on_site`) — and asks whether
the device is back before it reports the repair done. Field maintenance takes the ticket's nominal
time: the engineer arrives so that the guided work ends when field maintenance would have ended.
"""

from __future__ import annotations

import json
from typing import Any

from an_agent.agents.conversation import redeliver
from an_agent.agents.environment import AgentEnvironment
from an_agent.agents.peers import Peers
from an_agent.model import CommuType, Task, TaskStatus, build_prompt

ENGINEER = "fme"
"""The engineer's NETCONF client name (its tasks' ``task-sendFrom``)."""


def engineer_sessions(agent_peers: Peers, copilot: str) -> Peers:
    """The NETCONF client ``fme`` of ``copilot``, logged in as the copilot's own peers are.

    One per copilot, shared by its engineers (one subscription sees every engineer's task ends); its
    owner closes it when no engineer is left.
    """
    return Peers(
        ENGINEER,
        agent_peers.scheduler,
        agent_peers.address_of,
        [copilot],
        agent_peers.record,
        credentials=agent_peers.credentials,
        timeout=agent_peers.timeout,
    )


class FieldEngineer:
    """One engineer working one ticket through the copilot ``copilot`` (module docstring)."""

    def __init__(self, env: AgentEnvironment, sessions: Peers, copilot: str) -> None:
        """``sessions``: the engineers' NETCONF client of ``copilot`` (`engineer_sessions`), shared by them."""
        self.env = env
        self.copilot = copilot
        self._peers = sessions
        self._asked = 0
        self.dialogue: list[dict[str, Any]] = []

    def ask(self, ticket: str, question: str) -> dict[str, Any]:
        """Ask the copilot in words; the answer's JSON (``answer`` is the sentence), {} when it failed.

        A question the copilot refuses for a reason that may pass (its state directory is full, it is
        restarting) is asked again a while later, as an incident report is (`redeliver`), under a new id
        (found by lab soak: a copilot restarted on a full disk refused its engineer's first question, the
        ticket failed with it and the fault was never repaired).
        """
        done = redeliver(
            lambda: self._assign(ticket, question),
            f"question on {ticket}",
            self.copilot,
            self.env.scheduler.sleep,
            self._note,
        )
        reply: dict[str, Any] = {}
        if done is not None and done.status == TaskStatus.FINISHED and done.result is not None and done.result.data:
            value = json.loads(done.result.data)
            reply = value if isinstance(value, dict) else {}
        reason = done.result.reason if done is not None and done.result is not None else ""
        answer = str(reply.get("answer") or reason or "no answer")
        self.dialogue.append({"t": self.env.scheduler.now(), "question": question, "answer": answer})
        return reply

    def _assign(self, ticket: str, question: str) -> Task:
        """``question`` on ``ticket`` as a new task of the copilot's; the task once it ended."""
        self._asked += 1
        task = Task(
            # a copilot started again takes the ticket up again: its questions must not take the ids of the
            # ones asked before (found by lab soak: data-exists, the engineer gave up, the ticket failed)
            task_id=f"{ENGINEER}.{ticket}"
            + (f".r{self.env.incarnation}" if self.env.incarnation > 1 else "")
            + f".q{self._asked}",
            send_from=ENGINEER,
            send_to=self.copilot,
            commu_type=CommuType.TASK_ASSIGN,
            content=build_prompt(ticket, question),
            task_async=True,
            expected_response="an answer in natural language",
        )
        return self._peers.peer(self.copilot).assign(task).result()

    def _note(self, kind: str, text: str, **details: Any) -> None:
        self.env.journal.note(ENGINEER, kind, text, **details)

    def work(self, ticket: dict[str, Any], eta: float) -> dict[str, Any]:
        """Work ``ticket`` (a trouble_ticket_v1 payload) until repaired or given up; the report to close it."""
        scheduler = self.env.scheduler
        number, device = str(ticket["ticket_id"]), str(ticket["device"])
        self._note("field_work", f"accepts ticket {number}: {str(ticket['fault']).replace('_', ' ')} on {device}")
        facts = self.ask(number, f"What do we know about {device}?").get("facts")
        if isinstance(facts, dict) and _working(facts):
            # Repaired already (the ticket resumed after its copilot's restart, the repair done before it; or
            # someone else fixed it): no trip, no second repair (found by lab soak: a field visit found nothing).
            return self._report(ticket, True, f"{device} found back in service: no repair left to do", False)
        self.ask(number, f"Which alarms has {device} raised, and since when?")
        guide = self.ask(number, f"How do I repair {device}, step by step?")
        steps = [s for s in guide.get("steps") or [] if isinstance(s, dict)]
        guided = bool(steps)
        if not guided:
            # No guidance (no copilot knows the device, or it shows nothing to repair): by the book.
            steps = [{"step": 1, "kind": "repair", "minutes": 0, "action": f"repair {device} without guidance"}]
            steps.append({"step": 2, "kind": "verify", "minutes": 0, "action": f"check that {device} is back"})
        work = sum(float(s.get("minutes", 0)) * 60 for s in steps)
        travel = eta - work - scheduler.now()
        if travel > 0:
            scheduler.sleep(travel)
        self._note("field_work", f"on site for ticket {number} ({device})")
        repaired = False
        for step in steps:
            scheduler.sleep(float(step.get("minutes", 0)) * 60)
            kind = step.get("kind")
            self._note("field_step", f"step {step.get('step')}: {step.get('action')}", ticket_id=number, step_kind=kind)
            # On site the engineer sees the device itself: with no fault left on it (repaired meanwhile, or
            # the ticket resumed after its repair while something else keeps it down) there is nothing to
            # repair (found by lab soak --netns: a repair of a site whose power was back, counted twice).
            if kind == "repair" and self.env.network.fault_on_site(device) is not None:
                repaired = self.env.network.repair_on_site(device, ENGINEER, f"ticket {number}")
            elif kind == "verify":
                status = self.ask(number, f"Is {device} back in service?")
                # No answer at all (the copilot could not ask anyone): the engineer's own check stands.
                if status and not status.get("in_service"):
                    return self._report(ticket, False, str(status.get("answer") or f"{device} is not back"))
        if not repaired:
            # Someone else cleared the fault meanwhile (the copilot confirmed service): nothing left to do.
            return self._report(ticket, True, f"{device} found back in service: no repair left to do", False)
        how = f"following the copilot's {len(steps)} steps" if guided else "without guidance"
        return self._report(ticket, True, f"{device} repaired on site {how}")

    def _report(self, ticket: dict[str, Any], in_service: bool, summary: str, repaired: bool = True) -> dict[str, Any]:
        repaired = repaired and in_service
        self._note("field_work", summary, ticket_id=ticket["ticket_id"], repaired=repaired, in_service=in_service)
        return {
            "ticket_id": ticket["ticket_id"],
            "device": ticket["device"],
            "repaired": repaired,
            "in_service": in_service,
            "summary": summary,
            "dialogue": self.dialogue,
        }


def _working(facts: dict[str, Any]) -> bool:
    """Whether the copilot's facts of a device (`an_agent.agents.guidance.device_facts`) show it working."""
    kind = facts.get("kind")
    if kind == "link":
        return facts.get("up") is True
    if kind == "site":
        return facts.get("in_service") is True and facts.get("radio_finding") == "healthy"
    if kind == "cell":
        return facts.get("in_service") is True and facts.get("tilt_deg") == facts.get("planned_tilt_deg")
    return False
