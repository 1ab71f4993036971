"""`OneAtATime`: an agent's work on one element done once at a time, however many tasks ask for it.

A second request for an element whose work is under way (a repair asked again by an assigner that was
restarted meanwhile and forgot it had asked, or by a second incident that reached the same root cause)
does not do the work again: it waits, in simulated time, for the outcome of the one under way and takes
it. Found by lab soak: a restarted cross-domain agent asked the RAN agent to restart a base station whose
restart was under way, and the station was restarted twice; several incidents of one link each reset its
ports.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from an_agent.agents.environment import Scheduler, SimFuture
from an_agent.agents.failures import TaskFailure

T = TypeVar("T")

_Ended = tuple[T] | str
"""How the work under way ended: its value (in a 1-tuple), or why it failed."""


class OneAtATime(Generic[T]):
    """Work keyed by element, one at a time per element (module docstring); ``what`` names it in labels
    and messages (``repair``, ``restart``)."""

    def __init__(self, scheduler: Scheduler, what: str) -> None:
        self._scheduler = scheduler
        self._what = what
        self._lock = threading.Lock()
        self._under_way: dict[str, SimFuture[_Ended[T]]] = {}

    def run(self, key: str, work: Callable[[], T], on_join: Callable[[], None] | None = None) -> tuple[T, bool]:
        """``work()`` for ``key``, unless work for ``key`` is under way: then (after ``on_join()``) wait for it
        and take its value. Returns the value and whether this call did the work.

        When the work raised, every caller sees it fail: the one that ran it gets the exception, the ones that
        waited a `TaskFailure` with its message (or saying it was interrupted, for anything but a
        `TaskFailure`). Once it has ended, the next call for ``key`` does the work again.
        """
        with self._lock:
            running = self._under_way.get(key)
            if running is None:
                mine: SimFuture[_Ended[T]] = self._scheduler.future(f"{self._what} {key}")
                self._under_way[key] = mine
        if running is not None:
            if on_join is not None:
                on_join()
            ended = running.wait()
            if isinstance(ended, str):
                raise TaskFailure(ended)
            return ended[0], False
        try:
            value = work()
        except TaskFailure as exc:
            mine.set(str(exc))
            raise
        except BaseException:
            mine.set(f"the {self._what} of {key} was interrupted")
            raise
        else:
            mine.set((value,))
            return value, True
        finally:
            with self._lock:
                self._under_way.pop(key, None)
