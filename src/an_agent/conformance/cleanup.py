"""Section ``cleanup``: whatever the run created on the target is gone afterwards.

Runs after every other section, on a NETCONF session of its own (the sections' sessions may be
broken): each task the run created is canceled if it has not ended, then it and the run's data-params
are removed (``operation="remove"``, which does not mind an entry that is already gone), and a
``<get-config>`` shows none of them is left. Over A2A alone there is no way to delete a task: they are
canceled and listed.
"""

from __future__ import annotations

from lxml import etree

from an_agent.conformance.a2a_checks import A2ASide
from an_agent.conformance.checks import Face, Findings, Level, check
from an_agent.conformance.netconf_side import NetconfSide
from an_agent.conformance.target import Ledger
from an_agent.errors import RpcError
from an_agent.model import IRTF_AGENT_NS, Task, tasks_element
from an_agent.model._xml import leaf, root
from an_agent.nc.agent_client import AgentClient

CLEANUP = check(
    "cleanup.deleted",
    "every task and data-param the run created is deleted afterwards (checked with <get-config>)",
    "an-agent conformance",
    "(the kit's promise; RFC 6241 7.2 operation remove)",
    Level.MUST,
    Face.NETCONF,
    writes=True,
)
_A = f"{{{IRTF_AGENT_NS}}}"


def run_netconf(side: NetconfSide, found: Findings, ledger: Ledger) -> None:
    """Delete what the run made, over a fresh NETCONF session, and check that it is gone.

    Besides the tasks and data-params the run named, that is the data-params its tasks carry (an A2A
    message's payload becomes one, named by the agent) and the context records that mention any of
    them (an agent may log its tasks there): all of it exists only because of the run.
    """
    if ledger.empty:
        found.passed(CLEANUP, "the run created nothing")
        return
    client = side.open()
    problems: list[str] = []
    for task_id in ledger.tasks:
        try:
            task = side.step(f"<get> task {task_id}", lambda t=task_id: client.get_task(t))  # type: ignore[misc]
        except RpcError:
            continue  # never created (refused), or gone already
        for param_id in task.msg_data:
            ledger.data_param(param_id)
        if task.status is not None and not task.status.terminal:
            try:
                side.step(f"cancel task {task_id}", lambda t=task_id: client.cancel_task(t))  # type: ignore[misc]
            except RpcError as exc:
                problems.append(f"cancel {task_id}: {exc}")
    edits = [tasks_element([Task(task_id)], operation="remove") for task_id in ledger.tasks]
    records = _context_records(side, client, [ledger.prefix, *ledger.tasks, *ledger.data_params])
    edits += [_remove("context", record) for record in records]
    edits += [_remove("data-params", param_id) for param_id in ledger.data_params]
    for edit in edits:
        what = " ".join(str(t) for t in edit.itertext() if str(t).strip())
        try:
            side.step(f"remove {what}", lambda e=edit: client.netconf.edit_config(e))  # type: ignore[misc]
        except RpcError as exc:
            problems.append(f"remove {what}: {exc}")
    left = _left(side, client, [*ledger.tasks, *ledger.data_params, *records])
    found.judge(
        CLEANUP,
        not left,
        f"{len(ledger.tasks)} tasks, {len(ledger.data_params)} data-params and {len(records)} context records deleted"
        if not left
        else f"still on the target: {', '.join(left)}" + (f" ({'; '.join(problems)})" if problems else ""),
        sent="remove of " + ", ".join([*ledger.tasks, *ledger.data_params, *records]),
    )


def _remove(top: str, entry_id: str) -> etree._Element:
    edit = root(top, operation="remove")
    leaf(edit, "id", entry_id)
    return edit


def _context_records(side: NetconfSide, client: AgentClient, ids: list[str]) -> list[str]:
    """The ids of the context records that mention any of ``ids`` (or a text containing one)."""
    data = side.step("<get-config> context", lambda: client.netconf.get_config(filter=root("context")))
    wanted = set(ids)
    out = []
    for record in data.iter(_A + "context"):
        texts = [t.strip() for t in record.itertext() if t.strip()]
        if any(t in wanted or any(i in t for i in wanted) for t in texts):
            record_id = record.findtext(_A + "id")
            if record_id:
                out.append(record_id)
    return out


def _left(side: NetconfSide, client: AgentClient, ids: list[str]) -> list[str]:
    """Those of ``ids`` that <get-config> still shows (as a task, data-param or context record)."""
    present: set[str | None] = set()
    for top in ("tasks", "data-params", "context"):
        data = side.step(f"<get-config> {top}", lambda t=top: client.netconf.get_config(filter=root(t)))  # type: ignore[misc]
        present |= {e.text for e in data.iter(_A + "task-id")}
        present |= {e.findtext(_A + "id") for e in data.iter(_A + "data-params")}
        present |= {e.findtext(_A + "id") for e in data.iter(_A + "context")}
    return [i for i in ids if i in present]


def run_a2a(side: A2ASide, found: Findings, ledger: Ledger) -> None:
    """Without NETCONF: cancel the run's A2A tasks that have not ended; A2A has no delete."""
    if ledger.empty:
        found.passed(CLEANUP, "the run created nothing")
        return
    client = side.client()
    notes = []
    for task_id in ledger.tasks:
        try:
            with side.watch.step(f"GetTask {task_id}"):
                task = client.get_task(task_id)
            if task.status is not None and not task.status.terminal:
                with side.watch.step(f"CancelTask {task_id}"):
                    client.cancel(task_id)
                notes.append(f"{task_id} canceled")
            else:
                notes.append(f"{task_id} {task.status}")
        except RpcError as exc:
            notes.append(f"{task_id}: {exc}")
    found.skipped(CLEANUP, "A2A has no way to delete a task (give --netconf too); left: " + ", ".join(notes))
