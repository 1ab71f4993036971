"""``an-agent task ... --a2a URL``: the task commands over an agent's A2A v1 face (`an_agent.a2a.client`).

The same commands and output as over NETCONF (`an_agent.cli.task`), with the A2A operations underneath:

=================================  ==============================================================
assign --a2a URL --schema S ...    negotiate S from the card's ``schemas``, build and validate the
                                   payload here, send it as a data part (SendMessage / streaming)
assign --a2a URL --text TEXT       a text message (the agent maps it to a payload, or takes it as prompt)
assign --a2a URL --input-for T     a follow-up message to task T (e.g. the input it asks for)
get --a2a URL [TASK]               GetTask / ListTasks
cancel --a2a URL TASK              CancelTask
watch --a2a URL TASK               SubscribeToTask: the task now, then every change (a replay, so a
                                   watcher that reconnects misses nothing)
=================================  ==============================================================

``--user``/``--password`` are the agent's users (HTTP Basic) or ``--token`` a bearer token; an ``https`` URL is
verified against ``--a2a-trust PEM`` (e.g. the agent's ``a2a-cert.pem``) or the system's CAs; ``--timeout``
bounds each call.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from an_agent.cli._common import print_json, print_table
from an_agent.cli.payload import json_schema_key_types, parse_typed_sets, read_payload_file
from an_agent.cli.task_output import print_cancelled, print_result, print_task, task_dict
from an_agent.clock import to_rfc3339
from an_agent.errors import ConfigError
from an_agent.model import ConditionNotification, Task, TaskStatus

if TYPE_CHECKING:
    from an_agent.a2a.client import A2AAgentClient


def connect(args: argparse.Namespace) -> A2AAgentClient:
    """A client of the agent at ``--a2a URL`` with its card resolved."""
    from an_agent.a2a.client import A2AAgentClient  # the SDK only for A2A commands

    token = args.token or os.environ.get("AN_AGENT_TOKEN")
    user, password = (None, None) if token else (args.user, args.password)
    return A2AAgentClient.connect(args.a2a, user, password, timeout=args.timeout, trust=args.a2a_trust, token=token)


def _print_event(event: ConditionNotification, as_json: bool, stream: TextIO) -> None:
    when = to_rfc3339(event.event_time) if event.event_time else "-"
    if as_json:
        line = {"event-time": when, "task-id": event.task_id, "task-status": event.status, "reason": event.reason}
        print(json.dumps(line), file=stream, flush=True)
    else:
        reason = f"  ({event.reason})" if event.reason else ""
        print(f"{when}  {event.task_id}  {event.status}{reason}", file=stream, flush=True)


def run_assign(args: argparse.Namespace, text: str | None) -> int:
    """``task assign --a2a``: structured, text, or both; ``--wait`` streams the task to its end."""
    if args.msg_data or args.send_to or args.task_async or args.expected_response or args.task_id:
        raise ConfigError(
            "--id, --data, --to, --async and --expected-response are NETCONF task fields: not with --a2a "
            "(an A2A agent chooses the task id; --input-for TASK sends a follow-up message to a task)"
        )
    text = args.text or text
    if not args.schema and not text:
        raise ConfigError("give --schema NAME (with --set/--payload), --text TEXT, or the prompt options")
    with connect(args) as client:
        payload: dict[str, Any] | None = None
        if args.schema:
            negotiated = client.negotiate(args.schema, args.schema_versions)
            payload = read_payload_file(args.payload) if args.payload else {}
            payload.update(parse_typed_sets(json_schema_key_types(negotiated.json_schema), args.sets))
            client.validate(negotiated, payload)  # before anything is sent
        events: Iterator[ConditionNotification | Task] = client.stream(
            scenario=args.schema,
            payload=payload,
            text=text,
            supported_versions=args.schema_versions,
            task_id=args.input_for,
        )
        first = next(events)
        task_id = first.task_id
        if args.wait:
            for event in itertools.chain([first], events):
                if isinstance(event, Task):  # the stream's first event: the task as created (or answered)
                    event = ConditionNotification(event.task_id, event.status or TaskStatus.CREATED)
                _print_event(event, args.json, sys.stderr)
        else:
            events.close()  # type: ignore[attr-defined]
        stored = client.get_task(task_id)
    return print_result(stored, args.json)


def run_get(args: argparse.Namespace) -> int:
    with connect(args) as client:
        tasks = [client.get_task(args.task_id)] if args.task_id else client.list_tasks()
    if args.xml:
        raise ConfigError("--xml is the NETCONF view: use --json with --a2a")
    if args.json:
        print_json(task_dict(tasks[0]) if args.task_id else [task_dict(t) for t in tasks])
    elif args.task_id:
        print_task(tasks[0])
    else:
        print_table(
            ["task-id", "status", "summary"],
            [[t.task_id, t.status, t.result.summary if t.result else None] for t in tasks],
        )
    return 0


def run_cancel(args: argparse.Namespace) -> int:
    with connect(args) as client:
        task = client.cancel(args.task_id)
    return print_cancelled(task, args.json)


def run_watch(args: argparse.Namespace) -> int:
    if not args.task_id:
        raise ConfigError("watch --a2a needs a task id (A2A subscribes to one task)")
    seen = 0
    with connect(args) as client:
        for event in client.resubscribe(args.task_id):
            if isinstance(event, Task):
                event = ConditionNotification(event.task_id, event.status or TaskStatus.CREATED)
            _print_event(event, args.json, sys.stdout)
            seen += 1
            if args.count and seen >= args.count:
                break
    return 0
