"""The A2A gateway: any A2A v1 agent behind a NETCONF face (``serve --a2a-upstream URL``, topology ``a2a_upstream``).

The agent's profile and templates are projected back from the upstream's agent card (the inverse of
`an_agent.a2a.card`): `card_profile` takes name, description, provider, version and the skills with
their input/output modes; `card_templates` turns each JSON Schema of the input/output-schemas
extension into a template (`an_agent.schemas.from_jsonschema`). A card without the extension still
works: its tasks travel as text.

`GatewayBehaviour` relays each task as an A2A message — the prompt's task description as text, plus a
data part with the schema's media type when the task's payload is of a schema the card declares —
follows the remote task's statuses through the one mapping table (`an_agent.a2a.states`, read by
`an_agent.a2a.client`), passes ``input-required`` both ways (the remote agent's question goes to our
assigner, the answer back as a follow-up message), cancels the remote task when ours is cancelled,
and returns the artifact as the task's result (a JSON object checked against the skill's declared
response schema, else text).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from an_agent import tracing
from an_agent.a2a.client import A2AAgentClient
from an_agent.agents.environment import AgentEnvironment
from an_agent.agents.exchange import input_text
from an_agent.agents.peers import Peers
from an_agent.agents.sdk import (
    AgentProfile,
    LabBehaviour,
    NotFeasible,
    Skill,
    Task,
    TaskFailure,
    TaskResult,
    TaskRun,
    TaskStatus,
    ValidatedPayload,
)
from an_agent.errors import AnAgentError, ConfigError, SchemaError
from an_agent.model import Capability, ConditionNotification, parse_prompt
from an_agent.schemas.from_jsonschema import template_from_json_schema
from an_agent.schemas.template import Template

log = logging.getLogger(__name__)

Auth = tuple[str, str] | str | None
"""HTTP Basic ``(user, password)``, a bearer token, or nothing."""
NEGOTIATION_TYPES = ["acp-task-feasibility-negotiation-v1.0", "acp-task-fulfillment-negotiation-v1.0"]
INPUT_SECONDS = 300.0
"""How long the gateway waits for its assigner's answer to the upstream's question (real time)."""


def open_upstream(url: str, trust: Path | None, auth: Auth, timeout: float = 30.0) -> A2AAgentClient:
    """A client of the upstream with its card read; `ConfigError` saying why when it cannot be."""
    user, password, token = (auth[0], auth[1], None) if isinstance(auth, tuple) else (None, None, auth)
    try:
        return A2AAgentClient.connect(url, user, password, timeout=timeout, trust=trust, token=token)
    except AnAgentError as exc:
        raise ConfigError(f"the A2A upstream {url} does not answer with an agent card: {exc}") from None


def card_profile(card: dict[str, Any], name: str | None = None, role: str | None = None) -> AgentProfile:
    """The draft-wang profile of an agent card (module docstring); ``name``/``role`` override the card's."""
    provider: dict[str, Any] = card["provider"] if isinstance(card.get("provider"), dict) else {}
    skills = [
        Skill(
            name=str(s.get("id") or s.get("name")),
            description=s.get("description"),
            tags=[str(t) for t in s.get("tags") or []],
            input_modes=[str(m) for m in s.get("inputModes") or card.get("defaultInputModes") or ["text/plain"]],
            output_modes=[str(m) for m in s.get("outputModes") or card.get("defaultOutputModes") or ["text/plain"]],
            examples=[str(e) for e in s.get("examples") or []],
        )
        for s in card.get("skills") or []
        if isinstance(s, dict) and (s.get("id") or s.get("name"))
    ]
    card_name = str(card.get("name") or "a2a-agent")
    return AgentProfile(
        name=name or card_name,
        alias=card_name if name else None,
        description=str(card.get("description") or f"A2A agent {card_name} (through an an-agent gateway)"),
        version=str(card.get("version") or "1.0.0"),
        provider=str(provider.get("organization") or "unknown (A2A agent card names none)"),
        type=role or "a2a-gateway",
        skills=skills,
        domain="A2A",
        capability=Capability(streaming=False, push_notifications=True, negotiate=list(NEGOTIATION_TYPES)),
    )


