"""Tasks from text alone: the offline NL mapping builds the payload, or the task asks for the missing keys.

The operation-layer half of the input/output-schemas extension's request flow (section 3, "text only")
for any face (the A2A face calls `Operations.assign_text`):

1. A skill of the agent declares input schemas (``application/json;schema=<name>`` input modes) and the
   agent serves them: the text is mapped (`an_agent.schemas.mapping.map_text`) onto each of them and the
   best mapping wins (complete ones first, then the highest total confidence).
   - Every required key found: the task is created with that payload as a structured data-param
     (``<id>-payload``), validated like any payload.
   - Some required keys missing: the task is created with what was found as a data-param
     ``<id>-mapped`` (``application/json``: a partial payload is no payload yet), and before the
     agent's behaviour sees it, the task goes ``input-required`` with one entry per missing key (target
     object: the key's name; description: its semantic description, with its allowed values and format,
     in the caller's preferred language when the template has it).
2. The client answers by an edit of the task (A2A: a message on the task; NETCONF: data-params added to
   its ``msg-data``): a structured or plain JSON data-param gives keys, a ``text/plain`` one is mapped
   again. The answer, merged with what is known, is checked at admission (`PayloadCompletion.check`):
   an invalid value refuses the edit naming the key, nothing changes and the task still waits. An answer
   that leaves required keys open brings ``input-required`` again with the remaining ones. Once complete,
   the payload is validated once more as a whole (defaults applied), becomes the task's payload
   (`AgentInfo.payload`) and the behaviour runs the task to its end.
3. No declared input schema (or an agent serving no schemas): the text is the task's prompt, as before.

Nothing of it lives only in memory: the ``<id>-mapped`` data-param also names the client and the
language, and each answer is a data-param in the task's ``msg-data``; after a restart a task that was
still being completed is rebuilt from them (`PayloadCompletion.recover`) and asks again for what is
still missing, or runs when its answers already complete the payload.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from an_agent.errors import AnAgentError, RpcError, SchemaError
from an_agent.model import AgentProfile, DataParam, DataType, NegotiationRequest, NegotiationResult, Task, build_prompt
from an_agent.runtime.behaviour import AgentInfo, Behaviour, ProvidedInput, TaskRun
from an_agent.runtime.requests import AssignTask
from an_agent.runtime.schemas import SchemaService
from an_agent.schemas.languages import DEFAULT_LANGUAGE, localize
from an_agent.schemas.mapping import MappingResult, map_text
from an_agent.schemas.template import OTHER_KEY, Template
from an_agent.schemas.validate import ValidatedPayload, media_type, schema_id_from_media_type, validate_payload

MAPPED_SUFFIX = "-mapped"
"""Data-param id suffix of the keys the text gave, while required keys are still missing."""
PAYLOAD_SUFFIX = "-payload"
"""Data-param id suffix of a payload mapped completely from the text."""
WAITING_PER_CLIENT = 16
"""Default bound of `PayloadCompletion.waiting_per_client`."""
_MISSING = re.compile(r"^(\S+): required key is (?:missing|null)$")


def template_index(templates: Sequence[Template]) -> dict[str, Template]:
    """Templates by schema_id and by scenario (a scenario names its newest version)."""
    index: dict[str, Template] = {}
    for template in sorted(templates, key=lambda t: t.schema_id):
        index[template.scenario] = template  # sorted: the last (highest _vN) wins
    index.update({t.schema_id: t for t in templates})
    return index


def input_templates(profile: AgentProfile, templates: Sequence[Template]) -> list[Template]:
    """The templates the profile's skills accept as input (their ``application/json;schema=`` modes)."""
    by_name = template_index(templates)
    out: list[Template] = []
    for skill in profile.skills:
        for mode in skill.input_modes:
            schema = schema_id_from_media_type(mode)
            template = by_name.get(schema) if schema is not None else None
            if template is not None and template not in out:
                out.append(template)
    return out


def served_templates(service: SchemaService | None) -> list[Template]:
    """The templates an agent serves now, global patches applied (none when it serves no schemas)."""
    if service is None:
        return []
    engine = service.engine
    return [engine.template(t.schema_id, None, record_delivery=False) for t in engine.registry.templates()]


@dataclass(frozen=True)
class AssignText:
    """A task asked for in words only: ``task`` (its content built from the text, no msg-data) and ``text``.

    ``language``: the caller's preferred language for what the task asks back (a shipped one, see
    `an_agent.schemas.languages`).
    """

    task: Task
    text: str
    language: str = DEFAULT_LANGUAGE


@dataclass
class Collecting:
    """A task whose payload is being completed: what is known so far, for which client."""

    schema_id: str
    client_id: str
    known: dict[str, Any]
    language: str = DEFAULT_LANGUAGE
    other: list[str] = field(default_factory=list)


