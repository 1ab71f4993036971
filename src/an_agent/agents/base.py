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
- Talking to other agents: `ask` negotiates the payload's schema with the peer (`negotiated_value`,
  `an_agent.agents.schema_use`), then runs the draft's section 5.3 sequence — FEASIBILITY,
  a second round on the peer's counter-proposal when the requester accepts it, then taskAssign — and
  waits for the result by notification.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from an_agent import tracing
from an_agent.agents import payloads
from an_agent.agents.environment import AgentEnvironment, Alarm, Shutdown
from an_agent.agents.exchange import InputAnswer
from an_agent.agents.findings import Finding
from an_agent.agents.peers import Peers, TaskHandle
from an_agent.agents.schema_use import adopt_evolved_keys, supported_versions
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
from an_agent.schemas.fulfilment import Expectation, Fulfilment, fulfilment_request_content, request_expectation
from an_agent.schemas.validate import ValidatedPayload, validate_payload

log = logging.getLogger(__name__)


class TaskFailure(Exception):
    """Raised by a role's handler to end the task as failed; the message is the reason."""


class NotFeasible(Exception):
    """Raised by a role's feasibility check; ``counter`` is a counter-proposal envelope, if any."""

    def __init__(self, reason: str, counter: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.counter = counter


@dataclass(frozen=True)
class Outcome:
    """What `LabBehaviour.ask` got: the peer's task (None when no agreement), and the negotiation trail."""

    task: Task | None
    agreed: dict[str, Any] | None
    """The payload finally assigned (the counter-proposal when one was accepted)."""
    refusals: tuple[str, ...] = ()

    @property
    def finished(self) -> bool:
        return self.task is not None and self.task.status == TaskStatus.FINISHED

    def result(self) -> dict[str, Any]:
        """The task's JSON result ({} when there is none)."""
        if self.task is None or self.task.result is None or not self.task.result.data:
            return {}
        try:
            value = json.loads(self.task.result.data)
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}

    @property
    def reason(self) -> str:
        if self.task is None:
            return "; ".join(self.refusals) or "not assigned"
        return (self.task.result.reason if self.task.result else None) or str(self.task.status)


Accept = Callable[[dict[str, Any]], bool]


@dataclass(frozen=True)
class Agreement:
    """The result of a FEASIBILITY negotiation: the task id and payload to assign (None: no agreement)."""

    task_id: str | None
    value: dict[str, Any]
    refusals: tuple[str, ...] = ()


