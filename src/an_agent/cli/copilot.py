"""``an-agent copilot ask``: a person asks a service-layer FME copilot about a device, in words.

The field engineer's part of draft-wang-nmrg-magent-im section 2.1 (steps 7-8) against a running lab
(``an-agent lab up``): the question becomes a task on the copilot (taskAssign, no payload), the copilot
answers by querying the resource-layer copilot over NETCONF, and the answer is the task's result.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from typing import Any

from an_agent.cli._common import add_connection_options, connect, print_json
from an_agent.errors import ConfigError
from an_agent.model import CommuType, Task, TaskStatus, build_prompt


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "copilot",
        help="ask an FME copilot about a faulty device (natural language)",
        description="Talk to a service-layer fme-copilot agent the way a field maintenance engineer does.",
    )
    sub = parser.add_subparsers(dest="copilot_command", metavar="ACTION", required=True)
    ask = sub.add_parser(
        "ask",
        help="ask one question and print the answer",
        description="Ask the copilot one question about a link, site or cell (name it, e.g. LINK-C2, or the "
        "copilot uses the device of its open trouble ticket): what it is, its alarm history, how to repair it "
        "step by step, whether it is back in service. Exit code 1 when the copilot could not answer.",
        epilog='example: an-agent copilot ask --agent 127.0.0.1:18835 "How do I repair LINK-C2, step by step?"',
    )
    ask.add_argument("question", help="the question, in words")
    ask.add_argument("--agent", metavar="HOST:PORT", help="the copilot's NETCONF address (instead of --host/--port)")
    ask.add_argument("--from", dest="send_from", default="fme", help="who asks (task-sendFrom; default: fme)")
    ask.add_argument("--json", action="store_true", help="print the task's JSON answer")
    add_connection_options(ask)
    ask.set_defaults(handler=run_ask)


def _split_agent(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(f"--agent {value!r}: expected HOST:PORT, e.g. 127.0.0.1:18835")
    return host, int(port)


def run_ask(args: argparse.Namespace) -> int:
    if args.agent:
        args.host, args.port = _split_agent(args.agent)
    if not args.question.strip():
        raise ConfigError("the question is empty")
    task = Task(
        task_id=f"{args.send_from}.ask.{uuid.uuid4().hex[:8]}",
        send_from=args.send_from,
        commu_type=CommuType.TASK_ASSIGN,
        content=build_prompt("question", args.question),
        task_async=True,
        expected_response="an answer in natural language",
    )
    with connect(args) as client:
        # Subscribe first so the answer cannot slip between assignment and watching.
        events = client.watch(task_id=task.task_id, timeout=args.timeout)
        client.assign_task(task)
        for event in events:
            if event.status.terminal:
                break
        done = client.get_task(task.task_id)
    result = done.result
    answer: dict[str, Any] = {}
    if result is not None and result.data:
        try:
            value = json.loads(result.data)
            answer = value if isinstance(value, dict) else {}
        except json.JSONDecodeError:
            answer = {}
    ok = done.status == TaskStatus.FINISHED
    if args.json:
        print_json(
            {"task_id": done.task_id, "status": str(done.status), "reason": result.reason if result else None, **answer}
        )
    elif ok:
        print(answer.get("answer") or (result.reason if result else ""))
    else:
        print(f"an-agent: the copilot could not answer: {result.reason if result else done.status}", file=sys.stderr)
    return 0 if ok else 1
