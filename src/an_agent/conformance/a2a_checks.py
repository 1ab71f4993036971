"""Section ``a2a``: the A2A v1 agent card and the input/output-schemas extension.

The card is read raw (`an_agent.a2a.discovery.fetch_card`): the SDK's card has no place for the
extension's root ``schemas``. Messages go through our SDK-based client (`A2AAgentClient.send_data`,
which sends a data part as it is, valid or not). Levels follow the sources: the A2A specification's
REQUIRED card fields and the extension's MUSTs (its "highly recommended" text mode is a SHOULD), and
JSON Schema 2020-12's RECOMMENDED valid ``examples`` (Validation, section 9.5).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError as JsonSchemaError

from an_agent.a2a.card import SCHEMAS_EXTENSION
from an_agent.a2a.client import A2AAgentClient
from an_agent.a2a.discovery import CardDocument, fetch_card
from an_agent.conformance.checks import Face, Findings, Level, check
from an_agent.conformance.target import Ledger, Options, Target, Watch
from an_agent.errors import RpcError
from an_agent.schemas.validate import schema_id_from_media_type

_A2A = Face.A2A
SPEC = "A2A v1"
EXT = "A2A input/output-schemas extension v1"
CARD = check(
    "a2a.card",
    "the agent card is served at /.well-known/agent-card.json as a JSON object",
    SPEC,
    "8.2, 14.3",
    Level.MUST,
    _A2A,
)
CARD_FIELDS = check(
    "a2a.card-fields",
    "the card has its REQUIRED fields: name, description, version, supportedInterfaces (url, protocolBinding), "
    "capabilities, defaultInputModes, defaultOutputModes, skills (id, name, description, tags)",
    SPEC,
    "4.4.1, 4.4.5, 4.4.6",
    Level.MUST,
    _A2A,
)
EXT_DECLARED = check(
    "a2a.ext-declared",
    "a card that uses named schemas declares the extension URI in capabilities.extensions",
    EXT,
    "1",
    Level.MUST,
    _A2A,
)
EXT_SCHEMAS = check(
    "a2a.ext-schemas", "every entry of the root schemas is a valid JSON Schema 2020-12", EXT, "1", Level.MUST, _A2A
)
EXT_EXAMPLES = check(
    "a2a.ext-examples",
    "every examples entry of a schema is valid against that schema",
    "JSON Schema Validation 2020-12",
    "9.5",
    Level.SHOULD,
    _A2A,
)
EXT_MODES = check(
    "a2a.ext-modes",
    "every application/json;schema=NAME input or output mode names a schema the card declares",
    EXT,
    "1",
    Level.MUST,
    _A2A,
)
EXT_TEXT = check(
    "a2a.ext-text-mode",
    "a skill taking a named schema also takes text/plain",
    EXT,
    "1",
    Level.SHOULD,
    _A2A,
)
EXT_TASK = check(
    "a2a.ext-task",
    "a message whose data part names a declared schema (a valid example) is answered with a task",
    EXT,
    "2, 3",
    Level.MUST,
    _A2A,
    writes=True,
)
EXT_INVALID = check(
    "a2a.ext-invalid",
    "a data part that fails its schema's validation is refused, and no task is created",
    EXT,
    "3",
    Level.SHOULD,
    _A2A,
    writes=True,
)


class A2ASide:
    """The A2A face of the target: the raw card, and an SDK client made from it on demand."""

    def __init__(self, target: Target, options: Options) -> None:
        assert target.a2a is not None
        self.target = target
        self.options = options
        self.url = target.a2a
        self.watch = Watch()
        self._client: A2AAgentClient | None = None
        self.created: list[str] = []

    def card(self) -> CardDocument:
        with self.watch.step(f"GET {self.url}/.well-known/agent-card.json"):
            return fetch_card(
                self.url,
                timeout=self.options.timeout,
                trust=self.target.a2a_trust,
                username=self.target.user if self.target.password else None,
                password=self.target.password,
            )

    def client(self) -> A2AAgentClient:
        if self._client is None:
            with self.watch.step(f"A2A client of {self.url}"):
                self._client = A2AAgentClient.connect(
                    self.url,
                    self.target.user if self.target.password else None,
                    self.target.password,
                    timeout=self.options.timeout,
                    trust=self.target.a2a_trust,
                )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


def run(side: A2ASide, found: Findings, ledger: Ledger, writes: bool) -> None:
    """Every check of the section, in order (module docstring)."""
    served = side.card()
    card = served.document
    if served.status != 200 or not isinstance(card, dict):
        found.failed(
            CARD,
            f"HTTP {served.status}, {served.content_type or 'no content type'}: not a JSON object",
            sent=f"GET {served.url}",
            received=served.text,
        )
        found.skip_pending("no card", section="a2a")
        return
    found.passed(CARD, f"HTTP 200, {served.content_type}", sent=f"GET {served.url}")
    problems = card_field_problems(card)
    found.judge(CARD_FIELDS, not problems, "; ".join(problems) or "every REQUIRED field present")
    schemas = card.get("schemas")
    named = list(_schema_modes(card))
    if not isinstance(schemas, dict) and not named:
        found.skip_pending("the card uses no named schemas (the extension is not used)", section="a2a")
        return
    schemas = schemas if isinstance(schemas, dict) else {}
    uris = [e.get("uri") for e in (card.get("capabilities") or {}).get("extensions") or [] if isinstance(e, dict)]
    found.judge(
        EXT_DECLARED,
        SCHEMAS_EXTENSION in uris,
        "declared" if SCHEMAS_EXTENSION in uris else f"not in capabilities.extensions (found: {uris or 'none'})",
        expected=SCHEMAS_EXTENSION,
    )
    valid = _schemas(found, schemas)
    _modes(found, card, schemas, named)
    if not writes:
        found.skip_pending("writes the target: run with --allow-writes", section="a2a")
        return
    _flow(side, found, ledger, valid, named)


def card_field_problems(card: dict[str, Any]) -> list[str]:
    """The REQUIRED fields of A2A v1 (section 4.4) the card lacks."""
    problems = [
        f"no {f}" for f in ("name", "description", "version") if not isinstance(card.get(f), str) or not card[f]
    ]
    interfaces = card.get("supportedInterfaces")
    if not isinstance(interfaces, list) or not interfaces:
        problems.append("no supportedInterfaces")
    else:
        for i, entry in enumerate(interfaces):
            if not isinstance(entry, dict) or not entry.get("url") or not entry.get("protocolBinding"):
                problems.append(f"supportedInterfaces[{i}] lacks url or protocolBinding")
    if not isinstance(card.get("capabilities"), dict):
        problems.append("no capabilities")
    for modes in ("defaultInputModes", "defaultOutputModes"):
        if not isinstance(card.get(modes), list) or not card[modes]:
            problems.append(f"no {modes}")
    skills = card.get("skills")
    if not isinstance(skills, list):
        problems.append("no skills")
    else:
        for i, skill in enumerate(skills):
            lacking = [
                f for f in ("id", "name", "description", "tags") if not isinstance(skill, dict) or not skill.get(f)
            ]
            if lacking:
                problems.append(f"skills[{i}] lacks {', '.join(lacking)}")
    return problems


def _schema_modes(card: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(where, mode, schema name) of every named-schema mode of the card and its skills."""
    places: list[tuple[str, Any]] = [("defaultInputModes", card.get("defaultInputModes"))]
    places.append(("defaultOutputModes", card.get("defaultOutputModes")))
    for skill in card.get("skills") or []:
        if isinstance(skill, dict):
            places.append((f"skill {skill.get('id')} inputModes", skill.get("inputModes")))
            places.append((f"skill {skill.get('id')} outputModes", skill.get("outputModes")))
    for where, modes in places:
        for mode in modes if isinstance(modes, list) else []:
            name = schema_id_from_media_type(str(mode).replace(" ", ""))
            if name is not None:
                yield where, str(mode), name


