"""``an-agent task assign|get|cancel|negotiate|watch``: tasks on another agent, over NETCONF (or A2A).

With ``--a2a URL`` assign/get/cancel/watch use the agent's A2A v1 face instead (`an_agent.cli.task_a2a`).

``task assign --schema NAME`` carries a structured payload (draft-zhou): the CLI negotiates the
template with the agent (``get-schema-template``, stating ``--schema-version``), builds the payload from
``--payload FILE`` and ``--set key=value`` (`an_agent.cli.payload`), validates it and only then sends.
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lxml import etree

from an_agent.cli import task_a2a
from an_agent.cli._common import add_connection_options, connect, print_json, print_table
from an_agent.cli.expect import add_expect_options, expectation_from
from an_agent.cli.payload import add_version_option, parse_sets, read_payload_file
from an_agent.cli.task_output import print_cancelled, print_result, print_task, task_dict
from an_agent.clock import from_rfc3339, to_rfc3339
from an_agent.errors import ConfigError, RequestTimeout, RpcError
from an_agent.model import (
    CommuType,
    ConditionNotification,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    build_prompt,
)

if TYPE_CHECKING:
    from an_agent.nc.agent_client import AgentClient


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "task",
        help="assign, query, cancel, negotiate and watch tasks on an agent",
        description="Task operations of draft-wang-nmrg-magent-im over NETCONF: taskAssign (<edit-config> create "
        "of /tasks/task), taskResultQuery (<get>), taskCancel (commuType set to taskCancel; the task stays "
        "queryable), Feasibility/FulfillmentNegotiate (the task-negotiate RPC) and taskResultSubscribe "
        "(RFC 5277 subscription to condition-notifications).",
    )
    sub = parser.add_subparsers(dest="task_command", metavar="ACTION", required=True)

    assign = sub.add_parser(
        "assign", help="assign a new task (taskAssign)", description="Create a task entry on the agent."
    )
    add_connection_options(assign)
    _add_a2a_option(assign)
    _add_prompt_options(assign)
    assign.add_argument("--id", dest="task_id", help="task id (default: a new UUID)")
    assign.add_argument(
        "--from", dest="send_from", default="an-agent-cli", help="task-sendFrom (default: an-agent-cli)"
    )
    assign.add_argument("--to", dest="send_to", help="task-sendTo (default: the agent's name is not checked)")
    assign.add_argument(
        "--async", dest="task_async", action="store_true", help="set task-async true (the default unless --wait)"
    )
    assign.add_argument("--expected-response", help="what the result must address (or the --expect-* options)")
    add_expect_options(assign)
    assign.add_argument(
        "--data",
        dest="msg_data",
        action="append",
        default=[],
        metavar="ID",
        help="data-params id to attach (repeatable)",
    )
    structured = assign.add_argument_group(
        "structured payload (draft-zhou schemas)",
        "With --schema the payload is negotiated, built, validated here and sent as the data-param "
        "application/json;schema=<schema_id>; the prompt options are then optional.",
    )
    structured.add_argument("--schema", metavar="NAME", help="scenario (energy_saving_adjust) or schema_id")
    add_version_option(structured)
    structured.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a payload key (repeatable); typed by the template: numbers, true/false, lists as a,b,c",
    )
    structured.add_argument("--payload", metavar="FILE", help="payload JSON object (or envelope) to start from")
    assign.add_argument(
        "--input-for",
        metavar="TASK",
        help="with --a2a: send the message to the existing task TASK (a follow-up, e.g. the input it asks for)",
    )
    assign.add_argument(
        "--text",
        help="with --a2a: a plain-language request sent as a text part (an an-agent agent maps it to a payload "
        "of a schema its skills accept when every required key is found, else takes it as the prompt)",
    )
    assign.add_argument(
        "--wait",
        action="store_true",
        help="wait until the task ends (NETCONF: send task-async false and follow its notifications); print its result",
    )
    assign.add_argument("--json", action="store_true", help="print JSON")
    assign.set_defaults(handler=run_assign)

    get = sub.add_parser(
        "get", help="show one task, or list all (taskResultQuery)", description="Read tasks with <get>."
    )
    add_connection_options(get)
    _add_a2a_option(get)
    get.add_argument("task_id", nargs="?", help="task id (omit to list every task)")
    fmt = get.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print JSON")
    fmt.add_argument("--xml", action="store_true", help="print the task XML")
    get.set_defaults(handler=run_get)

    cancel = sub.add_parser(
        "cancel", help="cancel a task (taskCancel)", description="Set the task's commuType to taskCancel."
    )
    add_connection_options(cancel)
    _add_a2a_option(cancel)
    cancel.add_argument("task_id")
    cancel.add_argument("--json", action="store_true", help="print JSON")
    cancel.set_defaults(handler=run_cancel)

    negotiate = sub.add_parser(
        "negotiate",
        help="ask whether a task is feasible, or whether a result fulfils it (task-negotiate)",
        description="FEASIBILITY: before assigning, ask whether the agent can do the task; when it cannot, the "
        "answer may carry a counter-proposal. FULFILLMENT: judge the result of task --id by the requester's "
        "criteria (--expect-*, default the task's expected-response), then tell the agent and show its answer; "
        "the verdict (and exit code) is the requester's, not the executor's.",
    )
    add_connection_options(negotiate)
    negotiate.add_argument("--type", choices=["feasibility", "fulfillment"], default="feasibility")
    negotiate.add_argument("--id", dest="task_id", help="task id (required for fulfillment)")
    negotiate.add_argument("--from", dest="send_from", default="an-agent-cli")
    negotiate.add_argument("--to", dest="send_to")
    _add_prompt_options(negotiate, required=False)
    negotiate.add_argument("--json", action="store_true", help="print JSON")
    add_expect_options(negotiate)
    negotiate.set_defaults(handler=run_negotiate)

    watch = sub.add_parser(
        "watch",
        help="print task status notifications as they happen (taskResultSubscribe)",
        description="Subscribe (RFC 5277) to condition-notifications and print one line per status change. "
        "--since replays logged events from that time first.",
    )
    add_connection_options(watch)
    _add_a2a_option(watch)
    watch.add_argument("task_id", nargs="?", help="only this task")
    watch.add_argument("--since", help="replay from this RFC 3339 time, or 'all' for the whole log")
    watch.add_argument("--until-done", action="store_true", help="stop when the watched task ends (needs a task id)")
    watch.add_argument("--count", type=int, help="stop after this many notifications")
    watch.add_argument("--duration", type=float, help="stop after this many seconds")
    watch.add_argument("--json", action="store_true", help="print one JSON object per line")
    watch.set_defaults(handler=run_watch)


def _add_a2a_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--a2a",
        metavar="URL",
        help="talk to the agent's A2A v1 face at URL (e.g. https://127.0.0.1:8080) instead of NETCONF; "
        "--user/--password are its users (HTTP Basic), or give --token",
    )
    parser.add_argument(
        "--a2a-trust",
        type=Path,
        metavar="PEM",
        help="with an https --a2a URL: verify the agent against this certificate (its a2a-cert.pem, or a CA) "
        "instead of the system's CAs; the agent is always verified",
    )
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help="with --a2a: a bearer token ('an-agent users token') instead of --user/--password; "
        "default: the AN_AGENT_TOKEN environment variable",
    )


def _add_prompt_options(parser: argparse.ArgumentParser, required: bool = True) -> None:
    group = parser.add_argument_group("prompt (the task content)")
    group.add_argument("--target", help="## target object")
    group.add_argument("--description", help="## task description")
    group.add_argument("--environment", help="## environmental information")
    group.add_argument(
        "--content-file", type=Path, metavar="FILE", help="read the whole prompt from FILE ('-' for stdin)"
    )
    parser.set_defaults(prompt_required=required)


def _prompt(args: argparse.Namespace) -> str | None:
    if args.content_file is not None:
        if str(args.content_file) == "-":
            return str(sys.stdin.read())
        try:
            return str(args.content_file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read {args.content_file}: {exc.strerror}") from None
    if args.description:
        return build_prompt(args.target or "", args.description, args.environment)
    if args.prompt_required:
        raise ConfigError("give the task with --description (and --target, --environment) or --content-file FILE")
    return None


def run_assign(args: argparse.Namespace) -> int:
    if (args.sets or args.payload or args.schema_versions) and not args.schema:
        raise ConfigError("--set, --payload and --schema-version need --schema NAME")
    if args.schema or args.text:
        args.prompt_required = False
    if (args.text or args.input_for) and not args.a2a:
        raise ConfigError("--text and --input-for are A2A messages: use them with --a2a URL (NETCONF takes a prompt)")
    content = _prompt(args)
    if args.a2a:
        return task_a2a.run_assign(args, content)
    task = Task(
        task_id=args.task_id or str(uuid.uuid4()),
        send_from=args.send_from,
        send_to=args.send_to,
        commu_type=CommuType.TASK_ASSIGN,
        content=content,
        task_async=None if args.wait and not args.task_async else True,  # nothing blocks by surprise
        expected_response=_expected_response(args),
        msg_data=list(args.msg_data),
    )
    with connect(args) as client:
        send: Callable[[], None] = functools.partial(client.assign_task, task)
        if args.schema:
            # Built and validated before subscribing or sending anything: a bad payload changes nothing.
            send = functools.partial(_assign_structured, client, task, args, _build_payload(client, task, args))
        if args.wait:
            # Subscribe first so no transition can slip between assignment and watching.
            events = client.watch(task_id=task.task_id, timeout=args.timeout)
            try:
                send()
            except RpcError as exc:
                if exc.app_tag != "task-still-running":  # created and going on: keep following it
                    raise
            for event in events:
                if not args.json:
                    print(
                        f"{task.task_id}: {event.status}" + (f" ({event.reason})" if event.reason else ""),
                        file=sys.stderr,
                    )
                if event.status.terminal:
                    break
        else:
            send()
        stored = client.get_task(task.task_id)
    return print_result(stored, args.json)


def _build_payload(client: AgentClient, task: Task, args: argparse.Namespace) -> dict[str, Any]:
    """The payload of --payload and --set on the negotiated template, validated (`SchemaError` if not)."""
    negotiated = client.schemas.template(args.schema, args.schema_versions, client_id=task.send_from)
    payload = read_payload_file(args.payload) if args.payload else {}
    payload.update(parse_sets(negotiated.template, args.sets))
    client.schemas.data_param(
        f"{task.task_id}-payload", args.schema, payload, args.schema_versions, client_id=task.send_from
    )
    return payload


def _assign_structured(client: AgentClient, task: Task, args: argparse.Namespace, payload: dict[str, Any]) -> None:
    accepted = client.schemas.assign(task, args.schema, payload, args.schema_versions)
    for warning in accepted.warnings:
        print(f"an-agent: warning: {warning}", file=sys.stderr)


def run_get(args: argparse.Namespace) -> int:
    if args.a2a:
        return task_a2a.run_get(args)
    with connect(args) as client:
        tasks = [client.get_task(args.task_id)] if args.task_id else client.list_tasks()
    if args.json:
        print_json(task_dict(tasks[0]) if args.task_id else [task_dict(t) for t in tasks])
    elif args.xml:
        for task in tasks:
            print(etree.tostring(task.to_xml(include_state=True), pretty_print=True, encoding="unicode"), end="")
    elif args.task_id:
        print_task(tasks[0])
    else:
        print_table(
            ["task-id", "status", "from", "summary"],
            [[t.task_id, t.status, t.send_from, t.result.summary if t.result else None] for t in tasks],
        )
    return 0


def run_cancel(args: argparse.Namespace) -> int:
    if args.a2a:
        return task_a2a.run_cancel(args)
    with connect(args) as client:
        client.cancel_task(args.task_id)
        task = client.get_task(args.task_id)
    return print_cancelled(task, args.json)


def _negotiation_dict(result: NegotiationResult) -> dict[str, Any]:
    return {
        "type": result.type,
        "feasible": result.feasible,
        "fulfilled": result.fulfilled,
        "reason": result.reason,
        "counter-proposal": result.counter_proposal,
    }


def _expected_response(args: argparse.Namespace) -> str | None:
    expectation = expectation_from(args)
    if expectation is not None and args.expected_response:
        raise ConfigError("give --expected-response or the --expect-* options, not both")
    return expectation.to_text() if expectation is not None else args.expected_response


def run_fulfilment(args: argparse.Namespace) -> int:
    """FULFILLMENT judged here, by the requester's criteria; the agent's answer is shown beside it."""
    with connect(args) as client:
        verdict = client.fulfilment(args.task_id, expectation_from(args))
    if args.json:
        print_json(verdict.to_dict())
    else:
        word = "fulfilled" if verdict.fulfilled else "NOT fulfilled"
        print(f"{word} (judged by the requester): {verdict.judgement.reason}")
        said = "fulfilled" if verdict.executor_fulfilled else "not fulfilled"
        print(f"the agent says: {said}: {verdict.executor_reason or ''}".rstrip(": "))
    return 0 if verdict.fulfilled else 1


def run_negotiate(args: argparse.Namespace) -> int:
    kind = NegotiationType.FEASIBILITY if args.type == "feasibility" else NegotiationType.FULFILLMENT
    if kind == NegotiationType.FULFILLMENT and not args.task_id:
        raise ConfigError("fulfillment negotiation needs --id TASK (the task whose result is evaluated)")
    if kind == NegotiationType.FULFILLMENT:
        return run_fulfilment(args)
    content = _prompt(args)
    if kind == NegotiationType.FEASIBILITY and content is None:
        raise ConfigError("feasibility negotiation needs the task: --target and --description, or --content-file")
    request = NegotiationRequest(
        task_id=args.task_id or str(uuid.uuid4()),
        type=kind,
        content=[content] if content else [],
        send_from=args.send_from,
        send_to=args.send_to,
        commu_type=CommuType.FEASIBILITY_NEGOTIATE
        if kind == NegotiationType.FEASIBILITY
        else CommuType.FULFILLMENT_NEGOTIATE,
    )
    with connect(args) as client:
        result = client.negotiate(request)
    if args.json:
        print_json(_negotiation_dict(result))
    else:
        verdict = result.feasible if kind == NegotiationType.FEASIBILITY else result.fulfilled
        word = (
            ("feasible" if verdict else "NOT feasible")
            if kind == NegotiationType.FEASIBILITY
            else ("fulfilled" if verdict else "NOT fulfilled")
        )
        print(f"{word}: {result.reason or ''}".rstrip(": "))
        if result.counter_proposal:
            print("counter-proposal:")
            print(result.counter_proposal)
    verdict = result.feasible if kind == NegotiationType.FEASIBILITY else result.fulfilled
    return 0 if verdict else 1


def _event_dict(event: ConditionNotification) -> dict[str, Any]:
    return {
        "event-time": to_rfc3339(event.event_time) if event.event_time else None,
        "task-id": event.task_id,
        "task-status": event.status,
        "previous-status": event.previous_status,
        "reason": event.reason,
        "from": event.send_from,
    }


def run_watch(args: argparse.Namespace) -> int:
    if args.a2a:
        return task_a2a.run_watch(args)
    if args.until_done and not args.task_id:
        raise ConfigError("--until-done needs a task id")
    start_time = None
    if args.since == "all":
        start_time = 0.0
    elif args.since:
        try:
            start_time = from_rfc3339(args.since)
        except ValueError as exc:
            raise ConfigError(f"--since: {exc}") from None
    deadline = time.monotonic() + args.duration if args.duration else None
    seen = 0
    with connect(args) as client:
        events = client.watch(
            task_id=args.task_id, start_time=start_time, timeout=args.duration, until_terminal=args.until_done
        )
        while True:
            try:
                event = next(events)
            except (StopIteration, RequestTimeout):
                break
            seen += 1
            if args.json:
                import json

                print(json.dumps(_event_dict(event)), flush=True)
            else:
                when = to_rfc3339(event.event_time) if event.event_time else "-"
                previous = f"{event.previous_status} -> " if event.previous_status else ""
                reason = f"  ({event.reason})" if event.reason else ""
                print(f"{when}  {event.task_id}  {previous}{event.status}{reason}", flush=True)
            if args.count and seen >= args.count:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
    return 0
