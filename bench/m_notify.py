"""Benchmark 3: from a task-status change to every subscriber holding the notification.

`subscribers` sessions each send <create-subscription>; one more session
assigns task after task (taskAssign: an <edit-config> creating a
/tasks/task entry). For each assignment, latency is measured per subscriber
from just before the edit-config is sent to the moment that subscriber has
read the whole notification about that task. Events do not overlap: the next
task is assigned only when every subscriber has its notification.

an-agent announces the new task's first status (created) with
`condition-notifications` from its commit path; its default behaviour then
moves the task on (processing, finished), which is why the event is the
assignment and not a cancel (the task has usually finished before a cancel
could reach it). netconfd has no code for our module and cannot produce
`condition-notifications`; the same edit-config makes it send the standard
`netconf-config-change` (RFC 6470) to its subscribers, the equivalent event
it can produce: same request, one notification per subscriber, sent from the
server's commit path.

The subscribers live in worker processes (at most `PER_PROCESS` sessions
each, one thread per session) so that fifty of them are not read one after
another by a single interpreter; arrival times are taken in the workers with
the system-wide monotonic clock, comparable with the sending process's.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import queue
import threading
import time
from collections.abc import Sequence
from multiprocessing.process import BaseProcess
from multiprocessing.synchronize import Event
from typing import NamedTuple

from bench import data
from bench.target import Target
from bench.wire import BenchError, Credentials, Session

PER_PROCESS = 10
CLIENTS = ("openssh", "paramiko")
"""The subscribers' SSH client (`bench.wire`): OpenSSH's ssh in a child process per session, or paramiko."""
DEFAULT_CLIENT = "openssh"
_SETUP_TIMEOUT = 120.0


def add_client_argument(parser: argparse.ArgumentParser) -> None:
    """``--client``: the subscribers' SSH client, for the command-line tools of benchmark 3."""
    parser.add_argument(
        "--client",
        choices=CLIENTS,
        default=DEFAULT_CLIENT,
        help="the subscribers' SSH client, for every server alike (default %(default)s; see bench/wire.py)",
    )


class Message(NamedTuple):
    """Worker -> parent: kind is "connected", "subscribed", "arrivals" (task, times) or "error" (text)."""

    kind: str
    task: int = -1
    times: tuple[float, ...] = ()
    text: str = ""


def matches(xml: str, index: int, needles: Sequence[str]) -> bool:
    """A notification is about event `index` when it names that task and contains every needle."""
    return data.task_id(index) in xml and all(needle in xml for needle in needles)


class Assignment(NamedTuple):
    """One assignment: its task index, when the edit-config was sent, and when each subscriber had it."""

    task: int
    sent: float
    arrivals: list[float]


def notification_latency(
    target: Target,
    subscribers: int,
    tasks: Sequence[int],
    needles: Sequence[str],
    timeout: float = 10.0,
    client: str = DEFAULT_CLIENT,
) -> list[float]:
    """Latencies (s) of every subscriber for the assignment of each task in `tasks` (ids not yet used).

    ``client`` is the subscribers' SSH client (`CLIENTS`); the session that assigns is always paramiko.
    """
    events = notification_events(target, subscribers, tasks, needles, timeout, client)
    return [arrival - event.sent for event in events for arrival in event.arrivals]


