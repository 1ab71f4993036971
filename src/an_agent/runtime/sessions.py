"""Per-session state of the operation layer: the running-datastore lock and subscriptions.

A face registers each session with an id of its choosing (the NETCONF
session-id) and a way to close it; nothing here knows a protocol.

Lock correctness: an edit enters with `SessionTable.editing`, which checks the
lock owner and counts the edit as in flight in one step; `lock` claims the
lock (so no new edit of another session starts) and then waits until the
edits already in flight have ended, so once `lock` returns no other session's
edit can still commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from an_agent.errors import RpcError
from an_agent.runtime.notifications import Subscription
from an_agent.runtime.principal import Principal

LOCK_WAIT_SECONDS = 30.0
"""How long `lock` waits for other sessions' in-flight edits before giving up."""


@dataclass
class SessionState:
    """One session as the operation layer knows it."""

    session_id: int
    principal: Principal
    close: Callable[[], None]
    subscription: Subscription | None = None


class SessionTable:
    """Sessions, the running lock and in-flight edits; thread-safe."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._sessions: dict[int, SessionState] = {}
        self._lock_owner = 0  # session id holding <lock> on running, 0 when free
        self._in_flight: dict[int, int] = {}  # session id -> edits being committed now

    def open(self, session_id: int, principal: Principal, close: Callable[[], None]) -> None:
        with self._cond:
            self._sessions[session_id] = SessionState(session_id, principal, close)

    def close(self, session_id: int) -> SessionState | None:
        """Forget a session, release its lock; returns its state (to end its subscription)."""
        with self._cond:
            state = self._sessions.pop(session_id, None)
            if self._lock_owner == session_id:
                self._lock_owner = 0
            self._cond.notify_all()
        return state

    def get(self, session_id: int) -> SessionState | None:
        with self._cond:
            return self._sessions.get(session_id)

    def watched_by(self, session_id: int) -> bool:
        """True when the session, or another session of the same user, holds a notification subscription.

        The idle timeout spares such sessions: a client that listens for
        notifications is present, and its request session (a lab peer's) may
        be quiet for as long as it has nothing to ask.
        """
        with self._cond:
            state = self._sessions.get(session_id)
            if state is None:
                return False
            user = state.principal.name
            return any(s.subscription is not None and s.principal.name == user for s in self._sessions.values())

    @property
    def lock_owner(self) -> int:
        with self._cond:
            return self._lock_owner

    @contextmanager
    def editing(self, session_id: int) -> Iterator[None]:
        """Run one edit of running for ``session_id``; `RpcError` in-use when another session holds the lock."""
        with self._cond:
            owner = self._lock_owner
            if owner and owner != session_id:
                raise RpcError.in_use(
                    f"running is locked by session {owner}; wait for <unlock> or kill that session", session_id=owner
                )
            self._in_flight[session_id] = self._in_flight.get(session_id, 0) + 1
        try:
            yield
        finally:
            with self._cond:
                left = self._in_flight[session_id] - 1
                if left:
                    self._in_flight[session_id] = left
                else:
                    del self._in_flight[session_id]
                self._cond.notify_all()

    def lock(self, session_id: int, wait: float = LOCK_WAIT_SECONDS) -> None:
        """Lock running for ``session_id`` once no other session's edit is in flight."""
        with self._cond:
            holder = self._lock_owner
            if holder:
                raise RpcError.lock_denied(
                    holder,
                    f"running is already locked by session {holder}"
                    + (" (this session)" if holder == session_id else ""),
                )
            self._lock_owner = session_id

            def others_idle() -> bool:
                return not any(count for sid, count in self._in_flight.items() if sid != session_id)

            if not self._cond.wait_for(others_idle, timeout=wait) or self._lock_owner != session_id:
                if self._lock_owner == session_id:
                    self._lock_owner = 0
                raise RpcError.lock_denied(0, "running has edits of other sessions in progress; try again")

    def unlock(self, session_id: int) -> None:
        with self._cond:
            if self._lock_owner != session_id:
                holder = self._lock_owner
                if holder:
                    raise RpcError.lock_denied(holder, f"running is locked by session {holder}, not by this session")
                raise RpcError.operation_failed("running is not locked", error_type="protocol")
            self._lock_owner = 0
            self._cond.notify_all()

    def subscribe(
        self, session_id: int, make: Callable[[Callable[[Subscription], None]], Subscription]
    ) -> Subscription:
        """Give the session the subscription ``make`` builds (passed the callback that detaches it at its end)."""
        with self._cond:
            state = self._sessions.get(session_id)
            if state is None:
                raise RpcError.operation_failed("session is closing")
            if state.subscription is not None:
                raise RpcError.operation_failed(
                    "this session already has a subscription; open another session for another one",
                    error_type="protocol",
                )

            def ended(sub: Subscription) -> None:
                with self._cond:
                    if state.subscription is sub:
                        state.subscription = None

            subscription = make(ended)
            state.subscription = subscription
            return subscription

    def kill(self, session_id: int, target: int) -> None:
        """Close session ``target`` on behalf of ``session_id`` (RFC 6241 ``<kill-session>``)."""
        if target == session_id:
            raise RpcError.invalid_value("a session cannot kill itself; use <close-session>", error_type="protocol")
        with self._cond:
            victim = self._sessions.get(target)
        if victim is None:
            raise RpcError.invalid_value(f"there is no session {target}", error_type="protocol")
        victim.close()