class LabBehaviour(Behaviour):
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

    @property
    def name(self) -> str:
        return self.env.name

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
            validated = payloads.validate(value, self.env.accepts_evolved_keys) if value is not None else None
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
    def new_task_id(self, slug: str) -> str:
        """A task id unique for this agent and the same in every run of the topology (no clock, no random)."""
        with self._lock:
            count = self._ids.get(slug, 0) + 1
            self._ids[slug] = count
        return f"{self.name}.{slug}" + (f".{count}" if count > 1 else "")

    def note(self, kind: str, text: str, **details: Any) -> None:
        span = tracing.current()
        if span is not None:  # the timeline can be filtered by trace
            details.setdefault("trace_id", span.trace_id)
        self.env.journal.note(self.name, kind, text, **details)

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
        with tracing.use(span):
            yield

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
        run.finish(
            TaskResult(
                summary=summary, reason=summary, format="application/json", data=json.dumps(result, sort_keys=True)
            )
        )

    def ask(
        self,
        peer: str,
        slug: str,
        target: str,
        description: str,
        value: dict[str, Any],
        accept_counter: Accept | None = None,
        expected_response: str | None = None,
        on_input: InputAnswer | None = None,
    ) -> Outcome:
        """`propose`, then taskAssign and wait for the end (by notification).

        Returns the peer's finished or failed task, or an `Outcome` without task when no agreement was
        reached (its refusals say why). ``on_input`` answers the peer's ``input-required`` meanwhile.
        """
        agreed = self.propose(peer, slug, target, description, value, accept_counter)
        if agreed.task_id is None:
            return Outcome(None, None, agreed.refusals)
        handle = self.assign(peer, agreed.task_id, target, description, agreed.value, expected_response, on_input)
        return Outcome(handle.result(), agreed.value, agreed.refusals)

    def propose(
        self,
        peer: str,
        slug: str,
        target: str,
        description: str,
        value: dict[str, Any],
        accept_counter: Accept | None = None,
    ) -> Agreement:
        """FEASIBILITY with ``peer``, and a second round on its counter-proposal when ``accept_counter`` takes it."""
        task_id = self.new_task_id(slug)
        link = self.peers.peer(peer)
        value = self.negotiated_value(peer, value)
        refusals: list[str] = []
        proposal = value
        for _ in range(2):
            answer = link.negotiate(
                NegotiationRequest(
                    task_id,
                    NegotiationType.FEASIBILITY,
                    [payloads.proposal(target, description, proposal)],
                    self.name,
                    peer,
                )
            )
            if answer.feasible:
                return Agreement(task_id, proposal, tuple(refusals))
            refusals.append(f"{peer}: {answer.reason or 'not feasible'}")
            counter = payloads.prompt_payload(answer.counter_proposal or "")
            if counter is None or accept_counter is None or counter == proposal or not accept_counter(counter):
                break
            proposal = counter
        return Agreement(None, value, tuple(refusals))

    def negotiated_value(self, peer: str, value: dict[str, Any]) -> dict[str, Any]:
        """``value`` for the template ``peer`` serves this agent (`an_agent.agents.schema_use`).

        Negotiates the version (``get-schema-template``), moves ``other`` content into the experimental
        keys of that template when it maps (journal note ``evolved_keys_used``) and validates the result
        client side. A peer that serves no templates (``schemas: off``) gets ``value`` as it is; no
        common version ends the calling task (`TaskFailure`).
        """
        scenario = payloads.templates().get(value["schema_id"]).scenario
        try:
            agreed = self.peers.peer(peer).schema(scenario, supported_versions(value["schema_id"]))
        except SchemaError as exc:
            raise TaskFailure(f"{peer}: {exc}: " + "; ".join(exc.problems)) from None
        except RpcError as exc:
            if exc.error_tag in ("operation-not-supported", "unknown-element"):
                return value  # no schema service on the peer: the shipped template is all there is
            raise
        payload = dict(value["payload"])
        adopted = adopt_evolved_keys(agreed.template, payload, shared_embedder, self.env.scheduler.now())
        if adopted.keys:
            self.note(
                "evolved_keys_used",
                f"payload for {peer} uses experimental key(s) {', '.join(adopted.keys)} of {agreed.schema_id} "
                "instead of 'other'",
                keys=list(adopted.keys),
                schema_id=agreed.schema_id,
                peer=peer,
            )
        envelope = {"schema_id": agreed.schema_id, "payload": adopted.payload}
        validate_payload(agreed.template, envelope)  # a bug of ours is found here, not by the peer
        return envelope

    def assign(
        self,
        peer: str,
        task_id: str,
        target: str,
        description: str,
        value: dict[str, Any],
        expected_response: str | None = None,
        on_input: InputAnswer | None = None,
    ) -> TaskHandle:
        """taskAssign with the payload as a data-param; the handle waits for the end (``on_input``: `ask`)."""
        param = payloads.data_param(f"{task_id}.payload", value, f"{value['schema_id']} payload of {task_id}")
        task = Task(
            task_id=task_id,
            send_from=self.name,
            send_to=peer,
            commu_type=CommuType.TASK_ASSIGN,
            content=build_prompt(target, description),
            task_async=True,
            expected_response=expected_response,
            msg_data=[param.id],
            traceparent=tracing.outgoing(),  # NETCONF: the an-agent-trace leaf; A2A: message metadata
        )
        link = self.peers.peer(peer)
        face = link.face
        tracing.event(
            self.name, "task.sent", f"task {task_id} to {peer} over {face}", task_id=task_id, peer=peer, face=face
        )
        return link.assign(task, [param], on_input)

    def evaluate(self, peer: str, outcome: Outcome, keys: list[str], covers: dict[str, list[str]]) -> bool:
        """FULFILLMENT on a peer's task, judged by this agent (the requester): does the result give ``keys``
        and cover ``covers``? The criteria go to the peer in the negotiation; the peer's answer is noted
        (``fulfillment_disputed`` when it differs) but the verdict is this agent's own judgement.
        """
        if outcome.task is None:
            return False
        expectation = Expectation(keys=tuple(keys), covers={k: tuple(v) for k, v in covers.items()})
        judgement = expectation.judge(outcome.task)
        answer = self.peers.peer(peer).negotiate(
            NegotiationRequest(
                outcome.task.task_id,
                NegotiationType.FULFILLMENT,
                [fulfilment_request_content(outcome.task.task_id, expectation)],
                self.name,
                peer,
            )
        )
        verdict = Fulfilment(judgement, answer.fulfilled, answer.reason)
        if verdict.disagrees:
            self.note(
                "fulfillment_disputed",
                f"{peer} says task {outcome.task.task_id} is "
                + ("fulfilled" if answer.fulfilled else "not fulfilled")
                + f"; {self.name} judges it "
                + ("fulfilled" if verdict.fulfilled else f"not fulfilled: {judgement.reason}"),
                task_id=outcome.task.task_id,
                fulfilled=verdict.fulfilled,
            )
        return verdict.fulfilled


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
