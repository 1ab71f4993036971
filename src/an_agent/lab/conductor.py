"""The lab process's side of one-process-per-agent: the clock, the network and the journal, served to agents.

Every agent of a lab runs in its own process (``an-agent serve --topology T --agent NAME --lab-control
HOST:PORT --lab-secret-file F``, see `an_agent.lab.remote`); the lab process keeps what they share:

- the simulated clock (`LabKernel`): time moves only when the lab's own activities (scenario events,
  the ticket system) are idle, every agent process has reported itself idle, no network event is on its
  way to an agent and no end-of-task hand-off is open. Then the kernel moves to the earliest instant any
  of them has scheduled and tells every agent to move its clock there (a barrier: time moves again only
  once each agent has acknowledged, with what it woke);
- the network (`SimNetwork`): agents read and act on it by request; its events (alarms) are pushed to
  the agents that subscribed, each counted as work in flight until the agent has queued it;
- the journal (notes, exchanges) and the end-of-task hand-offs (`SimKernel.expect`/`arrive`/`complete`,
  the same bookkeeping as in one process, with the table kept here).

Methods of the control channel (`an_agent.lab.control`), all with ``agent`` the caller's name:

=================  ===========================================================================
``hello``          join: the lab's time, the logins of the lab (``logins``, ``speaks_for``, ``admin``)
``ready``          the agent's NETCONF (and A2A, metrics) port: it serves
``address``        ``[host, port]`` of a peer (``peer``), or null; ``a2a_url`` likewise
``status``         ``seq``, ``busy``, ``head`` (next scheduled instant): sent when the agent turns busy
                   or idle, synchronously (a task handed to an agent is counted before its sender idles)
``next``           long poll of the agent's clock thread: acknowledges what it did (``epoch`` of an
                   advance with its status, ``events`` handled) and waits for the next network events
                   (``{"events": [...]}``), the next instant (``{"advance": t, "epoch": n}``) or the end
                   (``{"closed": true}``)
``expect`` ...     ``is_expected``, ``arrive``, ``complete``, ``forget``: the hand-off of ``key``
``note``           a journal note; ``exchange``: a recorded NETCONF/A2A exchange; ``error``: a failed activity
``network``        a `ManagedNetwork` call: ``op`` (its name), ``args``; ``{"value": ...}`` or ``{"refused": msg}``
``subscribe``      push the network's events to this agent
=================  ===========================================================================

Ordering rule that makes this exact: a status report is answered before the agent goes on (under its
kernel's lock), and a report carries a sequence number so that an older one never overrides a newer one
that came on the other connection.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from an_agent.agents.environment import NetworkEvent
from an_agent.errors import ControlError
from an_agent.lab.control import Handler
from an_agent.lab.journal import Journal
from an_agent.lab.kernel import Key, SimKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.wire import NETWORK_METHODS, decode_exchange, encode, param_key, param_name

ADVANCE = "clock advance to the agents"


@dataclass(eq=False)
class _Remote:
    name: str
    seq: int = 0
    busy: bool = False
    head: float | None = None
    events: deque[Any] = field(default_factory=deque)
    subscribed: bool = False


class LabKernel(SimKernel):
    """A `SimKernel` whose quiescence and next instant also count agents in other processes (module docstring)."""

    def __init__(self, start: float, stall_timeout: float = 60.0) -> None:
        super().__init__(start, stall_timeout=stall_timeout)
        self._remotes: dict[str, _Remote] = {}
        self._cuts: set[frozenset[str]] = set()
        self._assigners: dict[Key, str] = {}
        self._parked: set[Key] = set()
        self._orphaned: set[Key] = set()
        """Hand-offs whose executor's process is gone before its side came (`executor_gone`)."""
        self._epoch = 0
        self._awaiting: set[str] = set()

    # ---- membership -----------------------------------------------------------------------------
    def join(self, name: str) -> float:
        """Count agent ``name`` from now on (a restarted agent joins again, as new); returns the time."""
        with self._cond:
            self._drop(name)
            self._remotes[name] = _Remote(name)
            return self.clock.now()

    def detach(self, name: str) -> None:
        """Stop counting agent ``name`` (its process is gone): its busy unit, events and acknowledgement."""
        with self._cond:
            self._drop(name)

    def _drop(self, name: str) -> None:
        remote = self._remotes.pop(name, None)
        if remote is None:
            return
        if remote.busy:
            self._dec(f"agent {name}")
        for _ in remote.events:
            self._dec(f"network events to {name}")
        self._ack(name)
        self._cond.notify_all()

    # ---- partitions: a task's end that cannot cross a cut does not hold time ----------------------
    def expect_for(self, key: Key, assigner: str) -> None:
        """`expect` by agent ``assigner`` (the executor is ``key[0]``)."""
        with self._cond:
            self.expect(key)
            self._assigners[key] = assigner

    def cut(self, a: str, b: str) -> None:
        """Agents ``a`` and ``b`` no longer reach each other (``--chaos partition``).

        The end of a task between them cannot reach its assigner until the cut heals (its notification
        waits in the executor's TCP send queue), and the heal is a later instant: so once the executor
        has arrived at such a hand-off it is *parked* — not counted as in flight — and time moves on.
        """
        with self._cond:
            self._cuts.add(frozenset((a, b)))
            for key in [k for k, h in self._handoffs.items() if h.arrivals == 1 and self._crosses_cut(k)]:
                self._parked.add(key)
                self._dec(f"hand-off {key[0]}/{key[1]}")
            self._cond.notify_all()

    def heal(self, a: str, b: str) -> None:
        """``a`` and ``b`` reach each other again: their parked hand-offs are in flight again (time holds)."""
        with self._cond:
            self._cuts.discard(frozenset((a, b)))
            for key in [k for k in self._parked if not self._crosses_cut(k)]:
                self._parked.discard(key)
                self._inc(f"hand-off {key[0]}/{key[1]}")
            self._cond.notify_all()

    def _crosses_cut(self, key: Key) -> bool:
        assigner = self._assigners.get(key)
        return assigner is not None and frozenset((assigner, key[0])) in self._cuts

    def _arrive(self, key: Key) -> None:
        handoff = self._handoffs.get(key)
        if handoff is None:
            return
        if key in self._parked:  # the second side, uncounted like the first: the hand-off is over
            self._parked.discard(key)
            self._assigners.pop(key, None)
            del self._handoffs[key]
        elif handoff.arrivals == 0 and self._crosses_cut(key):
            handoff.arrivals = 1
            self._parked.add(key)
        else:
            super()._arrive(key)
            if key not in self._handoffs:
                self._assigners.pop(key, None)

    def executor_gone(self, name: str) -> None:
        """Agent ``name``'s process is gone: the task ends its assigners already have (their side of the
        hand-off came) no longer wait for its side, which the dead process cannot send and a restarted one
        will not (the task has ended). Found by lab soak: an end reported as the agent's control channel
        was cut held the lab's clock for ever."""
        with self._cond:
            self._orphaned = {k for k in self._orphaned if k in self._handoffs}  # those settled since: gone
            self._orphaned |= {key for key in self._handoffs if key[0] == name}  # see `complete`
            for key in [k for k in self._orphaned if self._handoffs[k].completed and self._handoffs[k].arrivals == 1]:
                self._settle(key)
            self._cond.notify_all()

    def complete(self, key: Key, value: Any) -> None:
        """The assigner's side; for a task whose executor was restarted meanwhile (`executor_gone`) the
        whole hand-off: the new process ends the resumed task without the old one's bookkeeping (found by
        lab soak: a field ticket failed by a restarted copilot held the lab's clock for ever)."""
        with self._cond:
            super().complete(key, value)
            handoff = self._handoffs.get(key)
            if key in self._orphaned and handoff is not None and handoff.completed and handoff.arrivals == 1:
                self._settle(key)
            if key not in self._handoffs:
                self._orphaned.discard(key)

    def _settle(self, key: Key) -> None:
        """End the hand-off ``key`` whose one side came (caller holds the lock)."""
        del self._handoffs[key]
        self._assigners.pop(key, None)
        self._orphaned.discard(key)
        if key in self._parked:
            self._parked.discard(key)
        else:
            self._dec(f"hand-off {key[0]}/{key[1]}")

    def forget(self, key: Key) -> None:
        with self._cond:
            self._assigners.pop(key, None)
            if key in self._parked:  # not counted: nothing to give back
                self._parked.discard(key)
                self._handoffs.pop(key, None)
                return
            super().forget(key)

    # ---- what agents report ---------------------------------------------------------------------
    def report(self, name: str, seq: int, busy: bool, head: float | None) -> None:
        """Agent ``name`` is busy or idle and its next instant is ``head`` (ignored when older than the last)."""
        with self._cond:
            remote = self._remotes.get(name)
            if remote is None or seq <= remote.seq:
                return
            remote.seq = seq
            if busy and not remote.busy:
                self._inc(f"agent {name}")
            elif remote.busy and not busy:
                self._dec(f"agent {name}")
            remote.busy, remote.head = busy, head
            self._changes += 1
            self._cond.notify_all()

    def push_event(self, name: str, event: Any) -> None:
        """Queue a network event for agent ``name``: in flight (time holds) until it acknowledges it."""
        with self._cond:
            remote = self._remotes.get(name)
            if remote is None or self._closed:
                return
            remote.events.append(event)
            self._inc(f"network events to {name}")
            self._cond.notify_all()

    def subscribe(self, name: str) -> bool:
        """Mark ``name`` as a listener; False when it was one already (a restarted agent subscribes again)."""
        with self._cond:
            remote = self._remotes.get(name)
            if remote is None:
                raise ControlError(f"agent {name} has not joined")
            first = not remote.subscribed
            remote.subscribed = True
            return first

    def next_for(self, name: str, ack: dict[str, Any]) -> dict[str, Any]:
        """The ``next`` long poll (module docstring)."""
        with self._cond:
            remote = self._remotes.get(name)
            if remote is None:
                return {"closed": True}
            for _ in range(int(ack.get("events", 0))):
                if remote.events:
                    remote.events.popleft()
                    self._dec(f"network events to {name}")
            if "epoch" in ack and int(ack["epoch"]) == self._epoch:
                self._ack(name)
            if "seq" in ack:  # the lock is reentrant
                self.report(name, int(ack["seq"]), bool(ack["busy"]), ack.get("head"))
            while not self._closed and self._remotes.get(name) is remote:
                # The advance first: events in the queue now were raised at the new instant (none can be
                # left from before it: time moves only when none is in flight).
                if name in self._awaiting:
                    return {"advance": self.clock.now(), "epoch": self._epoch}
                if remote.events:  # what was sent before is acknowledged above: these are all new
                    return {"events": list(remote.events)}
                self._cond.wait()
            return {"closed": True}

    def add_error(self, text: str) -> None:
        """An activity of an agent process failed (it reports it, the result lists it)."""
        with self._cond:
            self.stats.errors.append(text)

    def _ack(self, name: str) -> None:
        if name in self._awaiting:
            self._awaiting.discard(name)
            if not self._awaiting:
                self._dec(ADVANCE)

    # ---- SimKernel hooks --------------------------------------------------------------------------
    def _head(self) -> float | None:
        local = super()._head()
        heads = [r.head for r in self._remotes.values() if r.head is not None]
        if local is not None:
            heads.append(local)
        return min(heads) if heads else None

    def _advanced(self, at: float) -> None:
        if not self._remotes:
            return
        self._epoch += 1
        if not self._awaiting:
            self._inc(ADVANCE)
        self._awaiting = set(self._remotes)
        for remote in self._remotes.values():  # their acknowledgements tell what they scheduled next
            if remote.head is not None and remote.head <= at:
                remote.head = None


