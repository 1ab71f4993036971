"""Section ``wang``: draft-wang-nmrg-magent-im-00's data model and interaction, over NETCONF.

The draft has no RFC 2119 keywords outside its boilerplate: a check is MUST where its model requires
something (a leaf it marks mandatory, a behaviour it states as what the agent does), SHOULD where it
says "should". The interaction checks write (--allow-writes): every task they create is put in the
run's `Ledger` before it is sent, and deleted by the ``cleanup`` section.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.conformance.checks import Check, Face, Findings, Level, check
from an_agent.conformance.netconf_side import NOTIFICATION_CAPABILITY, NetconfSide
from an_agent.conformance.target import PROBE_SENDER, Ledger
from an_agent.errors import RequestTimeout, RpcError, YangError
from an_agent.model import (
    IRTF_AGENT_NS,
    CommuType,
    ConditionNotification,
    NegotiationRequest,
    NegotiationType,
    Task,
    build_prompt,
)
from an_agent.model.ns import NETCONF_BASE_NS

T = TypeVar("T")
_NC = Face.NETCONF
DRAFT = "draft-wang-nmrg-magent-im-00"
MODULE = check("wang.module", "the server implements module irtf-agent", DRAFT, "appendix A", Level.MUST, _NC)
MODEL = check(
    "wang.model",
    "the served irtf-agent has the draft's nodes: /agent, /tasks/task (key task-id) with content, task-async, "
    "task-status (config false), the task-negotiate RPC and the condition-notifications notification",
    DRAFT,
    "5.1-5.4, appendix A",
    Level.MUST,
    _NC,
)
PROFILE = check(
    "wang.profile", "<get> of /agent answers the profile (CapabilityRequest)", DRAFT, "5.1", Level.MUST, _NC
)
PROFILE_MANDATORY = check(
    "wang.profile-mandatory",
    "the profile has the leaves the draft marks mandatory: name, version, provider",
    DRAFT,
    "5.1",
    Level.MUST,
    _NC,
)
PROFILE_READ_ONLY = check(
    "wang.profile-read-only",
    "the profile is read-only: <get-config> of running does not return /agent",
    DRAFT,
    "5.1",
    Level.SHOULD,
    _NC,
)
SKILLS = check(
    "wang.skills",
    "the profile lists skills, each with a name, input modes and output modes",
    DRAFT,
    "5.1",
    Level.SHOULD,
    _NC,
)
PUSH = check(
    "wang.push-notifications",
    "a profile claiming push-notifications advertises the NETCONF notification capability",
    DRAFT,
    "5.1 (RFC 5277 3.1)",
    Level.MUST,
    _NC,
)
TASK_CREATE = check(
    "wang.task-create",
    "a task created by <edit-config> (taskAssign, task-async true) is accepted",
    DRAFT,
    "5.2",
    Level.MUST,
    _NC,
    writes=True,
)
TASK_NOTIFY = check(
    "wang.task-notifications",
    "each status change is a condition-notifications carrying task-id and task-status: "
    "created, processing, then finished or failed",
    DRAFT,
    "5.2, 5.4",
    Level.MUST,
    _NC,
    writes=True,
)
TASK_RESULT = check(
    "wang.task-result",
    "the notification of the end carries the result data, and <get> of the task shows its end status",
    DRAFT,
    "5.2, 5.4",
    Level.MUST,
    _NC,
    writes=True,
)
FEASIBILITY = check(
    "wang.negotiate-feasibility",
    "task-negotiate FEASIBILITY is answered with type and feasible",
    DRAFT,
    "5.3",
    Level.MUST,
    _NC,
    writes=True,
)
FULFILLMENT = check(
    "wang.negotiate-fulfillment",
    "task-negotiate FULFILLMENT of an ended task is answered with type and fulfilled",
    DRAFT,
    "4.5, 5.3",
    Level.MUST,
    _NC,
    writes=True,
)
TASK_SYNC = check(
    "wang.task-sync",
    "with task-async false, the <edit-config> reply comes only after the task ended",
    DRAFT,
    "5.2",
    Level.MUST,
    _NC,
    writes=True,
)
TASK_INVALID = check(
    "wang.task-invalid",
    "a task whose content has no task description is refused with an rpc-error naming the content leaf",
    DRAFT,
    "5.2 (RFC 6241 appendix A, error-path)",
    Level.MUST,
    _NC,
    writes=True,
)

_A = f"{{{IRTF_AGENT_NS}}}"
_E = f"{{{NETCONF_BASE_NS}}}"
_OBJECT = re.compile(r"\b[A-Z][A-Z0-9]*-\d+\b")
MANDATORY = ("name", "version", "provider")


def run(side: NetconfSide, found: Findings, ledger: Ledger, writes: bool) -> None:
    """Every check of the section, in order (module docstring)."""
    if not side.serves_module("irtf-agent"):
        found.failed(MODULE, "neither the hello nor the yang-library names irtf-agent")
        found.skip_pending("the server does not implement irtf-agent", section="wang")
        return
    found.passed(MODULE, "irtf-agent is advertised")
    _model(side, found)
    agent = _profile(side, found)
    if not writes:
        found.skip_pending("writes the target: run with --allow-writes", section="wang")
        return
    prompt = probe_prompt(agent)
    ended = _isolated(found, (TASK_CREATE, TASK_NOTIFY, TASK_RESULT), lambda: _lifecycle(side, found, ledger, prompt))
    _isolated(found, (FEASIBILITY, FULFILLMENT), lambda: _negotiate(side, found, ledger, prompt, ended))
    _isolated(found, (TASK_SYNC,), lambda: _sync(side, found, ledger, prompt))
    _isolated(found, (TASK_INVALID,), lambda: _invalid(side, found, ledger))


def _isolated(found: Findings, checks: tuple[Check, ...], work: Callable[[], T]) -> T | None:
    """Run one interaction; a refusal it did not expect fails its own checks only (not the section)."""
    try:
        return work()
    except RpcError as exc:
        for c in checks:
            found.failed(c, f"an unexpected refusal: {exc}")
        return None


def probe_prompt(agent: etree._Element | None) -> str:
    """The content of the tasks the kit assigns: the first example a skill gives (else its description)."""
    description = "report the state of the objects you manage"
    target = "the objects the agent manages"
    if agent is not None:
        examples = [e.text or "" for e in agent.iter(_A + "examples") if (e.text or "").strip()]
        plain = [e for e in examples if not e.lstrip().startswith("{")]
        descriptions = [e.text or "" for e in agent.iter(_A + "skill-description") if e.text]
        description = (plain or descriptions or [description])[0]
        named = _OBJECT.search(description)
        target = named.group(0) if named else (agent.findtext(_A + "management-object") or target)
    return build_prompt(target, description)


def _model(side: NetconfSide, found: Findings) -> None:
    compiled = side.compiled()
    text = side.fetched().texts.get("irtf-agent")
    if isinstance(compiled, YangError) or text is None:
        why = compiled if isinstance(compiled, YangError) else "<get-schema> did not return irtf-agent"
        found.failed(MODEL, f"cannot inspect the served irtf-agent: {why}")
        return
    have: list[str] = []
    missing: list[str] = []
    for path, what in (
        ("/irtf-agent:agent", "container agent"),
        ("/irtf-agent:tasks/task", "list tasks/task"),
        ("/irtf-agent:tasks/task/content", "leaf content"),
        ("/irtf-agent:tasks/task/task-async", "leaf task-async"),
        ("/irtf-agent:tasks/task/task-status", "leaf task-status"),
    ):
        node = compiled.schema_node_by_path(path)
        (have if node is not None else missing).append(what)
        if path.endswith("/task") and node is not None and list(node.keys) != ["task-id"]:
            missing.append(f"key task-id (the list's keys are {list(node.keys)})")
        if path.endswith("task-status") and node is not None and node.config:
            missing.append("task-status config false (it is config true)")
        if path.endswith("agent") and node is not None and node.config:
            have.append("(agent is config true here)")
    for pattern, what in (
        (r"\brpc\s+task-negotiate\b", "rpc task-negotiate"),
        (r"\bnotification\s+condition-notifications\b", "notification condition-notifications"),
    ):
        (have if re.search(pattern, text) else missing).append(what)
    found.judge(
        MODEL,
        not missing,
        ("serves " + ", ".join(have)) + (f"; missing: {', '.join(missing)}" if missing else ""),
    )


def _profile(side: NetconfSide, found: Findings) -> etree._Element | None:
    filter_ = etree.Element(_A + "agent")
    try:
        data = side.step("<get> /agent", lambda: side.nc.get(filter=filter_))
    except RpcError as exc:
        found.failed(PROFILE, f"<get> of /agent refused: {exc}")
        found.skip_pending("no profile to inspect", section="wang")
        return None
    agent = data.find(_A + "agent")
    if not found.judge(
        PROFILE,
        agent is not None,
        "the profile came back" if agent is not None else "the reply has no /agent",
        received=etree.tostring(data, encoding="unicode"),
    ):
        for c in (PROFILE_MANDATORY, PROFILE_READ_ONLY, SKILLS, PUSH):
            found.skipped(c, "no profile to inspect")
        return None
    assert agent is not None
    absent = [leaf for leaf in MANDATORY if not (agent.findtext(_A + leaf) or "").strip()]
    found.judge(
        PROFILE_MANDATORY,
        not absent,
        "name, version and provider present" if not absent else f"missing or empty: {', '.join(absent)}",
    )
    config = side.step("<get-config> /agent", lambda: side.nc.exchange(_get_config(_A + "agent")))
    in_config = config.find(f"{_E}data/{_A}agent") is not None
    found.judge(
        PROFILE_READ_ONLY,
        not in_config and config.find(_E + "rpc-error") is None,
        "/agent is not configuration" if not in_config else "<get-config> returns /agent: it is configuration",
        received=etree.tostring(config, encoding="unicode"),
    )
    skills = agent.findall(f"{_A}skills/{_A}skill")
    lacking = [
        (s.findtext(_A + "skill-name") or "(unnamed)")
        for s in skills
        if not s.findtext(_A + "skill-name")
        or s.find(_A + "input-modes") is None
        or s.find(_A + "output-modes") is None
    ]
    found.judge(
        SKILLS,
        bool(skills) and not lacking,
        f"{len(skills)} skills, each with name and modes"
        if skills and not lacking
        else ("no skills" if not skills else f"skills without a name or modes: {', '.join(lacking)}"),
    )
    push = agent.findtext(f"{_A}capability/{_A}push-notifications")
    if push != "true":
        found.skipped(PUSH, "the profile does not claim push-notifications")
    else:
        found.judge(
            PUSH,
            side.advertises(NOTIFICATION_CAPABILITY),
            "notification capability advertised"
            if side.advertises(NOTIFICATION_CAPABILITY)
            else f"push-notifications true but {NOTIFICATION_CAPABILITY} is not advertised",
        )
    return agent


def _lifecycle(side: NetconfSide, found: Findings, ledger: Ledger, prompt: str) -> str | None:
    """Create an asynchronous task and follow it to its end; returns its id when it ended."""
    task_id = ledger.new_id("task")
    watcher = side.open()
    events: Iterator[ConditionNotification] | None = None
    try:
        events = side.step(
            "<create-subscription>", lambda: watcher.watch(task_id=task_id, timeout=side.options.timeout)
        )
    except RpcError as exc:
        found.failed(TASK_NOTIFY, f"<create-subscription> refused: {exc}")
    task = Task(task_id, send_from=PROBE_SENDER, commu_type=CommuType.TASK_ASSIGN, content=prompt, task_async=True)
    sent = etree.tostring(task.to_xml(), encoding="unicode")
    ledger.task(task_id)
    try:
        side.step("<edit-config> creating a task", lambda: side.client.assign_task(task))
    except RpcError as exc:
        found.failed(TASK_CREATE, f"refused: {exc}", sent=sent)
        found.skipped(TASK_NOTIFY, "no task was created")
        found.skipped(TASK_RESULT, "no task was created")
        return None
    found.passed(TASK_CREATE, f"task {task_id} created", sent=sent)
    seen, problem = _follow(side, task_id, events)
    statuses = [str(e.status) for e in seen]
    ok = (
        not problem
        and len(statuses) >= 3
        and statuses[0] == "created"
        and "processing" in statuses
        and statuses[-1] in ("finished", "failed")
    )
    found.judge(
        TASK_NOTIFY,
        ok,
        f"statuses {', '.join(statuses)}"
        if ok
        else f"statuses {', '.join(statuses) or '(none)'}: {problem or 'not the expected sequence'}",
        received=", ".join(statuses),
        expected="created, processing, then finished or failed (other statuses may come between)",
    )
    current = side.step(f"<get> task {task_id}", lambda: side.client.get_task(task_id))
    last = seen[-1] if seen else None
    result_ok = last is not None and last.status.terminal and last.data is not None and bool(last.data.xml.strip())
    query_ok = current.status is not None and current.status.terminal
    found.judge(
        TASK_RESULT,
        result_ok and query_ok,
        "; ".join(
            [
                "the last notification (an end) carries data"
                if result_ok
                else f"no end notification with data (last: {last.status if last else 'none'})",
                f"<get> shows task-status {current.status or '(none)'}",
            ]
        ),
        received=last.data.xml if last is not None and last.data is not None else None,
    )
    return task_id if query_ok else None


def _follow(
    side: NetconfSide, task_id: str, events: Iterator[ConditionNotification] | None
) -> tuple[list[ConditionNotification], str]:
    """The task's notifications until its end, and what went wrong (empty: nothing)."""
    seen: list[ConditionNotification] = []
    if events is None:
        return seen, "no subscription"
    try:
        with side.watch.step(f"waiting for condition-notifications of {task_id}"):
            for event in events:
                seen.append(event)
    except RequestTimeout:
        return seen, f"no further notification within {side.options.timeout:g} s"
    except RpcError as exc:
        return seen, f"a notification the kit cannot read: {exc}"
    return seen, ""