def notification_events(
    target: Target,
    subscribers: int,
    tasks: Sequence[int],
    needles: Sequence[str],
    timeout: float = 10.0,
    client: str = DEFAULT_CLIENT,
) -> list[Assignment]:
    """`notification_latency` with its raw times: per assignment the send time and every arrival (monotonic s)."""
    context = multiprocessing.get_context("spawn")
    messages: multiprocessing.Queue[Message] = context.Queue()
    subscribe = context.Event()
    count = math.ceil(subscribers / PER_PROCESS)
    shares = [subscribers // count + (1 if i < subscribers % count else 0) for i in range(count)]
    if client not in CLIENTS:
        raise BenchError(f"unknown SSH client {client!r} (one of {', '.join(CLIENTS)})")
    args = (
        *(target.host, target.port, target.credentials, client),
        *(list(tasks), list(needles), timeout, subscribe, messages),
    )
    workers: list[BaseProcess] = [
        context.Process(target=_subscriber_process, args=(share, *args), daemon=True) for share in shares
    ]
    trigger: Session | None = None
    for worker in workers:
        worker.start()
    try:
        # All sessions first, then the subscriptions: on netconfd every new session sends a
        # netconf-session-start notification to each subscriber, which would slow set-up down.
        _expect(messages, workers, "connected")
        trigger = target.connect()
        subscribe.set()
        _expect(messages, workers, "subscribed")
        events: list[Assignment] = []
        for index in tasks:
            sent = time.monotonic()
            trigger.request(data.edit_config(data.tasks_xml(1, index)))
            arrivals: list[float] = []
            for _ in workers:
                message = _next(messages, workers, timeout + 1.0, f"the notifications about task #{index}")
                if message.kind != "arrivals" or message.task != index:
                    raise BenchError(f"unexpected {message} while waiting for notifications about task #{index}")
                arrivals.extend(message.times)
            events.append(Assignment(index, sent, arrivals))
        return events
    finally:
        if trigger is not None:
            trigger.close()
        for worker in workers:
            worker.join(timeout)
            if worker.is_alive():
                worker.terminate()
                worker.join()


def _next(messages: multiprocessing.Queue[Message], workers: list[BaseProcess], timeout: float, what: str) -> Message:
    deadline = time.monotonic() + timeout
    while True:
        try:
            message = messages.get(timeout=0.5)
            break
        except queue.Empty:
            dead = [w.exitcode for w in workers if w.exitcode not in (None, 0)]
            if dead:
                raise BenchError(f"a subscriber process died (exit code {dead[0]})") from None
            if time.monotonic() > deadline:
                raise BenchError(f"no {what} within {timeout:g} s") from None
    if message.kind == "error":
        raise BenchError(f"a subscriber process failed: {message.text}")
    return message


def _expect(messages: multiprocessing.Queue[Message], workers: list[BaseProcess], kind: str) -> None:
    for _ in workers:
        message = _next(messages, workers, _SETUP_TIMEOUT, f"'{kind}' from every subscriber process")
        if message.kind != kind:
            raise BenchError(f"expected '{kind}' from a subscriber process, got {message}")


def _subscriber_process(
    sessions: int,
    host: str,
    port: int,
    creds: Credentials,
    client: str,
    tasks: list[int],
    needles: list[str],
    timeout: float,
    subscribe: Event,
    out: multiprocessing.Queue[Message],
) -> None:
    subs: list[Session] = []
    try:
        connect = Session.connect_openssh if client == "openssh" else Session.connect
        for _ in range(sessions):
            subs.append(connect(host, port, creds, timeout=60.0))
        out.put(Message("connected"))
        if not subscribe.wait(_SETUP_TIMEOUT):
            return
        for session in subs:
            session.request(data.CREATE_SUBSCRIPTION)
        arrivals = _Arrivals(len(subs), out)
        threads = [threading.Thread(target=_listen, args=(s, tasks, needles, timeout, arrivals, out)) for s in subs]
        for thread in threads:
            thread.start()
        out.put(Message("subscribed"))
        for thread in threads:
            thread.join()
    except Exception as exc:  # reported to the parent, which raises it
        out.put(Message("error", text=f"{type(exc).__name__}: {exc}"))
    finally:
        for session in subs:
            session.close()


class _Arrivals:
    """One worker's arrival times per event, sent to the parent in one message once all its sessions have it.

    One message per worker and event instead of one per subscriber: fewer wake-ups of the
    queue's feeder thread and of the parent while other subscribers are still reading (the
    times themselves are taken by each session's thread as it reads the notification).
    """

    def __init__(self, sessions: int, out: multiprocessing.Queue[Message]) -> None:
        self._sessions = sessions
        self._out = out
        self._lock = threading.Lock()
        self._times: dict[int, list[float]] = {}

    def add(self, task: int, received: float) -> None:
        with self._lock:
            times = self._times.setdefault(task, [])
            times.append(received)
            if len(times) < self._sessions:
                return
            del self._times[task]
        self._out.put(Message("arrivals", task, tuple(times)))


def _listen(
    session: Session,
    tasks: list[int],
    needles: list[str],
    timeout: float,
    arrivals: _Arrivals,
    out: multiprocessing.Queue[Message],
) -> None:
    try:
        for index in tasks:
            while True:
                note = session.next_notification(timeout)
                if matches(note.xml, index, needles):
                    arrivals.add(index, note.received)
                    break
    except Exception as exc:  # reported to the parent, which raises it
        out.put(Message("error", text=f"{type(exc).__name__}: {exc}"))