class PayloadCompletion:
    """Maps text to payloads and completes the partial ones with the client (module docstring); thread-safe."""

    def __init__(
        self, profile: AgentProfile, now: Callable[[], float], waiting_per_client: int = WAITING_PER_CLIENT
    ) -> None:
        self.profile = profile
        self.waiting_per_client = waiting_per_client
        """At most this many tasks of one client wait for its answers at once (a new one is refused)."""
        self.schemas: SchemaService | None = None
        """Set when the agent serves schemas (`Operations.attach_schemas`); without it text is a prompt."""
        self._now = now
        self._lock = threading.Lock()
        self._collecting: dict[str, Collecting] = {}

    # -- mapping ------------------------------------------------------------------------------------
    def input_templates(self) -> list[Template]:
        """The templates the skills accept, as served now."""
        return input_templates(self.profile, served_templates(self.schemas))

    def map(self, text: str) -> MappingResult | None:
        """The best mapping of ``text`` onto an input template (complete first), None when there is none."""
        best: tuple[tuple[bool, float], MappingResult] | None = None
        if self.schemas is None:
            return None
        for template in self.input_templates():
            result = map_text(template, text, self.schemas.engine.embedder, now=self._now())
            score = (not result.missing_required, sum(a.confidence for a in result.assignments))
            if best is None or score > best[0]:
                best = (score, result)
        return None if best is None else best[1]

    def prepare(self, request: AssignText, client_id: str) -> AssignTask:
        """The assignment for ``request`` (module docstring, 1.); a task that will ask for keys is open
        here (`drop` it when its assignment is refused)."""
        task = copy.deepcopy(request.task)
        mapped = self.map(request.text)
        if mapped is None:
            return AssignTask(task)
        if not mapped.missing_required:
            source = "mapped from the text"
            param = structured_param(f"{task.task_id}{PAYLOAD_SUFFIX}", mapped.schema_id, mapped.payload, source)
        else:
            known = {k: v for k, v in mapped.payload.items() if k != OTHER_KEY}
            collecting = Collecting(mapped.schema_id, client_id, known, request.language, mapped.other)
            param = mapped_param(f"{task.task_id}{MAPPED_SUFFIX}", collecting, mapped.payload)
            with self._lock:
                if task.task_id in self._collecting:  # never replace (nor, on refusal, drop) another task's
                    raise RpcError.data_exists(
                        f"task {task.task_id} exists already", f"/irtf-agent:tasks/task[task-id='{task.task_id}']"
                    )
                waiting = sorted(i for i, c in self._collecting.items() if c.client_id == client_id)
                if len(waiting) >= self.waiting_per_client:
                    # Each waits on a thread until answered, cancelled or timed out: one client, few at once.
                    raise RpcError(
                        "application",
                        "resource-denied",
                        f"{client_id} already has {len(waiting)} tasks waiting for its answers (at most "
                        f"{self.waiting_per_client}): answer or cancel one of them first ({', '.join(waiting[:3])}"
                        f"{', ...' if len(waiting) > 3 else ''})",
                    )
                self._collecting[task.task_id] = collecting
        task.msg_data = [param.id]
        return AssignTask(task, (param,))

    def _template(self, collecting: Collecting) -> Template:
        assert self.schemas is not None
        return self.schemas.engine.template(collecting.schema_id, collecting.client_id, record_delivery=False)

    # -- the collecting state -------------------------------------------------------------------------
    def open(self, task_id: str, collecting: Collecting) -> None:
        with self._lock:
            self._collecting[task_id] = collecting

    def drop(self, task_id: str) -> None:
        with self._lock:
            self._collecting.pop(task_id, None)

    def collecting(self, task_id: str) -> Collecting | None:
        """What the task's payload holds so far, None when it is not being completed."""
        with self._lock:
            return self._collecting.get(task_id)

    def recover(self, task: Task, params: Sequence[DataParam]) -> Collecting | None:
        """After a restart: the state of a task that was being completed, from its ``msg-data`` entries
        ``params`` (the ``<id>-mapped`` one, then the answers in the order given); None when the task was
        not being completed (no mapped keys, or its payload complete) or the mapped entry is unreadable."""
        mapped_id, payload_id = f"{task.task_id}{MAPPED_SUFFIX}", f"{task.task_id}{PAYLOAD_SUFFIX}"
        mapped = next((p for p in params if p.id == mapped_id), None)
        if mapped is None or self.schemas is None or any(p.id == payload_id for p in params):
            return None
        try:
            envelope = json.loads(mapped.data or "")
            schema_id, payload = str(envelope["schema_id"]), dict(envelope["payload"])
            client_id = str(envelope.get("client_id") or task.send_from or "")
            language = str(envelope.get("language") or DEFAULT_LANGUAGE)
        except (ValueError, KeyError, TypeError):
            return None
        other = payload.pop(OTHER_KEY, [])
        collecting = Collecting(
            schema_id, client_id, payload, language, [str(o) for o in other] if isinstance(other, list) else []
        )
        answers = [p for p in params if p.id != mapped_id]
        try:
            known = self.merged(collecting, answers)  # each was checked at its admission
        except RpcError:
            known = collecting.known
        collecting = Collecting(schema_id, client_id, known, language, collecting.other)
        self.open(task.task_id, collecting)
        return collecting

    def missing(self, collecting: Collecting) -> list[str]:
        """The required keys of the template that have no value yet, in template order."""
        return [
            k.key_name for k in self._template(collecting).keys if k.required and k.key_name not in collecting.known
        ]

    def prompts(self, collecting: Collecting, keys: Sequence[str]) -> list[str]:
        """One ``input-required`` prompt per key: its name, then its description (allowed values, format)."""
        template = localize(self._template(collecting), collecting.language)
        out = []
        for name in keys:
            key = template.key(name)
            assert key is not None
            described = f"{key.semantic_description.strip()} ({key.key_type}, key of {template.schema_id})"
            out.append(build_prompt(name, described))
        return out

    # -- answers --------------------------------------------------------------------------------------
    def merged(self, collecting: Collecting, params: Sequence[DataParam]) -> dict[str, Any]:
        """The keys known once ``params`` (an answer) are added; `RpcError` naming each invalid key.

        A JSON data-param (``application/json``, with or without a schema; an envelope or the bare keys)
        gives its keys; a ``text/plain`` one is mapped onto the template (keys that are still missing
        only, so the words of an answer cannot silently change what was agreed). Other params are left
        to the behaviour.
        """
        template = self._template(collecting)
        known = dict(collecting.known)
        for param in params:
            fmt = (param.format or "").split(";")[0].strip().lower()
            if fmt == "application/json":
                known.update(self._keys_of(param))
            elif fmt == "text/plain" and param.data and self.schemas is not None:
                mapped = map_text(template, param.data, self.schemas.engine.embedder, now=self._now())
                known.update({k: v for k, v in mapped.payload.items() if k != OTHER_KEY and k not in collecting.known})
        self._check(template, known, collecting)
        return known

    def _keys_of(self, param: DataParam) -> dict[str, Any]:
        where = f"/irtf-agent:data-params[id='{param.id}']/data"
        try:
            data = json.loads(param.data or "")
        except ValueError as exc:
            raise RpcError.invalid_value(f"data-param {param.id} is not JSON: {exc}", path=where) from None
        if isinstance(data, dict) and isinstance(data.get("payload"), dict):
            data = data["payload"]
        if not isinstance(data, dict):
            raise RpcError.invalid_value(f"data-param {param.id} must hold a JSON object of keys", path=where)
        return {k: v for k, v in data.items() if v is not None}

    def _check(self, template: Template, known: dict[str, Any], collecting: Collecting) -> None:
        """Refuse an answer whose values do not fit the template (missing required keys are not a fault)."""
        try:
            validate_payload(template, {"schema_id": template.schema_id, "payload": known})
        except SchemaError as exc:
            wrong = [p for p in exc.problems if not _MISSING.match(p)]
            if wrong:
                raise RpcError.invalid_value(
                    f"the answer is not valid for {template.schema_id}: {'; '.join(wrong)}",
                    app_tag="invalid-structured-payload",
                ) from None

    def check(self, task_id: str, params: Sequence[DataParam]) -> bool:
        """At admission of an edit of a waiting task: True when the task is being completed (the answer
        was checked, merged with what is known; `RpcError` refuses it), False when it is not ours."""
        collecting = self.collecting(task_id)
        if collecting is None:
            return False
        self.merged(collecting, params)
        return True

    def complete(self, task_id: str, collecting: Collecting) -> tuple[ValidatedPayload, DataParam]:
        """The whole payload, validated as any assignment's (defaults applied), and its data-param."""
        assert self.schemas is not None
        payload = {**collecting.known, OTHER_KEY: collecting.other} if collecting.other else collecting.known
        param = structured_param(f"{task_id}{PAYLOAD_SUFFIX}", collecting.schema_id, payload, "completed")
        check = self.schemas.validate_task(Task(task_id, msg_data=[param.id]), [param], collecting.client_id)
        self.schemas.accept(check)
        return check.payloads[param.id], param