def _negotiate(side: NetconfSide, found: Findings, ledger: Ledger, prompt: str, ended: str | None) -> None:
    request = NegotiationRequest(ledger.new_id("negotiation"), NegotiationType.FEASIBILITY, [prompt], PROBE_SENDER)
    _judge_negotiation(side, found, FEASIBILITY, request, "feasible")
    if ended is None:
        found.skipped(FULFILLMENT, "no task of this run ended to negotiate its fulfilment")
        return
    content = build_prompt(ended, f"does the result of task {ended} fulfil the request?")
    request = NegotiationRequest(ended, NegotiationType.FULFILLMENT, [content], PROBE_SENDER)
    _judge_negotiation(side, found, FULFILLMENT, request, "fulfilled")


def _judge_negotiation(
    side: NetconfSide, found: Findings, which: Check, request: NegotiationRequest, answer_leaf: str
) -> None:
    rpc = request.to_xml()
    reply = side.step(f"task-negotiate {request.type}", lambda: side.nc.exchange(rpc))
    error = reply.find(_E + "rpc-error")
    answer = reply.findtext(_A + answer_leaf)
    answered_type = reply.findtext(_A + "type")
    ok = error is None and answer in ("true", "false") and answered_type == str(request.type)
    if error is not None:
        reason = f"refused: {error.findtext(_E + 'error-tag')}: {error.findtext(_E + 'error-message')}"
    elif answered_type is None and answer is None:
        reason = f"the reply has no output (no type, no {answer_leaf})"
    else:
        reason = f"type {answered_type or '(none)'}, {answer_leaf} {answer or '(none)'}"
    found.judge(
        which,
        ok,
        reason,
        sent=etree.tostring(rpc, encoding="unicode"),
        received=etree.tostring(reply, encoding="unicode"),
        expected=f"<type>{request.type}</type> and <{answer_leaf}>true|false</{answer_leaf}>",
    )


