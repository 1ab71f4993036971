"""`LabBehaviour`: what every lab role has in common.

- Simulated-time bookkeeping around the runtime's calls (see `an_agent.lab.kernel`): a task accepted in
  `check_assignment` is held until its worker starts; the worker's activity ends with the hand-off of
  its end to the assigner.
- Structured payloads: a task's payload is validated against its template when the task is assigned
  (a bad payload is refused with ``invalid-value`` listing every problem, nothing is stored) and handed
  to `handle` already validated. Keys outside the base template (evolved keys) are accepted exactly
  when the agent's schema setting accepts them (`AgentEnvironment.schemas`): the same under
  ``an-agent serve --topology`` and in a lab.
- Negotiation: FEASIBILITY reads the proposed payload from the prompt and asks `feasibility`;
  FULFILLMENT, answered, judges a finished task's JSON result by the criteria the requester sent
  (`an_agent.schemas.fulfilment`); asked (`evaluate`), the requester judges the result itself and
  only records the executor's answer.
- Talking to other agents (`an_agent.agents.conversation`, mixed in): `find_peers` by skill; `ask`
  negotiates the payload's schema with the peer, then runs the draft's section 5.3 sequence —
  FEASIBILITY, a second round on the peer's counter-proposal when the requester accepts it, then
  taskAssign — and waits for the result by notification.
- Towards its own assigner: `ask_input` (``input-required`` naming keys), `finish` (the result checked
  against the skill's declared response schema).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from an_agent import tracing
from an_agent.agents import payloads
from an_agent.agents.conversation import PeerConversation
from an_agent.agents.environment import AgentEnvironment, Alarm, Shutdown
from an_agent.agents.exchange import read_input
from an_agent.agents.failures import NotFeasible, TaskFailure
from an_agent.agents.findings import Finding
from an_agent.agents.peers import Peers
from an_agent.clock import to_rfc3339
from an_agent.errors import AnAgentError, RpcError, SchemaError
from an_agent.model import (
    CommuType,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    TaskResult,
    TaskStatus,
    build_prompt,
    parse_prompt,
)
from an_agent.runtime.behaviour import AgentInfo, Behaviour, TaskRun
from an_agent.runtime.schemas import shared_embedder
from an_agent.schemas.fulfilment import Expectation, request_expectation
from an_agent.schemas.validate import ValidatedPayload

log = logging.getLogger(__name__)


class LabBehaviour(PeerConversation, Behaviour):
    """Base of the lab roles (module docstring). Subclasses implement `handle` and `feasibility`."""

    role: str = "lab"
    """The `RoleName` a subclass plays."""
    option_defaults: ClassVar[Mapping[str, Any]] = {}
    """The role's ``options`` (a topology's ``agents[].options``) and their defaults (topologies/README.md)."""
    description = "lab agent"

    def __init__(self, env: AgentEnvironment, peers: Peers) -> None:
        self.env = env
        self.peers = peers
        self._holds: dict[str, object] = {}
        self._running = 0
        # Payloads checked in check_assignment, handed to execute (validated once per task).
        self._payloads: dict[str, ValidatedPayload | None] = {}
        self._lock = threading.Lock()
        self._ids: dict[str, int] = {}

    def bind(self, agent: AgentInfo) -> None:
        super().bind(agent)
        self.warm_up()
        self.start()

    def start(self) -> None:
        """Start background activities (alarm monitoring); called once when bound to its agent."""

    def warm_up(self) -> None:
        """Start loading the embedding model when this agent learns (``schemas: evolve``).

        In the background: the server starts at once, and the model (seconds to load) is usually ready
        before the first task needs it, so a lab's first learning step does not hold simulated time long.
        """
        if self.env.schemas == "evolve":
            threading.Thread(
                target=lambda: shared_embedder().embed(["warm up"]), name=f"{self.name} model load", daemon=True
            ).start()

    # ---- runtime hooks ------------------------------------------------------------------------------
    def check_assignment(self, task: Task) -> None:
        if task.commu_type not in (None, CommuType.TASK_ASSIGN):
            return  # stored as canceled at once: no work, nothing to hold
        token = self.env.scheduler.hold(f"{self.name}: accepted {task.task_id}")
        try:
            senders = self.env.senders
            if senders is not None and task.send_from not in senders:
                # talks_to is policy (a lab with a directory): finding an agent does not entitle one to task it
                raise RpcError.access_denied(
                    f"{self.name} refuses task {task.task_id} from {task.send_from or 'an unnamed sender'}: the "
                    "topology's talks_to does not let it assign tasks here "
                    f"(allowed: {', '.join(sorted(senders)) or 'none'})",
                    f"/irtf-agent:tasks/task[task-id='{task.task_id}']/task-sendFrom",
                )
            with self._lock:
                busy = len(self._holds) + self._running
            if busy >= self.env.task_capacity:
                raise RpcError(
                    "application",
                    "resource-denied",
                    f"{self.name} already has {busy} tasks in progress (its limit); assign {task.task_id} later",
                )
            try:
                payload = self._task_payload(task)
            except SchemaError as exc:
                raise RpcError.invalid_value(
                    f"{self.name} refuses task {task.task_id}: {exc}: " + "; ".join(exc.problems),
                    path=f"/irtf-agent:tasks/task[task-id='{task.task_id}']/msg-data",
                ) from None
        except BaseException:
            self.env.scheduler.release(token)
            raise
        with self._lock:
            self._holds[task.task_id] = token
            self._payloads[task.task_id] = payload

    def released(self, task: Task) -> None:
        """The task ended without its worker taking over its hold (canceled before or during input, undone):
        its slot and its hold on simulated time go back; after `execute` there is nothing left to give."""
        with self._lock:
            token = self._holds.pop(task.task_id, None)
            self._payloads.pop(task.task_id, None)
        if token is not None:
            self.env.scheduler.release(token)

    def resumed(self, task: Task) -> None:
        """A task resumed after a restart is pending work from now (`execute` adopts it): time holds until
        its first step, however late the worker starts (the lab hears of it before the agent serves)."""
        token = self.env.scheduler.hold(f"{self.name}: resumed {task.task_id}")
        with self._lock:
            previous = self._holds.pop(task.task_id, None)
            self._holds[task.task_id] = token
        if previous is not None:
            self.env.scheduler.release(previous)

    def _task_payload(self, task: Task) -> ValidatedPayload | None:
        """The task's structured payload as this behaviour acts on it (base template keys only).

        The operation layer's admission validated it already when the agent runs a schema service
        (`AgentInfo.payload`): that result is used as is. Only without one (``schemas: off``) does
        the behaviour validate the data-param itself, against the shipped templates.
        """
        admitted = self.agent.payload(task.task_id)
        if admitted is not None:
            return payloads.base_view(admitted)
        return payloads.task_payload(task, self.agent.data_params, self.env.accepts_evolved_keys)

    def execute(self, task: Task, run: TaskRun) -> None:
        scheduler = self.env.scheduler
        with self._lock:
            token = self._holds.pop(task.task_id, None)
            self._running += 1
        if token is None:  # e.g. resumed after a restart: nobody held it for us
            token = scheduler.hold(f"{self.name}: task {task.task_id}")
        scheduler.adopt(token)
        key = (self.name, task.task_id)
        try:
            run.set_status(TaskStatus.PROCESSING)
            with self._lock:
                checked = task.task_id in self._payloads
                payload = self._payloads.pop(task.task_id, None)
            if not checked:  # resumed after a restart: check_assignment did not run in this process
                payload = self._task_payload(task)
            if self.env.schemas == "evolve":
                # Learning from the payload runs on real time: done before simulated time may move on, so
                # a patch it triggers is there for this task's result, whatever the machine's speed.
                self.agent.learned()
            self.handle(task, payload, run)
        except (TaskFailure, NotFeasible) as exc:  # NotFeasible: re-checked at the start, no longer feasible
            run.fail(str(exc))
        except Shutdown:
            run.fail("the lab stopped before the task ended")
        except (AnAgentError, ValueError) as exc:
            log.info("%s: task %s failed: %s", self.name, task.task_id, exc)
            run.fail(f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._running -= 1
            if scheduler.is_expected(key):
                scheduler.arrive(key)
            scheduler.leave()

    def negotiate(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        if request.type == NegotiationType.FULFILLMENT:
            return self._fulfillment(request, task)
        content = "\n".join(request.content)
        value = payloads.prompt_payload(content)
        sections = parse_prompt(content)
        try:
            validated = self._proposed_payload(value, request.send_from)
            reason = self.feasibility(sections.task_description or "", validated, request.send_from)
        except SchemaError as exc:
            return NegotiationResult(
                NegotiationType.FEASIBILITY,
                feasible=False,
                reason=f"invalid payload: {exc}: " + "; ".join(exc.problems),
            )
        except NotFeasible as exc:
            counter = None
            if exc.counter is not None:
                counter = payloads.proposal(sections.target_object or "", sections.task_description or "", exc.counter)
            return NegotiationResult(
                NegotiationType.FEASIBILITY, feasible=False, reason=str(exc), counter_proposal=counter
            )
        return NegotiationResult(NegotiationType.FEASIBILITY, feasible=True, reason=reason)

    def _proposed_payload(self, value: dict[str, Any] | None, requester: str | None) -> ValidatedPayload | None:
        """A FEASIBILITY proposal's payload, validated: against the shipped template of its schema, else (a
        template the agent serves besides them: ``--templates``, a gateway's) the agent's own."""
        if value is None:
            return None
        if value.get("schema_id") in payloads.templates().schema_ids or self.env.schemas == "off":
            return payloads.validate(value, self.env.accepts_evolved_keys)
        return self.agent.validate(requester or "", value)

    def _fulfillment(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        """The executor's answer: its task judged by the criteria the requester sent (or its expected-response)."""
        if task is None:
            return NegotiationResult(
                NegotiationType.FULFILLMENT, fulfilled=False, reason=f"{self.name} has no task {request.task_id!r}"
            )
        expectation = request_expectation(request.content) or Expectation.parse(task.expected_response)
        judgement = expectation.judge(task)
        reason = judgement.reason
        if judgement.fulfilled:
            reason = f"task {task.task_id} finished; " + reason
        return NegotiationResult(NegotiationType.FULFILLMENT, fulfilled=judgement.fulfilled, reason=reason)

    # ---- what roles implement -----------------------------------------------------------------------
    @abstractmethod
    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        """Carry out ``task`` (its payload already validated); finish ``run`` or raise `TaskFailure`."""

    @abstractmethod
    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        """The reason the proposed task is feasible, or raise `NotFeasible` (with a counter-proposal)."""

    # ---- helpers ------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def traced(self, alarms: Sequence[Alarm]) -> Iterator[None]:
        """Run the block (and what it spawns) in the trace of the fault behind ``alarms``: the first one
        that has a trace, else a new trace (alarms of no known fault are a cause of their own)."""
        parent = next((a.traceparent for a in alarms if a.traceparent), None)
        span = tracing.received(parent)
        elements = sorted({a.element for a in alarms})
        tracing.event(
            self.name, "alarm.received", f"alarm(s) on {short(elements)}", span, alarms=[a.alarm_id for a in alarms]
        )
        try:
            with tracing.use(span):
                yield
        finally:
            tracing.close(span)  # an exported span ends here (`an_agent.tracing.SpanSink`)

    def note_root_cause(self, finding: Finding, diagnosed_by: str) -> None:
        """Journal a diagnosed fault (the outcome's root-cause check reads these)."""
        self.note(
            "root_cause",
            finding.root_cause,
            fault_type=finding.fault_type,
            element=finding.element,
            sites=finding.explained_site_ids,
            diagnosed_by=diagnosed_by,
        )

    def finish(self, run: TaskRun, summary: str, result: dict[str, Any]) -> None:
        """End the task finished with the JSON ``result``.

        ``result`` is first checked against the response schema the skill that took the task declares
        (`AgentInfo.check_result`): one that is not what the skill promises raises `SchemaError` (the
        task then fails saying which keys are wrong) rather than reaching the assigner.
        """
        self.agent.check_result(run.task.task_id, result)
        run.finish(
            TaskResult(
                summary=summary, reason=summary, format="application/json", data=json.dumps(result, sort_keys=True)
            )
        )

    def ask_input(self, run: TaskRun, keys: list[str], reason: str, timeout: float | None) -> dict[str, str] | None:
        """``input-required`` naming ``keys``; the assigner's answers (``{key: value}``, every key) or None.

        Each key is asked for as a prompt (target object: the key) the assigner answers with a text
        data-param of ``key: value`` lines, or a new content holding such lines (over A2A: a text part).
        None when the task was cancelled or nothing came within ``timeout`` seconds (real time); a
        partial answer raises `TaskFailure` naming what is still missing.
        """
        required = [
            build_prompt(key, f"give {key}: add a text data-param with the line '{key}: <value>' to the task's "
                         "msg-data")
            for key in keys
        ]  # fmt: skip
        provided = run.request_input(required, reason, timeout=timeout)
        if provided is None:
            return None
        texts = [p.data for p in provided.data_params if p.data]
        answers = read_input(texts or [provided.task.content or ""])
        still = [key for key in keys if key not in answers]
        if still:
            who = provided.provided_by or "the assigner"
            raise TaskFailure(f"the input {who} sent gives no {', '.join(still)}")
        return {key: answers[key] for key in keys}


def stamp(t: float) -> str:
    """``2025-06-01T08:05:00Z``: a simulated time to the second, for payloads and notes."""
    return to_rfc3339(round(t))[:19] + "Z"


def verb_of(task: Task) -> str:
    """What a task asks for: the first word of its task description, lower case (``diagnose``, ``repair``...)."""
    description = parse_prompt(task.content or "").task_description or ""
    words = description.split()
    return words[0].lower().strip(":,.") if words else ""


def short(items: list[str], limit: int = 4) -> str:
    """``a, b, c and 5 more`` for log lines and summaries."""
    if len(items) <= limit:
        return ", ".join(items)
    return f"{', '.join(items[:limit])} and {len(items) - limit} more"