class Conductor:
    """The control channel's handlers over a lab's kernel, network and journal (module docstring).

    ``address_of``/``a2a_url_of`` answer the agents' look-ups of their peers; ``logins`` is what ``hello``
    gives every agent (the lab's users and who may speak for whom), ``hello_files`` what it gives one agent
    for HTTPS (`an_agent.lab.certs.hello_files`).
    """

    def __init__(
        self,
        kernel: LabKernel,
        network: SimNetwork,
        journal: Journal,
        address_of: Callable[[str], tuple[str, int] | None],
        a2a_url_of: Callable[[str], str | None],
        logins: dict[str, Any],
        on_ready: Callable[[str, int, int | None], None] = lambda name, port, a2a_port: None,
        hello_files: Callable[[str], dict[str, str]] = lambda name: {},
    ) -> None:
        self.kernel = kernel
        self._hello_files = hello_files
        self._on_ready_callback = on_ready
        self.network = network
        self.journal = journal
        self._address_of = address_of
        self._a2a_url_of = a2a_url_of
        self._logins = logins
        self._lock = threading.Lock()
        self._ready: dict[str, dict[str, Any]] = {}
        self._joined: dict[str, float] = {}
        self._ready_changed = threading.Condition(self._lock)
        self._listening: set[str] = set()
        self._expecters: dict[tuple[str, str], str] = {}

    def handlers(self) -> dict[str, Handler]:
        return {
            "hello": self._hello,
            "ready": self._on_ready,
            "address": lambda p: self._address_of(param_name(p, "peer")),
            "a2a_url": lambda p: self._a2a_url_of(param_name(p, "peer")),
            "status": lambda p: self.kernel.report(param_name(p), int(p["seq"]), bool(p["busy"]), p.get("head")),
            "next": lambda p: self.kernel.next_for(param_name(p), p),
            "expect": self._expect,
            "is_expected": lambda p: self.kernel.is_expected(param_key(p)),
            "arrive": lambda p: self.kernel.arrive(param_key(p)),
            "complete": lambda p: self.kernel.complete(param_key(p), None),
            "forget": lambda p: self.kernel.forget(param_key(p)),
            "note": lambda p: self.journal.note(
                str(p["who"]), str(p["kind"]), str(p["text"]), **dict(p.get("details") or {})
            ),
            "exchange": self._exchange,
            "error": self._error,
            "network": self._network,
            "subscribe": self._subscribe,
        }

    # ---- membership -----------------------------------------------------------------------------
    def _hello(self, params: dict[str, Any]) -> dict[str, Any]:
        name = param_name(params)
        with self._lock:
            self._ready.pop(name, None)
            self._joined[name] = time.monotonic()
            self._ready_changed.notify_all()
        return {"now": self.kernel.join(name), **self._logins, **self._hello_files(name)}

    def _on_ready(self, params: dict[str, Any]) -> None:
        name, port, a2a_port = param_name(params), int(params["port"]), params.get("a2a_port")
        self._on_ready_callback(name, port, a2a_port)  # before anyone may look the agent up
        with self._lock:
            self._ready[name] = {"port": port, "a2a_port": a2a_port, "metrics_port": params.get("metrics_port")}
            self._ready_changed.notify_all()

    def ready(self, name: str) -> dict[str, Any] | None:
        """What agent ``name`` said when it started serving (its ports), or None before."""
        with self._lock:
            return self._ready.get(name)

    def arrivals(self, names: Collection[str]) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
        """Of ``names``: when each that said ``hello`` did (monotonic), and what each ready one said
        (`an_agent.lab.bringup`)."""
        with self._lock:
            return (
                {n: self._joined[n] for n in names if n in self._joined},
                {n: self._ready[n] for n in names if n in self._ready},
            )

    def wait_arrival(self, timeout: float) -> None:
        """Return when an agent says ``hello`` or ``ready``, or after ``timeout`` seconds."""
        with self._lock:
            self._ready_changed.wait(timeout)

    def wait_ready(self, names: set[str], timeout: float, alive: Callable[[], str | None]) -> dict[str, Any]:
        """Wait until every agent of ``names`` is ready; `ControlError` naming the missing ones otherwise.

        ``alive`` returns a message when an agent process has died meanwhile (no use waiting further).
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            while not names <= set(self._ready):
                dead = alive()
                if dead:
                    raise ControlError(dead)
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    missing = ", ".join(sorted(names - set(self._ready)))
                    raise ControlError(f"agents not serving after {timeout:.0f} s: {missing}")
                self._ready_changed.wait(min(remaining, 0.2))
            return {n: self._ready[n] for n in names}

    def forget_agent(self, name: str) -> None:
        """Agent ``name``'s process is gone: stop counting it, its ports and the task ends it awaited."""
        self.kernel.detach(name)
        with self._lock:
            self._ready.pop(name, None)
            self._joined.pop(name, None)
            awaited = [key for key, who in self._expecters.items() if who == name]
            for key in awaited:
                del self._expecters[key]
        for key in awaited:  # nobody in the new process waits for them: they must not hold time
            self.kernel.forget(key)
        self.kernel.executor_gone(name)

    def _expect(self, params: dict[str, Any]) -> None:
        key = param_key(params)
        self.kernel.expect_for(key, param_name(params))
        with self._lock:
            self._expecters[key] = param_name(params)

    # ---- journal --------------------------------------------------------------------------------
    def _exchange(self, params: dict[str, Any]) -> None:
        exchange = decode_exchange(params["exchange"])
        # Order numbers are per process; the lab's own sequence orders what arrives here.
        from an_agent.agents.exchange import next_order

        self.journal.record(dataclasses.replace(exchange, order=next_order()))

    def _error(self, params: dict[str, Any]) -> None:
        self.kernel.add_error(f"{param_name(params)}: {params['text']}")

    # ---- network --------------------------------------------------------------------------------
    def _network(self, params: dict[str, Any]) -> dict[str, Any]:
        method = params.get("op")
        if not isinstance(method, str) or method not in NETWORK_METHODS:
            raise ControlError(f"no network method {method!r}")
        args = params.get("args") or []
        try:
            value = getattr(self.network, method)(*args)
        except ValueError as exc:
            return {"refused": str(exc)}
        except KeyError as exc:
            return {"refused": f"unknown element {exc}", "key_error": True}
        return {"value": encode(value)}

    def _subscribe(self, params: dict[str, Any]) -> None:
        name = param_name(params)
        self.kernel.subscribe(name)
        with self._lock:
            if name in self._listening:
                return
            self._listening.add(name)

        def deliver(event: NetworkEvent) -> None:
            self.kernel.push_event(name, encode(event))

        self.network.subscribe(deliver)