def _sync(side: NetconfSide, found: Findings, ledger: Ledger, prompt: str) -> None:
    task_id = ledger.new_id("task")
    task = Task(task_id, send_from=PROBE_SENDER, commu_type=CommuType.TASK_ASSIGN, content=prompt, task_async=False)
    ledger.task(task_id)
    started = time.monotonic()
    try:
        side.step("<edit-config> creating a task-async false task", lambda: side.client.assign_task(task))
    except RpcError as exc:
        found.failed(TASK_SYNC, f"refused: {exc}", sent=etree.tostring(task.to_xml(), encoding="unicode"))
        return
    took = time.monotonic() - started
    status = side.step(f"<get> task {task_id}", lambda: side.client.get_task(task_id)).status
    found.judge(
        TASK_SYNC,
        status is not None and status.terminal,
        f"the reply came after {took:.2f} s; the task is then {status or 'without task-status'}",
        expected="an end status (finished, failed, canceled) right after the reply",
    )


def _invalid(side: NetconfSide, found: Findings, ledger: Ledger) -> None:
    task_id = ledger.new_id("task")
    task = Task(
        task_id,
        send_from=PROBE_SENDER,
        commu_type=CommuType.TASK_ASSIGN,
        content="## target object\nnothing: this content has no task description section",
    )
    sent = etree.tostring(task.to_xml(), encoding="unicode")
    ledger.task(task_id)
    try:
        side.step("<edit-config> creating an invalid task", lambda: side.client.assign_task(task))
    except RpcError as exc:
        names = (exc.path or "").rstrip("]").endswith("content")
        found.judge(
            TASK_INVALID,
            names,
            f"refused, error-path {exc.path}" if names else f"refused, but error-path is {exc.path or '(none)'}: {exc}",
            sent=sent,
            received=str(exc),
            expected="an rpc-error whose error-path ends with .../task[task-id=...]/content",
        )
        return
    found.failed(TASK_INVALID, "the task was accepted", sent=sent, expected="an rpc-error naming the content leaf")


def _get_config(tag: str) -> etree._Element:
    rpc = etree.Element(_E + "get-config", nsmap=default_ns(NETCONF_BASE_NS))
    etree.SubElement(etree.SubElement(rpc, _E + "source"), _E + "running")
    etree.SubElement(rpc, _E + "filter", type="subtree").append(etree.Element(tag))
    return rpc
