"""Section ``zhou``: draft-zhou-structured-data-schema-interaction-00 over NETCONF.

The draft is protocol independent; its NETCONF binding here is module ``an-agent-schema``: the
``get-schema-template`` RPC answers a template in the draft's JSON format (section 4.1), and a task's
data-param of format ``application/json;schema=<schema_id>`` carries ``{"schema_id", "payload"}``.
A server without that module has these checks skipped, saying so.
"""

from __future__ import annotations

import json
from typing import Any

from lxml import etree

from an_agent.conformance.checks import Check, Face, Findings, Level, check
from an_agent.conformance.netconf_side import NetconfSide
from an_agent.conformance.target import PROBE_SENDER, Ledger
from an_agent.errors import RpcError, SchemaError
from an_agent.model import IRTF_AGENT_NS, CommuType, DataParam, DataType, Task, build_prompt
from an_agent.model.ns import AN_AGENT_SCHEMA_NS, NETCONF_BASE_NS
from an_agent.nc.schema_client import template_request
from an_agent.schemas.jsonschema import example_payloads
from an_agent.schemas.registry import parse_version
from an_agent.schemas.template import Template
from an_agent.schemas.validate import media_type, schema_id_from_media_type

_NC = Face.NETCONF
DRAFT = "draft-zhou-structured-data-schema-interaction-00"
TEMPLATE = check(
    "zhou.template",
    "get-schema-template answers a template for each schema the skills declare",
    DRAFT,
    "3.2 step 3",
    Level.MUST,
    _NC,
)
MEMBERS = check(
    "zhou.template-members", "each template has schema_id, scenario and keys", DRAFT, "4.1", Level.MUST, _NC
)
KEYS = check(
    "zhou.template-keys",
    "every key has a unique key_name, a JSON key_type, a boolean required and a semantic_description",
    DRAFT,
    "4.1, 4.2",
    Level.MUST,
    _NC,
)
OTHER = check(
    "zhou.template-other",
    'each template has the reserved key "other": optional, a string or an array of strings',
    DRAFT,
    "4.3",
    Level.MUST,
    _NC,
)
VERSIONS = check(
    "zhou.template-versions",
    "asked with supported-version, the server answers that version, and refuses one it lacks naming what it has",
    DRAFT,
    "3.2 step 3 (an-agent-schema get-schema-template)",
    Level.SHOULD,
    _NC,
)
MISSING = check(
    "zhou.payload-missing-required",
    "a payload missing a required key is refused with an rpc-error naming the key",
    DRAFT,
    "3.2 steps 4-5",
    Level.MUST,
    _NC,
    writes=True,
)
OTHER_ACCEPTED = check(
    "zhou.payload-other",
    'a payload whose "other" names a key outside the schema is accepted',
    DRAFT,
    "4.3",
    Level.MUST,
    _NC,
    writes=True,
)

_S = f"{{{AN_AGENT_SCHEMA_NS}}}"
_A = f"{{{IRTF_AGENT_NS}}}"
_E = f"{{{NETCONF_BASE_NS}}}"
JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
PROBE_OTHER = ["conformance_probe_key: a requirement outside the schema, sent by an-agent conformance (ignore it)"]
"""What the kit puts in ``other``: a key the schema does not have, as the draft's natural language (4.3)."""