def _schemas(found: Findings, schemas: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Judge the schemas and their examples; returns the valid schemas."""
    valid: dict[str, dict[str, Any]] = {}
    problems, example_problems = [], []
    for name, schema in schemas.items():
        try:
            if not isinstance(schema, dict):
                raise JsonSchemaError("not a JSON object")
            Draft202012Validator.check_schema(schema)
        except JsonSchemaError as exc:
            problems.append(f"{name}: {exc.message}")
            continue
        valid[name] = schema
        examples = schema.get("examples")
        for i, example in enumerate(examples if isinstance(examples, list) else []):
            errors = sorted(Draft202012Validator(schema).iter_errors(example), key=lambda e: list(e.absolute_path))
            if errors:
                where = "/".join(str(p) for p in errors[0].absolute_path) or "(root)"
                example_problems.append(f"{name} examples[{i}] at {where}: {errors[0].message}")
    found.judge(EXT_SCHEMAS, not problems, "; ".join(problems) or f"{len(schemas)} schemas valid")
    found.judge(
        EXT_EXAMPLES,
        not example_problems,
        "; ".join(example_problems)
        or f"every example valid ({sum(len(s.get('examples') or []) for s in valid.values())})",
    )
    return valid


def _modes(found: Findings, card: dict[str, Any], schemas: dict[str, Any], named: list[tuple[str, str, str]]) -> None:
    undeclared = [f"{where}: {mode}" for where, mode, name in named if name not in schemas]
    found.judge(
        EXT_MODES,
        not undeclared,
        f"{len(named)} named-schema modes, each declared"
        if not undeclared
        else "modes naming undeclared schemas: " + "; ".join(undeclared),
        expected="schemas: " + ", ".join(sorted(schemas)),
    )
    no_text = []
    for skill in card.get("skills") or []:
        modes = skill.get("inputModes") if isinstance(skill, dict) else None
        named_input = isinstance(modes, list) and any(schema_id_from_media_type(str(m)) for m in modes)
        if named_input and not any(str(m).startswith("text/plain") for m in modes or []):
            no_text.append(str(skill.get("id")))
    if not any(True for w, _, _ in named if "inputModes" in w):
        found.skipped(EXT_TEXT, "no skill takes a named schema")
    else:
        found.judge(
            EXT_TEXT,
            not no_text,
            f"skills without text/plain: {', '.join(no_text)}" if no_text else "every such skill takes text/plain too",
        )


def _flow(
    side: A2ASide, found: Findings, ledger: Ledger, valid: dict[str, dict[str, Any]], named: list[tuple[str, str, str]]
) -> None:
    inputs = [name for where, _, name in named if "InputModes" in where or "inputModes" in where]
    usable = [n for n in dict.fromkeys(inputs) if n in valid and _valid_example(valid[n]) is not None]
    if not usable:
        why = "no declared input schema has a valid example to send (the kit does not invent payloads)"
        found.skipped(EXT_TASK, why)
        found.skipped(EXT_INVALID, why)
        return
    name = usable[0]
    example = _valid_example(valid[name])
    assert example is not None
    mode = f"application/json;schema={name}"
    try:
        task = _send(side, mode, example)
    except RpcError as exc:
        found.failed(EXT_TASK, f"refused: {exc}", sent=f"{mode}: {example}", expected="a task")
    else:
        ledger.task(task.task_id)
        found.passed(EXT_TASK, f"task {task.task_id} ({task.status})", sent=f"{mode}: {example}")
    invalid = _invalid_payload(valid[name])
    if invalid is None:
        found.skipped(EXT_INVALID, f"no payload invalid against {name} could be made (it accepts anything)")
        return
    before = _task_ids(side)
    try:
        task = _send(side, mode, invalid)
    except RpcError as exc:
        after = _task_ids(side)
        # The NETCONF face's checks create tasks meanwhile: those are in the ledger before they exist.
        ours = set(ledger.tasks)
        appeared = sorted(after - before - ours) if before is not None and after is not None else []
        for task_id in appeared:
            ledger.task(task_id)
        if before is None or after is None:
            note = "; ListTasks is not answered, so no new task could be ruled out"
        else:
            note = f"; ListTasks shows {len(after)} tasks, none new" if not appeared else ""
        found.judge(
            EXT_INVALID,
            not appeared,
            f"refused: {exc}{note}" if not appeared else f"refused, but a task appeared: {', '.join(appeared)}",
            sent=f"{mode}: {invalid}",
            received=str(exc),
        )
        return
    ledger.task(task.task_id)
    found.failed(
        EXT_INVALID,
        f"answered with task {task.task_id} ({task.status})",
        sent=f"{mode}: {invalid}",
        expected="an error response and no task",
    )


def _task_ids(side: A2ASide) -> set[str] | None:
    """The ids of the tasks the agent lists for this user (None: it does not answer ListTasks)."""
    client = side.client()
    try:
        with side.watch.step("ListTasks"):
            return {t.task_id for t in client.list_tasks()}
    except RpcError:
        return None


def _send(side: A2ASide, mode: str, data: dict[str, Any]) -> Any:
    client = side.client()
    with side.watch.step(f"SendMessage {mode}"):
        return client.send_data(mode, data)


def _valid_example(schema: dict[str, Any]) -> dict[str, Any] | None:
    for example in schema.get("examples") or []:
        if isinstance(example, dict) and not any(Draft202012Validator(schema).iter_errors(example)):
            return example
    return None


def _invalid_payload(schema: dict[str, Any]) -> dict[str, Any] | None:
    """A payload the schema refuses: its valid example without a required key, or with a wrongly typed one."""
    example = _valid_example(schema) or {}
    candidates: list[dict[str, Any]] = []
    for key in schema.get("required") or []:
        candidates.append({k: v for k, v in example.items() if k != key})
    for key in schema.get("properties") or {}:
        candidates.append({**example, key: {"conformance-probe": [True, None]}})
    for candidate in candidates:
        if any(Draft202012Validator(schema).iter_errors(candidate)):
            return candidate
    return None
