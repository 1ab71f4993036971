"""Keeping an agent registered with its directory while it runs: `DirectoryRegistration`.

An agent that starts before its directory (containers and pods start in any order; a directory
restarts) must not stay unregistered for good, nor keep the agent from serving. `start` tries once,
at once; when the directory cannot be reached it goes on trying in a background thread with bounded
exponential backoff (`an_agent.nc.retry`, real time) until it is registered or `stop` is called. A
refusal that trying again cannot change (the login is refused, the directory denies the name) is
logged once and ends the attempts. `stop` ends the attempts and deregisters only what was registered.
"""

from __future__ import annotations

import logging
import random
import threading

from an_agent.errors import AnAgentError, TransportError
from an_agent.model.directory import DirectoryEntry
from an_agent.nc.directory_client import DirectoryLogin
from an_agent.nc.retry import Backoff, retryable, with_retry

log = logging.getLogger(__name__)

REGISTRATION_RETRY = Backoff(first=1.0, factor=2.0, cap=30.0, limit=24 * 3600.0)
"""Waits between registration attempts: 1 s doubling to 30 s, for at most a day."""


class _Stopped(AnAgentError):
    """`stop` was called while the attempts waited (ends `with_retry` without another attempt)."""


class DirectoryRegistration:
    """``entry`` registered at ``login``'s directory for as long as the agent runs (module docstring)."""

    def __init__(self, login: DirectoryLogin, entry: DirectoryEntry, policy: Backoff = REGISTRATION_RETRY) -> None:
        self.login = login
        self.entry = entry
        self._policy = policy
        self._stopping = threading.Event()
        self._registered = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def registered(self) -> bool:
        """Whether the directory holds the entry (as far as this agent knows)."""
        return self._registered.is_set()

    def wait(self, timeout: float) -> bool:
        """Wait until registered; False when ``timeout`` seconds passed first."""
        return self._registered.wait(timeout)

    def start(self) -> None:
        """Register now; when the directory cannot be reached, keep trying in the background."""
        try:
            self._attempt()
        except TransportError as exc:
            if not retryable(exc):
                self._give_up(exc)
                return
            log.warning(
                "agent %s could not register with the directory %s:%d (%s); trying again in the background",
                self.entry.name, self.login.host, self.login.port, exc,
            )  # fmt: skip
            self._thread = threading.Thread(target=self._keep_trying, name=f"register:{self.entry.name}", daemon=True)
            self._thread.start()
        except AnAgentError as exc:
            self._give_up(exc)

    def stop(self, timeout: float = 10.0) -> None:
        """End the attempts; deregister when registered (a failure is logged: the agent stops anyway)."""
        self._stopping.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)
        if not self._registered.is_set():
            return
        self._registered.clear()
        try:
            with self.login.connect() as directory:
                directory.deregister(self.entry.name)
        except AnAgentError as exc:
            log.warning(
                "agent %s could not deregister from %s:%d: %s", self.entry.name, self.login.host, self.login.port, exc
            )

    def _attempt(self) -> None:
        if self._stopping.is_set():
            raise _Stopped("stopping")
        with self.login.connect() as directory:
            directory.register(self.entry)
        self._registered.set()
        log.info("agent %s registered with the directory %s:%d", self.entry.name, self.login.host, self.login.port)

    def _keep_trying(self) -> None:
        def sleep(seconds: float) -> None:
            if self._stopping.wait(seconds):
                raise _Stopped("stopping")

        try:
            with_retry(
                self._attempt,
                policy=self._policy,
                sleep=sleep,
                rng=random.Random(self.entry.name),
                what=f"{self.entry.name}: register with the directory {self.login.host}:{self.login.port}",
                level=logging.INFO,
            )
        except _Stopped:
            return
        except AnAgentError as exc:
            self._give_up(exc)

    def _give_up(self, exc: AnAgentError) -> None:
        log.warning(
            "agent %s is not registered with the directory %s:%d: %s",
            self.entry.name, self.login.host, self.login.port, exc,
        )  # fmt: skip
