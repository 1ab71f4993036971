"""Configuration operations beyond running: candidate, commit, confirmed commit, validate, copy-config.

`ConfigOperations` is the part of the operation layer behind RFC 6241's
``:candidate``, ``:confirmed-commit:1.1``, ``:validate:1.1`` and
``<copy-config>``; the NETCONF face calls it, and so could any other face.
Every write of running goes through the one admission pipeline
(`an_agent.runtime.admission.TaskAdmission`): a ``<commit>`` is one edit of
running -- the candidate's changes (`an_agent.runtime.candidate.changes`) --
parsed, authorized (NACM with the committing principal, task ownership),
payload-validated, YANG-validated and stored in one transaction, or refused
as a whole. ``<validate>`` runs the same pipeline and stops short of storing.

Confirmed commit (RFC 6241 8.4): the first confirmed commit remembers the
units it changes as they were; a follow-up confirmed commit extends the
timeout (and remembers more units); a confirming commit ends it; the
timeout, ``<cancel-commit>`` or -- without ``persist`` -- the end of the
session that issued it put back exactly those units, through the same
pipeline, as the agent itself (validated, not authorized again: NACM and
ownership never block a rollback).
Timeouts run on the wall clock.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from lxml import etree

from an_agent.errors import RpcError
from an_agent.runtime.access import Access, Authorizer
from an_agent.runtime.admission import TaskAdmission
from an_agent.runtime.candidate import Candidate, changes
from an_agent.runtime.datastore import Datastore
from an_agent.runtime.edit import elements
from an_agent.runtime.principal import ADMIN_GROUP, Principal
from an_agent.runtime.requests import Commit
from an_agent.runtime.sessions import SessionTable

log = logging.getLogger(__name__)

SYSTEM = Principal("system", frozenset({ADMIN_GROUP}))
"""Who rolls a confirmed commit back: the agent itself."""


@dataclass
class _Confirming:
    """A confirmed commit waiting for its confirmation."""

    session_id: int
    persist: str | None
    before: etree._Element  # running before the first confirmed commit
    touched: set[str] = field(default_factory=set)
    timer: threading.Timer | None = None


class ConfigOperations:
    """Candidate, commit, confirmed commit, discard, validate and copy-config of one agent."""

    def __init__(
        self,
        running: Datastore,
        candidate: Candidate,
        admission: TaskAdmission,
        sessions: SessionTable,
        authorizer: Authorizer,
        validate_config: Callable[[str], None],
    ) -> None:
        self.running = running
        self.candidate = candidate
        self._admission = admission
        self._sessions = sessions
        self._authorizer = authorizer
        self._validate_config = validate_config
        self._lock = threading.RLock()  # one commit, cancel or rollback at a time
        self._confirming: _Confirming | None = None
        sessions.released = self._lock_released

    # -- locks ----------------------------------------------------------------------
    def lock(self, principal: Principal, session_id: int, datastore: str = "running") -> None:
        """Lock running or candidate for the session (granted only once no other session's edit of it is in flight).

        RFC 6241 7.5: the candidate cannot be locked while it holds uncommitted changes.
        """
        self._exec(principal, "ietf-netconf:lock")

        def refuse() -> str | None:
            if datastore == "candidate" and self.candidate.modified:
                return "the candidate holds uncommitted changes: <commit> or <discard-changes> them first"
            return None

        self._sessions.lock(session_id, datastore, refuse=refuse)

    def unlock(self, principal: Principal, session_id: int, datastore: str = "running") -> None:
        """Unlock; unlocking the candidate discards its uncommitted changes (RFC 6241 8.3.5.2)."""
        self._exec(principal, "ietf-netconf:unlock")
        self._sessions.unlock(session_id, datastore)

    # -- candidate ----------------------------------------------------------------
    def edit_candidate(
        self, principal: Principal, session_id: int, config: etree._Element, default_operation: str, test_only: bool
    ) -> None:
        """``<edit-config>`` of the candidate; with ``test_only`` the result is validated like a commit."""
        with self._sessions.editing(session_id, "candidate"):
            edited = self.candidate.edit(config, default_operation, keep=not test_only)
        change_set = self.candidate.changes(edited) if test_only else None
        if change_set is not None:
            self._check(principal, change_set[0])

    def discard_changes(self, principal: Principal, session_id: int) -> None:
        """``<discard-changes>``: the candidate is running again."""
        self._exec(principal, "ietf-netconf:discard-changes")
        with self._sessions.editing(session_id, "candidate"):
            self.candidate.reset()

    # -- commit -------------------------------------------------------------------
    def commit(self, principal: Principal, session_id: int, request: Commit) -> None:
        """``<commit>``: the candidate's changes become running's, in one admission; see the module docstring."""
        self._exec(principal, "ietf-netconf:commit")
        with self._lock:
            pending = self._confirming
            self._check_confirming(pending, session_id, request.persist_id, "commit")
            if pending is None and request.persist_id is not None:
                raise RpcError.invalid_value(
                    f"no confirmed commit with persist-id {request.persist_id!r} is in progress",
                    path="/ietf-netconf:commit/persist-id",
                )
            before = self.running.snapshot() if request.confirmed and pending is None else None
            touched = self._apply_candidate(principal, session_id)
            if not request.confirmed:
                if pending is not None:
                    self._end(pending)
                    log.info("confirmed commit of session %s confirmed by session %s", pending.session_id, session_id)
                return
            if pending is None:
                assert before is not None
                pending = _Confirming(session_id, request.persist, before)
                self._confirming = pending
            elif request.persist is not None:
                pending.persist = request.persist
            pending.touched |= touched
            self._arm(pending, request.confirm_timeout)

    def cancel_commit(self, principal: Principal, session_id: int, persist_id: str | None) -> None:
        """``<cancel-commit>``: roll the confirmed commit in progress back now."""
        self._exec(principal, "ietf-netconf:cancel-commit")
        with self._lock:
            pending = self._confirming
            if pending is None:
                raise RpcError.operation_failed("no confirmed commit is in progress", error_type="protocol")
            self._check_confirming(pending, session_id, persist_id, "cancel-commit")
            self._rollback(pending, "cancelled by <cancel-commit>")

    @property
    def confirming(self) -> bool:
        """True while a confirmed commit waits for its confirmation."""
        return self._confirming is not None

    def session_closed(self, session_id: int) -> None:
        """A session ended: its confirmed commit without ``persist`` is rolled back (RFC 6241 8.4.5.1)."""
        with self._lock:
            pending = self._confirming
            if pending is not None and pending.persist is None and pending.session_id == session_id:
                self._rollback(pending, f"session {session_id} ended before confirming")

    def close(self) -> None:
        """The agent stops: a pending rollback timer is stopped (running keeps what was committed)."""
        with self._lock:
            if self._confirming is not None and self._confirming.timer is not None:
                self._confirming.timer.cancel()

    # -- validate and copy-config ---------------------------------------------------------
    def validate(self, principal: Principal, session_id: int, source: str | etree._Element) -> None:
        """``<validate>`` of running, candidate, or an inline ``<config>`` (a whole datastore)."""
        self._exec(principal, "ietf-netconf:validate")
        if isinstance(source, etree._Element):
            holder = etree.Element("{urn:ietf:params:xml:ns:netconf:base:1.0}config")
            holder.extend(_copy(child) for child in elements(source))
            self._validate_config(etree.tostring(holder, encoding="unicode"))
            return
        if source == "running":
            self._validate_config(etree.tostring(self.running.snapshot(), encoding="unicode"))
            return
        change_set = self.candidate.changes()
        if change_set is not None:
            self._check(principal, change_set[0])

    def copy_config(self, principal: Principal, session_id: int, target: str, source: str | etree._Element) -> None:
        """``<copy-config>`` between running and candidate, or from an inline ``<config>``."""
        self._exec(principal, "ietf-netconf:copy-config")
        if source == target:
            raise RpcError.invalid_value(
                f"<copy-config> from {target} to itself changes nothing", error_type="protocol"
            )
        if target == "candidate":
            with self._sessions.editing(session_id, "candidate"):
                if isinstance(source, etree._Element):
                    self.candidate.replace(source)
                else:
                    self.candidate.reset()  # running -> candidate: the candidate is running again
            return
        if isinstance(source, etree._Element):
            with self._sessions.editing(session_id, "running"):
                self._admission.run(principal, source, "replace", replace_all=True)
            return
        with self._lock:
            self._apply_candidate(principal, session_id)

    # -- internals ------------------------------------------------------------------------
    def _exec(self, principal: Principal, rpc: str) -> None:
        self._authorizer.authorize(Access(principal, "exec", rpc=rpc))

    def _check(self, principal: Principal, edit: etree._Element) -> None:
        """Run ``edit`` of running through admission up to (not including) the commit."""
        self._admission.run(principal, edit, "merge", test_only=True)

    def _apply_candidate(self, principal: Principal, session_id: int) -> set[str]:
        """Commit the candidate's changes to running (one admission); the candidate is reset. Touched units."""
        with self._sessions.editing(session_id, "candidate", "running"):
            change_set = self.candidate.changes()
            touched: set[str] = set()
            if change_set is not None and change_set[1]:
                edit, touched = change_set
                self._admission.run(principal, edit, "merge")
            self.candidate.reset()
        return touched

    @staticmethod
    def _check_confirming(pending: _Confirming | None, session_id: int, persist_id: str | None, what: str) -> None:
        if pending is None:
            return
        if pending.persist is not None:
            if persist_id != pending.persist:
                raise RpcError.invalid_value(
                    f"a confirmed commit with persist is in progress: <{what}> must give its <persist-id>",
                    path=f"/ietf-netconf:{what}/persist-id",
                )
        elif pending.session_id != session_id:
            raise RpcError.in_use(
                f"a confirmed commit of session {pending.session_id} is in progress: only that session may "
                f"<{what}> (it gave no <persist>)",
                session_id=pending.session_id,
            )

    def _arm(self, pending: _Confirming, timeout: float) -> None:
        if pending.timer is not None:
            pending.timer.cancel()
        timer = threading.Timer(timeout, self._expired, args=(pending,))
        timer.daemon = True
        timer.name = "confirmed-commit"
        pending.timer = timer
        timer.start()

    def _expired(self, pending: _Confirming) -> None:
        with self._lock:
            if self._confirming is pending:
                self._rollback(pending, "confirm-timeout passed without a confirming commit")

    def _end(self, pending: _Confirming) -> None:
        if pending.timer is not None:
            pending.timer.cancel()
        if self._confirming is pending:
            self._confirming = None

    def _rollback(self, pending: _Confirming, why: str) -> None:
        """Put the units the confirmed commit changed back as they were before it."""
        self._end(pending)
        edit, touched = changes(self.running, self.running.snapshot(), pending.before, only=pending.touched)
        log.info("confirmed commit of session %s rolled back (%s): %d units", pending.session_id, why, len(touched))
        try:
            if touched:
                self._admission.run(SYSTEM, edit, "merge", system=True)
        except RpcError:
            log.exception("rollback of a confirmed commit failed; running keeps the committed changes")
        self.candidate.reset()

    def _lock_released(self, datastore: str, session_id: int) -> None:
        """RFC 6241 8.3.5.2: releasing the candidate's lock discards its uncommitted changes."""
        if datastore == "candidate":
            self.candidate.reset()


def _copy(element: etree._Element) -> etree._Element:
    return etree.fromstring(etree.tostring(element))
