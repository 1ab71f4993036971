"""FME copilots (draft section 2.1, steps 6-8): the engineer's assistant and the network's expert.

One role, two layers (a topology agent's ``layer``):

- **service**: takes the repair trouble tickets (``trouble_ticket_v1``) that a cross-domain agent
  opens when automatic repair is not possible (6), hands each to its field engineer (`FieldEngineer`,
  a NETCONF client of this agent), and answers questions in natural language (7): a question is a task
  without payload whose task description is the question; it is mapped to a structured query — facts,
  alarms, guide or status of one device — sent over NETCONF to the resource-layer copilot of the
  device's region, and the answer is returned in words (the task's summary) and as JSON (its data).
  The ticket task ends when the engineer reports the repair done (or failed).
- **resource**: answers structured queries (a ``trouble_ticket_v1`` payload naming the device and its
  fault; the query is the first word of the task description) from the network's facts
  (`an_agent.agents.guidance`), including step-by-step guidance (8).

``an-agent copilot ask --agent HOST:PORT "QUESTION"`` lets a person ask the service copilot the same way.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from an_agent.agents import guidance, payloads
from an_agent.agents.base import stamp
from an_agent.agents.engineer import FieldEngineer, engineer_sessions
from an_agent.agents.environment import Layer, RoleName, SimFuture
from an_agent.agents.field import ticket_id
from an_agent.agents.guidance import Query
from an_agent.agents.peers import Peers
from an_agent.agents.sdk import LabBehaviour, NotFeasible, TaskFailure, TaskRun, verb_of
from an_agent.model import Task, parse_prompt
from an_agent.schemas.validate import ValidatedPayload

_ELEMENT = re.compile(r"\b(?:LINK|SITE|CELL)-[A-Z0-9]+\b")
_QUESTION_WORDS: tuple[tuple[Query, tuple[str, ...]], ...] = (
    (Query.ALARMS, ("alarm", "history", "when did", "since when")),
    (Query.GUIDE, ("how do", "how to", "how can", "step", "guid", "what should", "procedure", "fix", "repair")),
    (Query.STATUS, ("back", "working", "restored", "in service", " up", "status", "is it ok")),
)


def classify(question: str) -> Query:
    """The structured query a natural-language question asks for (facts when nothing more specific)."""
    text = f" {question.lower()} "
    for query, words in _QUESTION_WORDS:
        if any(w in text for w in words):
            return query
    return Query.FACTS


class FmeCopilotBehaviour(LabBehaviour):
    role = RoleName.FME_COPILOT
    description = "FME copilot: answers the field engineer's questions, guides on-site repairs"

    def start(self) -> None:
        # The topology's `layer` (required for this role) reaches the behaviour among its options.
        self.layer = Layer(str(self.env.options.get("layer", Layer.SERVICE)))
        self._tickets: dict[str, dict[str, Any]] = {}
        """Open tickets by device: the context of a question that names no device."""
        self._working: dict[str, SimFuture[dict[str, Any]]] = {}
        """Devices an engineer is on, with the report their ticket will close with."""
        self._sessions: Peers | None = None
        """The engineers' NETCONF client of this copilot while any of them is on a ticket."""
        self._state = threading.Lock()

    # ---- negotiation --------------------------------------------------------------------------------
    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        if payload is None or payload.schema_id != "trouble_ticket_v1":
            if self.layer == Layer.SERVICE and payload is None:
                return "questions in natural language are answered"
            raise NotFeasible(f"{self.name} takes trouble_ticket_v1 tickets and queries")
        device = str(payload.values["device"])
        try:
            guidance.device_kind(self.env.network, device)
        except ValueError as exc:
            raise NotFeasible(str(exc)) from None
        if self.layer == Layer.SERVICE:
            return f"ticket for {device} goes to the field engineer"
        return f"{device} is known: facts, alarms, guidance and status can be given"

    # ---- tasks --------------------------------------------------------------------------------------
    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        if self.layer == Layer.RESOURCE:
            self._answer_query(task, payload, run)
        elif payload is None:
            self._answer_question(task, run)
        elif payload.schema_id == "trouble_ticket_v1":
            self._work_ticket(task, payload, run)
        else:
            raise TaskFailure(f"{self.name} takes trouble tickets and questions, not {payload.schema_id}")

    def _answer_query(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        if payload is None or payload.schema_id != "trouble_ticket_v1":
            raise TaskFailure("a query carries the trouble_ticket_v1 of the device it is about")
        network = self.env.network
        device = str(payload.values["device"])
        verb = verb_of(task)
        if verb == Query.FACTS:
            answer = guidance.device_facts(network, device)
        elif verb == Query.ALARMS:
            answer = guidance.alarm_history(network, device, self.env.scheduler.now())
        elif verb == Query.GUIDE:
            answer = guidance.repair_steps(network, device, str(payload.values["fault"]))
        elif verb == Query.STATUS:
            answer = guidance.device_status(network, device)
        else:
            raise TaskFailure(f"unknown query {verb!r}: facts, alarms, guide or status")
        self.note("copilot_answer", answer["answer"], device=device, query=verb)
        self.finish(run, answer["answer"], answer)

    def _answer_question(self, task: Task, run: TaskRun) -> None:
        question = parse_prompt(task.content or "").task_description or ""
        asker = task.send_from or "?"
        self.note("copilot_question", f"{asker} asks: {question}", asker=asker, question=question)
        query = classify(question)
        device = self._device_of(question)
        if device is None:
            raise TaskFailure("which device? name a link, site or cell (e.g. LINK-C2, SITE-07)")
        ticket = self._ticket_for(device)
        region = guidance.region_of(self.env.network, device)
        resource = self.env.peers_with_role(RoleName.FME_COPILOT, region, Layer.RESOURCE)
        if not resource:
            raise TaskFailure(f"no resource-layer copilot for {region} among the agents {self.name} may talk to")
        value = payloads.envelope("trouble_ticket_v1", ticket)
        outcome = self.ask(
            resource[0],
            f"{query}.{device}",
            device,
            f"{query} of {device}",
            value,
            expected_response="answer",
        )
        if not outcome.finished:
            raise TaskFailure(f"{resource[0]} could not answer: {outcome.reason}")
        answer = outcome.result()
        text = str(answer.get("answer") or "no answer")
        self.note("copilot_reply", f"to {asker}: {text}", asker=asker, query=query, device=device)
        self.finish(run, text, {"question": question, "query": query, **answer})

    def _device_of(self, question: str) -> str | None:
        """The device a question names, else the device of the only (or latest) open ticket."""
        for token in _ELEMENT.findall(question.upper()):
            token = str(token)
            try:
                guidance.device_kind(self.env.network, token)
            except ValueError:
                continue
            return token
        with self._state:
            devices = list(self._tickets)
        return devices[-1] if devices else None

    def _ticket_for(self, device: str) -> dict[str, Any]:
        """The open ticket of ``device``, else an ad-hoc one so the query carries the same structure."""
        with self._state:
            ticket = self._tickets.get(device)
        if ticket is not None:
            return ticket
        return {
            "ticket_id": ticket_id(device, self.env.scheduler.now()),
            "device": device,
            "fault": "unknown",
            "priority": "low",
            "other": "question without an open trouble ticket",
        }

    def _work_ticket(self, task: Task, payload: ValidatedPayload, run: TaskRun) -> None:
        ticket = {k: v for k, v in payload.values.items() if v is not None}
        if payload.other.fragments:
            ticket["other"] = "; ".join(payload.other.fragments)
        device = str(ticket["device"])
        number = str(ticket["ticket_id"])
        with self._state:
            first = self._working.get(device)
            if first is None:
                report: SimFuture[dict[str, Any]] = self.env.scheduler.future(f"{self.name} ticket {number}")
                self._working[device] = report
                self._tickets[device] = ticket
        if first is not None:
            # A second ticket for a device an engineer is already on: it closes with the first one.
            self.note(
                "ticket_joined", f"trouble ticket {number} from {task.send_from} joins the open ticket on {device}"
            )
            joined = first.wait()
            if not joined["in_service"]:
                raise TaskFailure(f"ticket {number} not closed: {joined['summary']}")
            self.finish(run, str(joined["summary"]), {**joined, "ticket_id": number, "joined": joined["ticket_id"]})
            return
        try:
            result = self._dispatch(task, ticket)
        except BaseException:
            report.set({"in_service": False, "ticket_id": number, "summary": "the ticket was abandoned"})
            raise
        report.set(result)
        if not result["in_service"]:
            raise TaskFailure(f"ticket {number} not closed: {result['summary']}")
        self.note("ticket_closed", f"trouble ticket {number} closed: {result['summary']}", ticket_id=number)
        self.finish(run, result["summary"], result)

    def _dispatch(self, task: Task, ticket: dict[str, Any]) -> dict[str, Any]:
        """The field engineer works ``ticket`` (an open trouble ticket on the network); their report."""
        device = str(ticket["device"])
        number = str(ticket["ticket_id"])
        eta = self.env.network.open_trouble_ticket(device, number, self.name, str(ticket["fault"]))
        self.note(
            "ticket_received",
            f"trouble ticket {number} from {task.send_from}: {ticket['fault'].replace('_', ' ')} on {device}, "
            f"priority {ticket.get('priority', 'normal')}, due {ticket.get('deadline') or stamp(eta)}",
            ticket_id=number,
            device=device,
            ticket=ticket,
        )
        with self._state:
            if self._sessions is None:
                self._sessions = engineer_sessions(self.peers, self.name)
            sessions = self._sessions
        try:
            return FieldEngineer(self.env, sessions, self.name).work(ticket, eta)
        finally:
            with self._state:
                self._tickets.pop(device, None)
                self._working.pop(device, None)
                last = not self._working
                if last:
                    self._sessions = None
            if last:  # no engineer left on a ticket: their sessions end with the last one
                sessions.close()