def structured_param(param_id: str, schema_id: str, payload: dict[str, Any], source: str) -> DataParam:
    """The data-param ``application/json;schema=<name>`` carrying a payload's envelope."""
    return DataParam(
        id=param_id,
        data_type=DataType.TEXT,
        description=f"{schema_id} payload ({source})",
        format=media_type(schema_id),
        data=json.dumps({"schema_id": schema_id, "payload": payload}),
    )


def mapped_param(param_id: str, collecting: Collecting, payload: dict[str, Any]) -> DataParam:
    """The data-param holding the keys a text gave while required ones are missing (not yet a payload),
    with the client and language the task asks back for (what `PayloadCompletion.recover` reads)."""
    schema_id = collecting.schema_id
    envelope = {"schema_id": schema_id, "payload": payload, "client_id": collecting.client_id}
    return DataParam(
        id=param_id,
        data_type=DataType.TEXT,
        description=f"keys of a {schema_id} payload mapped from the message text; required keys are missing",
        format="application/json",
        data=json.dumps({**envelope, "language": collecting.language}),
    )


class CompletingBehaviour(Behaviour):
    """The agent's behaviour, preceded for tasks being completed by the input-required exchange.

    ``set_payload`` makes the completed payload the task's (`AgentInfo.payload`); ``data_params`` reads
    a task's ``msg-data`` entries (to rebuild its state after a restart, `PayloadCompletion.recover`);
    ``input_seconds`` bounds the wait for each answer (None: no limit), after which the task fails saying
    what never came.

    A task being completed is not yet work for the inner behaviour: its `check_assignment` (where a
    behaviour counts the tasks it has in hand) runs once the payload is complete, just before its
    `execute`; a refusal then fails the task with the behaviour's reason. So a client that walks away
    from a question takes none of the agent's capacity, only one of its own waiting places.
    """

    def __init__(
        self,
        inner: Behaviour,
        completion: PayloadCompletion,
        set_payload: Callable[[str, ValidatedPayload], None],
        data_params: Callable[[Sequence[str]], list[DataParam]],
        input_seconds: float | None = None,
    ) -> None:
        self.inner = inner
        self.completion = completion
        self.set_payload = set_payload
        self.data_params = data_params
        self.input_seconds = input_seconds
        self._lock = threading.Lock()
        self._inner_has: set[str] = set()  # tasks the inner behaviour accepted (or resumed)

    def bind(self, agent: AgentInfo) -> None:
        self.inner.bind(agent)

    def check_assignment(self, task: Task) -> None:
        if self.completion.collecting(task.task_id) is not None:
            return  # the inner behaviour is asked once the payload is complete (class docstring)
        self._inner_accepts(task)

    def _inner_accepts(self, task: Task) -> None:
        self.inner.check_assignment(task)
        with self._lock:
            self._inner_has.add(task.task_id)

    def resumed(self, task: Task) -> None:
        self.inner.resumed(task)
        with self._lock:
            self._inner_has.add(task.task_id)

    def released(self, task: Task) -> None:
        self.completion.drop(task.task_id)
        with self._lock:
            had = task.task_id in self._inner_has
            self._inner_has.discard(task.task_id)
        if had:
            self.inner.released(task)

    def negotiate(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        return self.inner.negotiate(request, task)

    def execute(self, task: Task, run: TaskRun) -> None:
        collecting = self.completion.collecting(task.task_id)
        if collecting is None and f"{task.task_id}{MAPPED_SUFFIX}" in task.msg_data:  # read params only then
            collecting = self.completion.recover(task, self.data_params(task.msg_data))
        if collecting is not None:
            try:
                if not self._collect(task.task_id, collecting, run):
                    return
            finally:
                self.completion.drop(task.task_id)
        with self._lock:
            accepted = task.task_id in self._inner_has
        if not accepted:
            try:
                self._inner_accepts(run.task)
            except RpcError as exc:
                run.fail(f"the completed task was refused: {exc.message}")
                return
        self.inner.execute(run.task, run)

    def _collect(self, task_id: str, collecting: Collecting, run: TaskRun) -> bool:
        """Ask until every required key has a value; False when the task ended meanwhile (failed, canceled)."""
        while missing := self.completion.missing(collecting):
            prompts = self.completion.prompts(collecting, missing)
            reason = f"the request gives no value for {', '.join(missing)} ({collecting.schema_id})"
            provided = run.request_input(prompts, reason, self.input_seconds)
            if provided is None:
                if not run.cancelled:
                    run.fail(f"no value came for {', '.join(missing)}")
                return False
            collecting = self._answered(task_id, collecting, provided)
        try:
            payload, _ = self.completion.complete(task_id, collecting)
        except (RpcError, AnAgentError) as exc:
            run.fail(f"the completed {collecting.schema_id} payload is not valid: {exc}")
            return False
        self.set_payload(task_id, payload)
        return True

    def _answered(self, task_id: str, collecting: Collecting, provided: ProvidedInput) -> Collecting:
        known = self.completion.merged(collecting, provided.data_params)  # checked at admission already
        updated = Collecting(collecting.schema_id, collecting.client_id, known, collecting.language, collecting.other)
        self.completion.open(task_id, updated)
        return updated
