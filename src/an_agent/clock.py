"""Injectable time.

Everything that stamps, decays, expires or schedules takes a `Clock` so that a
lab can play a simulated week in seconds and tests can step time by hand.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """A source of wall-clock time in seconds since the epoch (UTC)."""

    def now(self) -> float:
        """Current time, seconds since the epoch."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to; thread-safe.

    ``ManualClock(start)`` starts at ``start`` seconds since the epoch;
    `advance` and `set` move it forward (moving backwards is refused, because
    heat decay and expirations assume monotonic time).
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError("a ManualClock only moves forward")
        with self._lock:
            self._now += seconds
            return self._now

    def set(self, when: float) -> None:
        with self._lock:
            if when < self._now:
                raise ValueError("a ManualClock only moves forward")
            self._now = float(when)


def to_rfc3339(seconds: float) -> str:
    """``2025-04-21T14:19:00.123456Z`` for a timestamp (the YANG date-and-time form)."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_rfc3339(text: str) -> float:
    """Parse an RFC 3339 / YANG date-and-time (``Z`` or ``+hh:mm``) to seconds since the epoch.

    Raises ValueError with the offending text when it is not a date-and-time.
    """
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(f"not an RFC 3339 date-and-time: {text!r}") from None
    if parsed.tzinfo is None:
        raise ValueError(f"date-and-time needs a time zone (Z or +hh:mm): {text!r}")
    return parsed.timestamp()
