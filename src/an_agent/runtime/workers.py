"""Threads that run tasks: at most N at work at once, and a task waiting for its assigner is not at work.

A task that asks for input (`TaskRun.request_input`) may wait minutes, or for ever when its assigner
walks away from the question. With a fixed pool of N threads, N such tasks would hold every thread and
every later task would queue behind them unseen: one caller could stop the agent by asking N questions
and never answering. Here each started task has a thread of its own; ``limit`` bounds the tasks *at
work*, and a task counts only while it works: `parked` around a wait gives its place to the next
queued task, and takes one back (waiting its turn if all are taken) when the answer came. How many
tasks may wait is bounded elsewhere, per client (`an_agent.runtime.text_input`), and by the wait's
timeout.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

log = logging.getLogger(__name__)

INPUT_WAIT = 900.0
"""Default wait (real seconds) for the answer to a task's input-required before the task fails and frees
its thread (`an-agent serve --input-timeout`)."""


class TaskWorkers:
    """Starts submitted work in FIFO order, at most ``limit`` at work at once (module docstring)."""

    def __init__(self, limit: int, name: str = "task") -> None:
        if limit < 1:
            raise ValueError("at least one task must be able to work")
        self._limit = limit
        self._name = name
        self._lock = threading.Condition()
        self._queue: deque[tuple[Callable[[], None], Callable[[], None]]] = deque()
        self._at_work = 0
        self._returning = 0  # parked tasks whose wait ended: they go back to work before queued ones start
        self._threads: set[threading.Thread] = set()
        self._closed = False
        self._started = 0

    @property
    def at_work(self) -> int:
        """How many tasks work now (started and not parked)."""
        with self._lock:
            return self._at_work

    @property
    def queued(self) -> int:
        """How many tasks wait for a place to start."""
        with self._lock:
            return len(self._queue)

    def submit(self, work: Callable[[], None], dropped: Callable[[], None]) -> None:
        """Run ``work`` on a thread of its own when a place is free; ``dropped`` runs instead when the
        workers close before it started (so its caller can give back what it holds)."""
        with self._lock:
            if self._closed:
                closed = True
            else:
                closed = False
                self._queue.append((work, dropped))
                self._dispatch()
        if closed:
            dropped()

    @contextmanager
    def parked(self) -> Iterator[None]:
        """Within it, the calling task is not at work: its place goes to the next queued task.

        Called from a thread these workers did not start, it changes nothing."""
        if threading.current_thread() not in self._threads:
            yield
            return
        with self._lock:
            self._at_work -= 1
            self._dispatch()
        try:
            yield
        finally:
            with self._lock:
                # Back to work when a place is free; a closing agent lets everyone through to end.
                self._returning += 1
                while self._at_work >= self._limit and not self._closed:
                    self._lock.wait()
                self._returning -= 1
                self._at_work += 1

    def close(self, timeout: float | None = None) -> None:
        """Start nothing more (queued work is dropped: its ``dropped`` runs) and wait for the running."""
        with self._lock:
            self._closed = True
            queued = list(self._queue)
            self._queue.clear()
            threads = list(self._threads)
            self._lock.notify_all()
        for _, dropped in queued:
            dropped()
        for thread in threads:
            thread.join(timeout)

    def _dispatch(self) -> None:
        """Start queued work while places are free (holding the lock)."""
        while self._queue and self._at_work + self._returning < self._limit and not self._closed:
            work, _ = self._queue.popleft()
            self._at_work += 1
            self._started += 1
            thread = threading.Thread(target=self._run, args=(work,), name=f"{self._name}_{self._started}", daemon=True)
            self._threads.add(thread)
            thread.start()
        self._lock.notify_all()

    def _run(self, work: Callable[[], None]) -> None:
        try:
            work()
        except Exception:  # the engine's work handles its own errors; this only keeps the count right
            log.exception("task work raised")
        finally:
            with self._lock:
                self._at_work -= 1
                self._threads.discard(threading.current_thread())
                self._dispatch()
