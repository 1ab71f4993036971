"""What an activity of a `SimKernel` waits on: a `Future` (a value to come) and a `Queue` (items to come).

Waiting on either counts the activity as idle (simulated time may move); being woken counts it busy again
before it runs, so nothing is lost in between (`an_agent.lab.kernel` explains the accounting).
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

from an_agent.agents.environment import Shutdown

T = TypeVar("T")


class Accounting(Protocol):
    """The part of `SimKernel` the waits use (its lock and busy counts)."""

    _cond: threading.Condition
    _closed: bool

    def _inc(self, label: str) -> None: ...

    def _dec(self, label: str) -> None: ...

    def _check_open(self) -> None: ...

    def _current_label(self) -> str: ...


@dataclass(eq=False)
class _Getter:
    label: str
    item: Any = None
    granted: bool = False


class Future(Generic[T]):
    def __init__(self, kernel: Accounting, label: str) -> None:
        self._kernel = kernel
        self.label = label
        self._value: T | None = None
        self._done = False
        self._waiting: list[str] = []

    @property
    def done(self) -> bool:
        with self._kernel._cond:
            return self._done

    def set(self, value: T) -> None:
        with self._kernel._cond:
            self._set_locked(value)

    def _set_locked(self, value: T) -> None:
        if self._done:
            return
        self._value = value
        self._done = True
        for label in self._waiting:  # each waiter resumes as a busy activity, counted before it wakes
            self._kernel._inc(label)
        self._waiting.clear()
        self._kernel._cond.notify_all()

    def wait(self) -> T:
        kernel = self._kernel
        label = kernel._current_label()
        with kernel._cond:
            if self._done:
                return cast(T, self._value)
            kernel._check_open()
            self._waiting.append(label)
            kernel._dec(label)
            while not self._done and not kernel._closed:
                kernel._cond.wait()
            if not self._done:
                raise Shutdown()
            return cast(T, self._value)


class Queue(Generic[T]):
    def __init__(self, kernel: Accounting, label: str) -> None:
        self._kernel = kernel
        self.label = label
        self._items: deque[T] = deque()
        self._getters: deque[_Getter] = deque()

    def put(self, item: T) -> None:
        kernel = self._kernel
        with kernel._cond:
            if self._getters:
                getter = self._getters.popleft()
                getter.item = item
                getter.granted = True
                kernel._inc(getter.label)
                kernel._cond.notify_all()
            else:
                self._items.append(item)

    def get(self) -> T:
        kernel = self._kernel
        label = kernel._current_label()
        with kernel._cond:
            if self._items:
                return self._items.popleft()
            kernel._check_open()
            getter = _Getter(label)
            self._getters.append(getter)
            kernel._dec(label)
            while not getter.granted and not kernel._closed:
                kernel._cond.wait()
            if not getter.granted:
                raise Shutdown()
            item: T = getter.item
            return item
