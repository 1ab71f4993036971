"""Failed logins, whatever the face: one throttle per agent, shared by NETCONF and A2A.

A guess over HTTP Basic counts like a guess over SSH, so an attacker gains nothing by switching faces.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from an_agent import metrics


class LoginThrottle:
    """Slows password guessing down per source address, with bounded memory.

    Each failed login from a source doubles the delay before its next failure
    is answered (0.25 s, 0.5 s, ... up to `max_delay`); a source with no
    failure for `forget_after` seconds starts again from zero. At most
    `max_sources` sources are remembered (the least recently failing are
    forgotten first), so a flood of addresses cannot grow memory. Wall clock
    (monotonic), never the lab's simulated clock.
    """

    def __init__(
        self, base_delay: float = 0.25, max_delay: float = 10.0, forget_after: float = 900.0, max_sources: int = 4096
    ) -> None:
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.forget_after = forget_after
        self.max_sources = max_sources
        self._lock = threading.Lock()
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()

    def failed(self, source: str, face: str = "ssh") -> float:
        """Record a failure from ``source`` on ``face`` (ssh, http: the metric's label); returns how long to
        wait before answering it."""
        metrics.failed_login(face)
        now = time.monotonic()
        with self._lock:
            count, last = self._failures.pop(source, (0, now))
            if now - last > self.forget_after:
                count = 0
            count += 1
            self._failures[source] = (count, now)
            while len(self._failures) > self.max_sources:
                self._failures.popitem(last=False)
        return float(min(self.base_delay * 2 ** (count - 1), self.max_delay))

    def tracked_sources(self) -> int:
        with self._lock:
            return len(self._failures)
