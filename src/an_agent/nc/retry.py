"""Riding out a peer that cannot be reached for a while: bounded exponential backoff with jitter.

An agent's request to a peer fails with a `TransportError` when the peer's process is restarting or the
network between them is cut (a lab's ``--chaos partition``): the connection is refused, finds no route,
or the request gets no answer. `with_retry` runs the request again after each such failure, waiting
``first``, ``first*factor``, ... seconds (each at most ``cap``, each moved by up to ``jitter`` of itself
either way so that agents cut off together do not all come back at once), until the request succeeds or
the waits would add up to more than ``limit``: then the last error is raised. Every retry is logged
(WARNING: what failed, the attempt, the wait). An `AuthError`, a `SessionsClosed` (the caller stopped) or
any error that is not about transport (an `RpcError` answer, a `ConfigError`) is raised at once: retrying
cannot change it.

The waits go through the caller's ``sleep``: a lab agent waits in simulated time (its kernel moves on,
and with it the end of a partition), a real one in real time. ``rng`` makes the jitter reproducible.

Only a request that is safe to send twice may be retried after an unknown outcome (a timeout after the
request left): reads and negotiations are; a task creation is made safe by `an_agent.nc.agent_client.
AgentClient.ensure_task`, which looks the task up by its id before it creates it again.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from an_agent.errors import AuthError, SessionsClosed, TransportError

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """The waits between attempts (module docstring); seconds of whatever clock the caller sleeps on."""

    first: float = 1.0
    factor: float = 2.0
    cap: float = 60.0
    limit: float = 1800.0
    """The most the waits add up to; a request still failing then fails for good."""
    jitter: float = 0.2
    """Each wait is moved by a uniform fraction in [-jitter, +jitter] of itself."""

    def __post_init__(self) -> None:
        if self.first <= 0 or self.factor < 1 or self.cap < self.first or self.limit < 0 or not 0 <= self.jitter < 1:
            raise ValueError(f"not a usable backoff: {self}")

    def delays(self, rng: random.Random) -> Iterator[float]:
        """The waits, in order, until their sum reaches ``limit`` (the last one is cut to fit)."""
        waited, base = 0.0, self.first
        while waited < self.limit:
            delay = min(base, self.cap) * (1.0 + rng.uniform(-self.jitter, self.jitter))
            delay = min(delay, self.limit - waited)
            yield delay
            waited += delay
            base = min(base * self.factor, self.cap)


def retryable(exc: BaseException) -> bool:
    """Whether trying again may help: a transport failure that is not a refused authentication, nor sessions
    their owner closed."""
    return isinstance(exc, TransportError) and not isinstance(exc, (AuthError, SessionsClosed))


def with_retry(
    attempt: Callable[[], T],
    *,
    policy: Backoff,
    sleep: Callable[[float], None],
    rng: random.Random,
    what: str,
    level: int = logging.WARNING,
) -> T:
    """``attempt()``, again after each retryable failure as ``policy`` says (module docstring).

    ``what`` names the request in the log (each retry at ``level``, giving up at WARNING). Returns the
    first success; raises the first error that is not `retryable`, or the last one once ``policy.limit``
    is spent.
    """
    delays = policy.delays(rng)
    tries = 1
    while True:
        try:
            return attempt()
        except TransportError as exc:
            if not retryable(exc):
                raise
            delay = next(delays, None)
            if delay is None:
                log.warning("%s: giving up after %d attempt(s): %s", what, tries, exc)
                raise
            log.log(level, "%s: attempt %d failed (%s); trying again in %.1f s", what, tries, exc, delay)
        sleep(delay)
        tries += 1
