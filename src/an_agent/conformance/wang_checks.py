"""Section ``wang``, part two: draft-wang-nmrg-magent-im-00's interaction, over NETCONF (writes).

The data model is read first (`an_agent.conformance.wang_model`). Then, with --allow-writes: a task
followed through its notifications to its end, both negotiations, a synchronous task, and an invalid
one. A check is MUST where the draft states the behaviour as what the agent does. Every task created
is put in the run's `Ledger` before it is sent, and deleted by the ``cleanup`` section.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from lxml import etree

from an_agent.conformance import wang_model
from an_agent.conformance.checks import Check, Face, Findings, Level, check
from an_agent.conformance.netconf_side import NetconfSide
from an_agent.conformance.target import PROBE_SENDER, Ledger
from an_agent.errors import RequestTimeout, RpcError
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
DRAFT = wang_model.DRAFT
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


def run(side: NetconfSide, found: Findings, ledger: Ledger, writes: bool) -> None:
    """Every check of the section, in order (module docstring)."""
    agent = wang_model.read(side, found)
    if not found.pending(section="wang"):
        return
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
