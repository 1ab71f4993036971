"""Per-session state of the operation layer: the datastore locks (running, candidate) and subscriptions.

A face registers each session with an id of its choosing (the NETCONF
session-id) and a way to close it; nothing here knows a protocol.

Lock correctness: an edit enters with `SessionTable.editing`, which checks the
lock owners of the datastores it writes and counts the edit as in flight in
one step; `lock` claims the lock (so no new edit of another session starts)
and then waits until the edits of that datastore already in flight have
ended, so once `lock` returns no other session's edit can still commit.
A ``<commit>`` writes both candidate (it empties it) and running.
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
        self._owners: dict[str, int] = {}  # datastore -> session id holding <lock> on it
        self._in_flight: dict[tuple[str, int], int] = {}  # (datastore, session id) -> edits in progress
        self.released: Callable[[str, int], None] | None = None
        """Called (datastore, session id) after a lock is released by <unlock> or by the session's end."""

    def open(self, session_id: int, principal: Principal, close: Callable[[], None]) -> None:
        with self._cond:
            self._sessions[session_id] = SessionState(session_id, principal, close)

    def close(self, session_id: int) -> SessionState | None:
        """Forget a session, release its locks; returns its state (to end its subscription)."""
        with self._cond:
            state = self._sessions.pop(session_id, None)
            held = [name for name, owner in self._owners.items() if owner == session_id]
            for name in held:
                del self._owners[name]
            self._cond.notify_all()
        for name in held:
            self._released(name, session_id)
        return state

    def _released(self, datastore: str, session_id: int) -> None:
        if self.released is not None:
            self.released(datastore, session_id)

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
        """The session holding the lock on running, 0 when free."""
        return self.owner("running")

    def owner(self, datastore: str) -> int:
        """The session holding the lock on ``datastore``, 0 when free."""
        with self._cond:
            return self._owners.get(datastore, 0)

    @contextmanager
    def editing(self, session_id: int, *datastores: str) -> Iterator[None]:
        """Run one edit of ``datastores`` (default running) for ``session_id``.

        `RpcError` in-use (with the holder's session-id) when another session holds the lock of one of them.
        """
        names = datastores or ("running",)
        with self._cond:
            for name in names:
                owner = self._owners.get(name, 0)
                if owner and owner != session_id:
                    raise RpcError.in_use(
                        f"{name} is locked by session {owner}; wait for <unlock> or kill that session",
                        session_id=owner,
                    )
            for name in names:
                self._in_flight[(name, session_id)] = self._in_flight.get((name, session_id), 0) + 1
        try:
            yield
        finally:
            with self._cond:
                for name in names:
                    left = self._in_flight[(name, session_id)] - 1
                    if left:
                        self._in_flight[(name, session_id)] = left
                    else:
                        del self._in_flight[(name, session_id)]
                self._cond.notify_all()

    def lock(
        self,
        session_id: int,
        datastore: str = "running",
        wait: float = LOCK_WAIT_SECONDS,
        refuse: Callable[[], str | None] | None = None,
    ) -> None:
        """Lock ``datastore`` for ``session_id`` once no other session's edit of it is in flight.

        ``refuse`` is asked under the table's lock: a reason (RFC 6241 7.5: the candidate holds
        uncommitted changes) refuses the lock with lock-denied and session-id 0.
        """
        with self._cond:
            holder = self._owners.get(datastore, 0)
            if holder:
                raise RpcError.lock_denied(
                    holder,
                    f"{datastore} is already locked by session {holder}"
                    + (" (this session)" if holder == session_id else ""),
                )
            reason = refuse() if refuse is not None else None
            if reason is not None:
                raise RpcError.lock_denied(0, reason)
            self._owners[datastore] = session_id

            def others_idle() -> bool:
                busy = (n for (name, sid), n in self._in_flight.items() if name == datastore and sid != session_id)
                return not any(busy)

            if not self._cond.wait_for(others_idle, timeout=wait) or self._owners.get(datastore) != session_id:
                if self._owners.get(datastore) == session_id:
                    del self._owners[datastore]
                raise RpcError.lock_denied(0, f"{datastore} has edits of other sessions in progress; try again")

    def unlock(self, session_id: int, datastore: str = "running") -> None:
        with self._cond:
            holder = self._owners.get(datastore, 0)
            if holder != session_id:
                if holder:
                    raise RpcError.lock_denied(
                        holder, f"{datastore} is locked by session {holder}, not by this session"
                    )
                raise RpcError.operation_failed(f"{datastore} is not locked", error_type="protocol")
            del self._owners[datastore]
            self._cond.notify_all()
        self._released(datastore, session_id)

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