def run(side: NetconfSide, found: Findings, ledger: Ledger, writes: bool) -> None:
    """Every check of the section, in order (module docstring)."""
    if not side.serves_module("an-agent-schema"):
        found.skip_pending(
            "the server does not serve module an-agent-schema (get-schema-template), the kit's NETCONF binding "
            "of the draft",
            section="zhou",
        )
        return
    declared = _declared_schemas(side)
    if not declared:
        found.skip_pending("no skill declares an application/json;schema=<name> mode", section="zhou")
        return
    templates = _templates(side, found, declared)
    usable = {name: t for name, t in templates.items() if t is not None}
    if not usable:
        for c in (VERSIONS, MISSING, OTHER_ACCEPTED):
            found.skipped(c, "no template could be read")
        return
    schema_id, raw = next(iter(usable.items()))
    _versions(side, found, schema_id)
    if not writes:
        found.skip_pending("writes the target: run with --allow-writes", section="zhou")
        return
    try:
        template = Template.from_dict(raw, f"template {schema_id}")
        payload = example_payloads(template)[0]
    except SchemaError as exc:
        found.skip_pending(f"no valid payload can be built from template {schema_id}: {exc}", section="zhou")
        return
    required = [k.key_name for k in template.keys if k.required and k.key_name in payload]
    if not required:
        found.skipped(MISSING, f"template {schema_id} has no required key")
    else:
        partial = {k: v for k, v in payload.items() if k != required[0]}
        _payload_task(side, found, ledger, MISSING, schema_id, partial, refused_naming=required[0])
    _payload_task(side, found, ledger, OTHER_ACCEPTED, schema_id, {**payload, "other": PROBE_OTHER})


def _declared_schemas(side: NetconfSide) -> list[str]:
    filter_ = etree.Element(_A + "agent")
    etree.SubElement(filter_, _A + "skills")
    data = side.step("<get> /agent/skills", lambda: side.nc.get(filter=filter_))
    names: list[str] = []
    for tag in ("input-modes", "output-modes"):
        for mode in data.iter(_A + tag):
            name = schema_id_from_media_type((mode.text or "").strip())
            if name and name not in names:
                names.append(name)
    return names


def _templates(side: NetconfSide, found: Findings, declared: list[str]) -> dict[str, dict[str, Any] | None]:
    got: dict[str, dict[str, Any] | None] = {}
    failures, member_problems, key_problems, other_problems = [], [], [], []
    for name in declared:
        rpc = template_request(name)
        reply = side.step(f"get-schema-template {name}", lambda r=rpc: side.nc.exchange(r))  # type: ignore[misc]
        error = reply.find(_E + "rpc-error")
        text = reply.findtext(_S + "template")
        if error is not None or text is None:
            why = error.findtext(_E + "error-message") if error is not None else "the reply has no <template>"
            failures.append(f"{name}: {why}")
            got[name] = None
            continue
        try:
            raw = json.loads(text)
        except ValueError as exc:
            failures.append(f"{name}: the template is not JSON ({exc})")
            got[name] = None
            continue
        if not isinstance(raw, dict):
            failures.append(f"{name}: the template is not a JSON object")
            got[name] = None
            continue
        got[name] = raw
        member_problems += [f"{name}: no {m}" for m in ("schema_id", "scenario", "keys") if m not in raw]
        key_problems += [f"{name}: {p}" for p in _key_problems(raw)]
        other_problems += [f"{name}: {p}" for p in _other_problems(raw)]
    read = [n for n, t in got.items() if t is not None]
    found.judge(
        TEMPLATE,
        not failures,
        f"templates of {', '.join(read)}" if not failures else "; ".join(failures),
        sent="get-schema-template of " + ", ".join(declared),
    )
    if not read:
        for c in (MEMBERS, KEYS, OTHER):
            found.skipped(c, "no template could be read")
        return got
    found.judge(MEMBERS, not member_problems, "; ".join(member_problems) or f"all of {', '.join(read)}")
    found.judge(KEYS, not key_problems, "; ".join(key_problems) or f"every key of {', '.join(read)}")
    found.judge(OTHER, not other_problems, "; ".join(other_problems) or f"present in {', '.join(read)}")
    return got


def _key_problems(raw: dict[str, Any]) -> list[str]:
    keys = raw.get("keys")
    if not isinstance(keys, list):
        return ["keys is not an array"]
    problems, names = [], set()
    for i, key in enumerate(keys):
        if not isinstance(key, dict):
            problems.append(f"keys[{i}] is not an object")
            continue
        name = key.get("key_name")
        where = name if isinstance(name, str) and name else f"keys[{i}]"
        if not isinstance(name, str) or not name:
            problems.append(f"{where}: no key_name")
        elif name in names:
            problems.append(f"{where}: key_name given twice")
        names.add(name)
        if key.get("key_type") not in JSON_TYPES:
            problems.append(f"{where}: key_type {key.get('key_type')!r} is not a JSON type")
        if not isinstance(key.get("required"), bool):
            problems.append(f"{where}: required is not a boolean")
        description = key.get("semantic_description")
        if not isinstance(description, str) or not description.strip():
            problems.append(f"{where}: no semantic_description")
    return problems


