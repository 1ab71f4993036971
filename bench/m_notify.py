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
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence

from bench import data
from bench.target import Target
from bench.wire import BenchError, Session

Matcher = Callable[[str, int], bool]


def matcher(*needles: str) -> Matcher:
    """A notification matches event i when it names task i and contains every needle."""

    def match(xml: str, index: int) -> bool:
        return data.task_id(index) in xml and all(needle in xml for needle in needles)

    return match


def notification_latency(
    target: Target, subscribers: int, tasks: Sequence[int], match: Matcher, timeout: float = 10.0
) -> list[float]:
    """Latencies (s) of every subscriber for the assignment of each task in `tasks` (ids not yet used)."""
    subs: list[Session] = []
    trigger: Session | None = None
    arrivals: queue.Queue[tuple[int, float] | BaseException] = queue.Queue()
    try:
        # All sessions first, then the subscriptions: on netconfd every new session sends a
        # netconf-session-start notification to each subscriber, which would slow set-up down.
        for _ in range(subscribers):
            subs.append(target.connect(timeout=60.0))
        trigger = target.connect()
        for session in subs:
            session.request(data.CREATE_SUBSCRIPTION)
        threads = [
            threading.Thread(target=_listen, args=(s, tasks, match, timeout, arrivals), daemon=True) for s in subs
        ]
        for thread in threads:
            thread.start()
        latencies: list[float] = []
        for index in tasks:
            sent = time.monotonic()
            trigger.request(data.edit_config(data.tasks_xml(1, index)))
            for _ in subs:
                try:
                    item = arrivals.get(timeout=timeout + 1.0)
                except queue.Empty:
                    raise BenchError(f"no notification about task #{index} within {timeout} s") from None
                if isinstance(item, BaseException):
                    raise BenchError(f"a subscriber failed: {item}")
                got, received = item
                if got != index:
                    raise BenchError(f"notification for task #{got} while waiting for #{index}")
                latencies.append(received - sent)
        for thread in threads:
            thread.join(timeout)
        return latencies
    finally:
        for session in [*subs, *([trigger] if trigger else [])]:
            session.close()


def _listen(
    session: Session,
    tasks: Sequence[int],
    match: Matcher,
    timeout: float,
    out: queue.Queue[tuple[int, float] | BaseException],
) -> None:
    try:
        for index in tasks:
            while True:
                note = session.next_notification(timeout)
                if match(note.xml, index):
                    out.put((index, note.received))
                    break
    except BaseException as exc:  # reported to the main thread, which raises it
        out.put(exc)
