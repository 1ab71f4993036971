"""Run the selected checks against a target, never longer than the timeouts allow.

Each face runs in a thread of its own (NETCONF: sections netconf, wang, zhou on its sessions; A2A:
section a2a), watched from the calling thread. A face whose current step (a connect, a request, a
wait) has gone on longer than ``--timeout`` is given up on: its remaining checks fail saying which step
went unanswered, and its sessions are dropped; a face that fails (the session drops, the connection
is refused) ends the same way with the error. The whole run is also bounded by `Options.deadline`.
Then, with --allow-writes, the ``cleanup`` section deletes what the run created. Whatever happens,
every selected check ends with a finding, and the kit's own failure is a finding too, never a crash.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from an_agent.clock import to_rfc3339
from an_agent.conformance import a2a_checks, cleanup, netconf_checks, wang_checks, zhou_checks
from an_agent.conformance.a2a_checks import A2ASide
from an_agent.conformance.checks import CHECKS, SECTIONS, Face, Findings
from an_agent.conformance.netconf_side import NetconfSide
from an_agent.conformance.report import Report
from an_agent.conformance.target import Ledger, Options, Target, Watch
from an_agent.errors import AnAgentError, RpcError, TransportError

GRACE = 1.0
"""Seconds past --timeout before the watchdog gives up on a step (the clients' own timeouts come first)."""
_POLL = 0.05


@dataclass
class _Job:
    name: str
    watch: Watch
    body: Callable[[], None]
    give_up: Callable[[str], None]
    """Record ``reason`` as the failure of everything the job has not judged, and drop its sessions."""
    thread: threading.Thread | None = None
    done: bool = False


def run(target: Target, options: Options) -> Report:
    """Run the checks of ``options.sections`` (and ``cleanup`` with --allow-writes) against ``target``."""
    started_wall, started = time.time(), time.monotonic()
    deadline = started + options.deadline
    order = list(SECTIONS)
    selected = sorted(
        (
            c
            for c in CHECKS.values()
            if c.section in options.sections or (c.section == "cleanup" and options.allow_writes)
        ),
        key=lambda c: order.index(c.section),
    )
    found = Findings(selected)
    if target.netconf is None:  # cleanup, if any, then goes over A2A
        for c in found.pending(Face.NETCONF):
            if c.section != "cleanup":
                found.skipped(c, "no NETCONF address given (--netconf)")
    if target.a2a is None:
        found.skip_pending("no A2A URL given (--a2a)", face=Face.A2A)
    for c in selected:
        if c.writes and not options.allow_writes:
            found.skipped(c, "writes the target: run with --allow-writes")
    ledger = Ledger()
    netconf = NetconfSide(target, options) if target.netconf is not None else None
    a2a = A2ASide(target, options) if target.a2a is not None else None
    jobs = []
    if netconf is not None and found.pending(Face.NETCONF):
        jobs.append(_netconf_job(netconf, found, ledger, options))
    if a2a is not None and found.pending(Face.A2A):
        jobs.append(_a2a_job(a2a, found, ledger, options))
    _supervise(jobs, options, deadline)
    if found.pending(section="cleanup"):
        _supervise([_cleanup_job(netconf, a2a, found, ledger)], options, deadline)
    found.fail_pending("the kit ended without judging this check")
    _close_quietly(netconf, a2a)
    return Report(target, options, found.all(), to_rfc3339(started_wall), time.monotonic() - started)


def _netconf_job(side: NetconfSide, found: Findings, ledger: Ledger, options: Options) -> _Job:
    where = f"{side.host}:{side.port}"

    def body() -> None:
        try:
            side.client  # noqa: B018 - connect (and read the hello) before any section
        except TransportError as exc:
            found.close(Face.NETCONF, f"cannot open a NETCONF session to {where}: {exc}")
            return
        sections: list[tuple[str, Callable[[], None]]] = [
            ("netconf", lambda: netconf_checks.run(side, found)),
            ("wang", lambda: wang_checks.run(side, found, ledger, options.allow_writes)),
            ("zhou", lambda: zhou_checks.run(side, found, ledger, options.allow_writes)),
        ]
        for name, section in sections:
            if name in options.sections:
                _section(name, section, found, Face.NETCONF, f"NETCONF {where}")

    def give_up(reason: str) -> None:
        found.close(Face.NETCONF, reason)
        _in_background(side.abort)

    return _Job("netconf", side.watch, body, give_up)


def _a2a_job(side: A2ASide, found: Findings, ledger: Ledger, options: Options) -> _Job:
    def body() -> None:
        _section("a2a", lambda: a2a_checks.run(side, found, ledger, options.allow_writes), found, Face.A2A, side.url)

    def give_up(reason: str) -> None:
        found.close(Face.A2A, reason)
        _in_background(side.close)

    return _Job("a2a", side.watch, body, give_up)


def _cleanup_job(netconf: NetconfSide | None, a2a: A2ASide | None, found: Findings, ledger: Ledger) -> _Job:
    watch = netconf.watch if netconf is not None else a2a.watch if a2a is not None else Watch()

    def body() -> None:
        try:
            if netconf is not None:
                cleanup.run_netconf(netconf, found, ledger)
            elif a2a is not None:
                cleanup.run_a2a(a2a, found, ledger)
        except AnAgentError as exc:
            found.fail_pending(f"cleanup failed: {exc}; the run's ids start {ledger.prefix}", section="cleanup")

    def give_up(reason: str) -> None:
        found.fail_pending(f"{reason}; the run's ids start {ledger.prefix}", section="cleanup")
        if netconf is not None:
            _in_background(netconf.abort)

    return _Job("cleanup", watch, body, give_up)


def _section(name: str, work: Callable[[], None], found: Findings, face: Face, where: str) -> None:
    """Run one section: a refusal it did not expect fails the rest of the section, a transport failure
    the rest of the face; the kit's own error is reported as the reason, never raised."""
    try:
        work()
    except TransportError as exc:
        found.close(face, f"the session to {where} failed: {exc}")
    except RpcError as exc:
        found.fail_pending(f"an unexpected refusal stopped the section: {exc}", section=name)
    except AnAgentError as exc:
        found.fail_pending(f"stopped: {exc}", section=name)
    except Exception as exc:  # the kit's own defect: reported with the findings, never a traceback
        found.fail_pending(f"the conformance kit failed: {type(exc).__name__}: {exc}", section=name)


def _supervise(jobs: list[_Job], options: Options, deadline: float) -> None:
    for job in jobs:
        job.thread = threading.Thread(target=job.body, name=f"conformance-{job.name}", daemon=True)
        job.thread.start()
    limit = options.timeout + GRACE
    while True:
        running = [j for j in jobs if not j.done and j.thread is not None and j.thread.is_alive()]
        if not running:
            return
        for job in running:
            stuck = job.watch.overdue(limit)
            if stuck is not None:
                job.done = True
                job.give_up(f"{stuck}: no answer within {options.timeout:g} s")
            elif time.monotonic() > deadline:
                job.done = True
                job.give_up(f"the run's deadline ({options.deadline:g} s) passed")
        time.sleep(_POLL)


def _quietly(work: Callable[[], None]) -> Callable[[], None]:
    def run_it() -> None:
        try:
            work()
        except Exception:  # closing a broken session: nothing left to report
            return

    return run_it


def _in_background(work: Callable[[], None]) -> threading.Thread:
    """Run ``work`` (a close that may block on a dead peer) in a thread of its own; returns the thread."""
    thread = threading.Thread(target=_quietly(work), name="conformance-close", daemon=True)
    thread.start()
    return thread


def _close_quietly(netconf: NetconfSide | None, a2a: A2ASide | None) -> None:
    """Close both faces' sessions, waiting a few seconds at most (a dead peer may never answer)."""
    for thread in [_in_background(s.close) for s in (netconf, a2a) if s is not None]:
        thread.join(5.0)
