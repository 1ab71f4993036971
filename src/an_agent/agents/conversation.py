"""`PeerConversation`: how a lab behaviour talks to other agents (draft-wang 5.3), mixed into `LabBehaviour`.

- `find_peers`: the agents with a skill, asked of the lab's directory agent when there is one;
- `ask`: `propose` (FEASIBILITY, and a second round on the peer's counter-proposal when the requester
  accepts it), then `assign` (taskAssign with the payload as a data-param) and wait for the end by
  notification; the payload's schema is negotiated with the peer first (`negotiated_value`,
  `an_agent.agents.schema_use`);
- `evaluate`: FULFILLMENT on a peer's task, judged by the requester.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from an_agent import tracing
from an_agent.agents import payloads
from an_agent.agents.environment import AgentEnvironment
from an_agent.agents.exchange import InputAnswer
from an_agent.agents.failures import TaskFailure
from an_agent.agents.peers import Peers, TaskHandle
from an_agent.agents.schema_use import adopt_evolved_keys, supported_versions
from an_agent.errors import RpcError, SchemaError, SessionsClosed, TransportError
from an_agent.model import CommuType, NegotiationRequest, NegotiationType, Task, TaskStatus, build_prompt
from an_agent.runtime.schemas import shared_embedder
from an_agent.schemas.fulfilment import Expectation, Fulfilment, fulfilment_request_content
from an_agent.schemas.validate import validate_payload

DELIVERY_ATTEMPTS = 6
"""How many times `PeerConversation.deliver` sends a report the peer could not take."""
DELIVERY_RETRY_S = 60.0
"""Simulated seconds before the second attempt, doubled before each next (60 s to 32 min: about an hour
in all, for a restarting peer to serve again or a full disk to be freed)."""
PASSING_TAGS = frozenset({"resource-denied", "operation-failed", "in-use", "lock-denied"})
"""rpc-error tags of a refusal that may pass (the peer is short of space, busy, failing for a while)."""


T = TypeVar("T")


def redeliver(
    send: Callable[[], T], what: str, peer: str, sleep: Callable[[float], None], note: Callable[[str, str], None]
) -> T | None:
    """``send()``, again while it does not get through: the peer cannot be reached (`TransportError`), or
    refuses for a reason that may pass (`PASSING_TAGS`). Up to `DELIVERY_ATTEMPTS` times, `DELIVERY_RETRY_S`
    seconds of ``sleep`` after the first and twice as long before each next; each retry noted (``retry``),
    and giving up (``report_failed``), by ``note(kind, text)`` naming ``what`` (a task's slug) and ``peer``.

    Returns what ``send`` returned, or None when it never got through. Any other error is raised, and
    `SessionsClosed` (the agent stops: no later attempt could be sent).
    """
    for attempt in range(1, DELIVERY_ATTEMPTS + 1):
        try:
            return send()
        except SessionsClosed:
            raise
        except (RpcError, TransportError) as exc:
            passing = isinstance(exc, TransportError) or exc.error_tag in PASSING_TAGS
            if not passing or attempt == DELIVERY_ATTEMPTS:
                note("report_failed", f"{what} not delivered to {peer} after {attempt} attempt(s): {exc}")
                return None
            wait = DELIVERY_RETRY_S * 2 ** (attempt - 1)
            note("retry", f"{what} not delivered to {peer} ({exc}); again in {wait:g} s")
            sleep(wait)
    return None


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


class PeerConversation:
    """The peer side of `LabBehaviour` (module docstring); the host class provides these attributes."""

    env: AgentEnvironment
    peers: Peers
    _lock: threading.Lock
    _ids: dict[str, int]

    @property
    def name(self) -> str:
        return self.env.name

    def note(self, kind: str, text: str, **details: Any) -> None:
        span = tracing.current()
        if span is not None:  # the timeline can be filtered by trace
            details.setdefault("trace_id", span.trace_id)
        self.env.journal.note(self.name, kind, text, **details)

    def new_task_id(self, slug: str) -> str:
        """A task id unique for this agent and the same in every run of the topology (no clock, no random).

        After a restart (`AgentEnvironment.incarnation` above 1) the ids carry ``.rN``: the counter starts
        again, and the ids it gave before the agent died are taken at its peers.
        """
        with self._lock:
            count = self._ids.get(slug, 0) + 1
            self._ids[slug] = count
        incarnation = self.env.incarnation
        return (
            f"{self.name}.{slug}" + (f".r{incarnation}" if incarnation > 1 else "") + (f".{count}" if count > 1 else "")
        )

    def find_peers(self, skill: str) -> list[str]:
        """The agents this one may talk to that have ``skill`` (sorted): asked of the lab's directory
        agent when it has one (``find-agents``, filtered by ``talks_to``), else read from the topology."""
        if self.env.finder is not None:
            return sorted(self.env.finder.find(skill))
        return sorted(e.name for e in self.env.directory if skill in e.skills)

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

    def deliver(
        self, peer: str, slug: str, target: str, description: str, value: dict[str, Any], **options: Any
    ) -> Outcome | None:
        """`ask`, sent again while the request does not get through: ``peer`` cannot be reached, or refuses
        for a reason that may pass (`PASSING_TAGS`: its state directory is full, it is restarting). Up to
        `DELIVERY_ATTEMPTS` times, `DELIVERY_RETRY_S` simulated seconds after the first and twice as long
        before each next, each with a new task id.

        For what must not be lost, like an incident report. None (and a ``report_failed`` note) when it
        never got through; a peer that took the task and failed it is an `Outcome` (not sent again).
        ``options``: those of `ask`.
        """
        return redeliver(
            lambda: self.ask(peer, slug, target, description, value, **options),
            slug,
            peer,
            self.env.scheduler.sleep,
            self.note,
        )

    def ask_surely(
        self, peer: str, slug: str, target: str, description: str, value: dict[str, Any], **options: Any
    ) -> Outcome:
        """`deliver`, and `TaskFailure` when the request never got through: the caller's task fails saying
        why, instead of its activity dying on the peer's refusal (found by lab soak)."""
        outcome = self.deliver(peer, slug, target, description, value, **options)
        if outcome is None:
            raise TaskFailure(f"{peer} did not take {slug}: it refused or could not be reached (see report_failed)")
        return outcome

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
        with tracing.sending(self.name, f"task {task_id} to {peer} over {face}", task_id=task_id, peer=peer, face=face):
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