def _other_problems(raw: dict[str, Any]) -> list[str]:
    found = raw.get("keys")
    keys: list[Any] = found if isinstance(found, list) else []
    other = [k for k in keys if isinstance(k, dict) and k.get("key_name") == "other"]
    if not other:
        return ['no key "other"']
    problems = []
    if other[0].get("required") is not False:
        problems.append('"other" is not optional (required false)')
    if other[0].get("key_type") not in ("string", "array"):
        problems.append(f'"other" has key_type {other[0].get("key_type")!r}')
    return problems


def _versions(side: NetconfSide, found: Findings, schema_id: str) -> None:
    version = parse_version(schema_id)
    own = template_request(schema_id, [f"v{version}"])
    reply = side.step(f"get-schema-template {schema_id} v{version}", lambda: side.nc.exchange(own))
    answered = reply.findtext(_S + "schema-id")
    absent = template_request(schema_id, ["v9999"])
    refusal = side.step(f"get-schema-template {schema_id} v9999", lambda: side.nc.exchange(absent))
    error = refusal.find(_E + "rpc-error")
    message = "" if error is None else (error.findtext(_E + "error-message") or "")
    problems = []
    if answered != schema_id:
        problems.append(f"asked for v{version}, answered {answered or 'nothing'}")
    if error is None:
        problems.append("v9999 was not refused")
    elif schema_id not in message:
        problems.append(f"the refusal of v9999 does not name {schema_id}: {message!r}")
    found.judge(
        VERSIONS,
        not problems,
        "; ".join(problems) or f"v{version} answered with {schema_id}; v9999 refused naming {schema_id}",
        sent=etree.tostring(absent, encoding="unicode"),
        received=etree.tostring(refusal, encoding="unicode"),
    )


def _payload_task(
    side: NetconfSide,
    found: Findings,
    ledger: Ledger,
    which: Check,
    schema_id: str,
    payload: dict[str, Any],
    refused_naming: str | None = None,
) -> None:
    """Assign a task carrying ``payload``; judge the refusal (``refused_naming`` a key) or the acceptance."""
    task_id, param_id = ledger.new_id("task"), ledger.new_id("payload")
    text = json.dumps({"schema_id": schema_id, "payload": payload}, sort_keys=True)
    param = DataParam(param_id, DataType.TEXT, f"{schema_id} payload", str(len(text)), media_type(schema_id), data=text)
    content = build_prompt(f"the {schema_id} payload of data-param {param_id}", f"a task as payload {param_id} says")
    task = Task(task_id, send_from=PROBE_SENDER, commu_type=CommuType.TASK_ASSIGN, content=content, msg_data=[param_id])
    ledger.data_param(param_id)
    ledger.task(task_id)
    try:
        side.step(f"<edit-config> a task with a {schema_id} payload", lambda: side.client.assign_task(task, [param]))
    except RpcError as exc:
        if refused_naming is None:
            found.failed(which, f"refused: {exc}", sent=text, expected="the task created")
            return
        named = refused_naming in (exc.path or "") or refused_naming in exc.message
        found.judge(
            which,
            named,
            f"refused naming {refused_naming}: {exc}" if named else f"refused without naming {refused_naming}: {exc}",
            sent=text,
            received=str(exc),
        )
        return
    if refused_naming is None:
        found.passed(which, f"task {task_id} created", sent=text)
    else:
        found.failed(
            which, f"accepted without {refused_naming}", sent=text, expected=f"an rpc-error naming {refused_naming}"
        )