def card_templates(card: dict[str, Any], url: str) -> list[Template]:
    """The card's JSON Schemas as templates; `ConfigError` listing every problem when one cannot be served."""
    schemas = card.get("schemas")
    if schemas is None:  # the extension's params, when the root member is absent
        for extension in (card.get("capabilities") or {}).get("extensions") or []:
            if isinstance(extension, dict) and isinstance((extension.get("params") or {}).get("schemas"), dict):
                schemas = extension["params"]["schemas"]
    if schemas is None:
        return []
    if not isinstance(schemas, dict):
        raise ConfigError(f"the A2A upstream {url} declares 'schemas' that is not an object")
    templates, problems = [], []
    for name, schema in schemas.items():
        try:
            templates.append(template_from_json_schema(str(name), schema))
        except SchemaError as exc:
            problems.append(f"{exc}: " + "; ".join(exc.problems))
    if problems:
        raise ConfigError(f"the A2A upstream {url} declares a schema the gateway cannot serve: " + " | ".join(problems))
    return templates


def write_templates(templates: list[Template], directory: Path, shipped: set[str]) -> Path:
    """The templates a gateway serves besides the shipped ones, as ``DIR/<schema_id>.json`` (0600 in 0700)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for old in directory.glob("*.json"):
        old.unlink()
    for template in templates:
        if template.schema_id in shipped:  # the shipped template of that name is served already
            continue
        path = directory / f"{template.schema_id}.json"
        path.write_text(json.dumps(template.to_dict(), indent=2), encoding="utf-8")
        path.chmod(0o600)
    return directory


class GatewayBehaviour(LabBehaviour):
    """Relays tasks to the A2A agent ``open()`` connects to (module docstring)."""

    description = "gateway to an A2A agent: its tasks relayed over A2A"

    def __init__(self, env: AgentEnvironment, peers: Peers, open: Callable[[], A2AAgentClient], url: str) -> None:
        super().__init__(env, peers)
        self._open = open
        self.url = url
        self._upstream: A2AAgentClient | None = None
        self._connect = threading.Lock()

    def _client(self) -> A2AAgentClient:
        with self._connect:
            if self._upstream is None:
                try:
                    self._upstream = self._open()
                except ConfigError as exc:
                    raise TaskFailure(str(exc)) from None
            return self._upstream

    def feasibility(self, description: str, payload: ValidatedPayload | None, requester: str | None) -> str:
        """A2A has no negotiation: feasible when the upstream declares the payload's schema (or for text)."""
        if payload is None:
            return f"relayed as text to the A2A agent at {self.url}"
        try:
            declared = self._client().schemas
        except TaskFailure as exc:
            raise NotFeasible(str(exc)) from None
        if payload.schema_id not in declared:
            raise NotFeasible(
                f"the A2A agent at {self.url} declares no schema {payload.schema_id} "
                f"(it declares {', '.join(sorted(declared)) or 'none'})"
            )
        return f"relayed to the A2A agent at {self.url} as {payload.schema_id}"

    def handle(self, task: Task, payload: ValidatedPayload | None, run: TaskRun) -> None:
        client = self._client()
        # the task description as text (what to do), and the payload as a data part when the card declares it
        message: dict[str, Any] = {"text": parse_prompt(task.content or "").task_description or task.content or ""}
        if payload is not None and payload.schema_id in client.schemas:
            values = dict(payload.values)
            if payload.other.fragments:
                values["other"] = list(payload.other.fragments)
            message.update(scenario=payload.schema_id, payload=values)
        self.note("relayed", f"task {task.task_id} relayed to the A2A agent at {self.url}", task_id=task.task_id)
        try:
            # the message carries the task's trace (A2A metadata traceparent), like a task sent to a peer
            note = f"task {task.task_id} relayed to {self.url} over a2a"
            with tracing.sending(self.name, note, task_id=task.task_id, peer=self.url, face="a2a"):
                events = client.stream(**message)
            while True:
                remote = self._follow(client, events, run)
                if remote is None:
                    return
                if remote.status != TaskStatus.INPUT_REQUIRED:
                    self._end(run, remote)
                    return
                events = self._ask(client, remote, run)
                if events is None:
                    return
        except AnAgentError as exc:
            raise TaskFailure(f"the A2A agent at {self.url}: {exc}") from None

    def _follow(self, client: A2AAgentClient, events: Any, run: TaskRun) -> Task | None:
        """Follow the remote task until it ends or asks for input; the task as it is then (None: cancelled)."""
        remote_id = ""
        status: TaskStatus | None = None
        done = threading.Event()
        cancelled = threading.Event()

        def cancel_upstream() -> None:
            while not done.is_set():
                if run.wait_cancelled(0.2) and remote_id:
                    cancelled.set()
                    try:
                        client.cancel(remote_id)
                    except AnAgentError as exc:
                        log.info("%s: cancelling %s upstream: %s", self.name, remote_id, exc)
                    return

        watcher = threading.Thread(target=cancel_upstream, name=f"{self.name} cancel watch", daemon=True)
        watcher.start()
        try:
            for event in events:
                if isinstance(event, Task):
                    remote_id, new = event.task_id, event.status
                    reason = event.result.reason if event.result else None
                else:
                    assert isinstance(event, ConditionNotification)
                    remote_id, new, reason = remote_id or event.task_id, event.status, event.reason
                if new is None:
                    raise TaskFailure(f"the A2A agent at {self.url} reports a state the draft has no status for")
                if new != status and new in (TaskStatus.PROCESSING, TaskStatus.BLOCKED, TaskStatus.SUSPENDED):
                    run.set_status(new, reason)
                status = new
                if new.terminal or new == TaskStatus.INPUT_REQUIRED:
                    break
        finally:
            done.set()
        if cancelled.is_set() or run.cancelled:
            return None
        if not remote_id:
            raise TaskFailure(f"the A2A agent at {self.url} answered without a task")
        return client.get_task(remote_id)

    def _ask(self, client: A2AAgentClient, remote: Task, run: TaskRun) -> Any:
        """The upstream's ``input-required`` asked of our assigner; the stream after the answer (None: none came)."""
        asked = [parse_prompt(i.required).target_object or i.required for i in remote.input_required]
        reason = (remote.result.reason if remote.result else None) or "the A2A agent asks for input"
        keys = [k for k in asked if k] or ["answer"]
        answers = self.ask_input(run, keys, f"{self.url} asks: {reason}", INPUT_SECONDS)
        if answers is None:
            if not run.cancelled:
                raise TaskFailure(f"the A2A agent at {self.url} asked for {', '.join(keys)}; no answer came")
            return None
        if asked:  # it named keys (an agent that speaks the input-required data part): answer them as data
            return client.provide_input(remote.task_id, keys=answers)
        return client.provide_input(
            remote.task_id, text=input_text(answers) if keys != ["answer"] else answers["answer"]
        )

    def _end(self, run: TaskRun, remote: Task) -> None:
        result = remote.result or TaskResult()
        if remote.status != TaskStatus.FINISHED:
            why = result.reason or str(remote.status)
            raise TaskFailure(f"the A2A agent at {self.url} ended the task {remote.status}: {why}")
        summary = result.summary or f"done by the A2A agent at {self.url}"
        if result.data is not None and (result.format or "").startswith("application/json"):
            value = json.loads(result.data)
            if isinstance(value, dict):
                self.finish(run, summary, value)
                return
        run.finish(TaskResult(summary=summary, reason=summary, format=result.format or "text/plain", data=result.data))

    def stop_upstream(self) -> None:
        """Close the A2A client (its connections and event loop)."""
        with self._connect:
            if self._upstream is not None:
                self._upstream.close()
                self._upstream = None
