"""The lab process's side of one-process-per-agent: the clock, the network and the journal, served to agents.

Every agent of a lab runs in its own process (``an-agent serve --topology T --agent NAME --lab-control
HOST:PORT --lab-secret-file F``, see `an_agent.lab.remote`); the lab process keeps what they share:

- the simulated clock (`LabKernel`, in `an_agent.lab.lockstep`): time moves only when the lab's own
  activities (scenario events, the ticket system) are idle, every agent process has reported itself
  idle, no network event is on its way to an agent and no end-of-task hand-off is open. Then the kernel
  moves to the earliest instant any of them has scheduled, writes it to the lab's clock file, and tells
  the agents that have something due there, and those that keep their own copy of the clock (a barrier:
  time moves again only once each of them has acknowledged, with what it woke);
- the network (`SimNetwork`): agents read and act on it by request; its events (alarms) are pushed to
  the agents that subscribed, each counted as work in flight until the agent has queued it;
- the journal (notes, exchanges) and the end-of-task hand-offs (`SimKernel.expect`/`arrive`/`complete`,
  the same bookkeeping as in one process, with the table kept here).

Methods of the control channel (`an_agent.lab.control`), all with ``agent`` the caller's name:

=================  ===========================================================================
``hello``          join: the lab's time, the logins of the lab (``logins``, ``speaks_for``, ``admin``), and
                   ``clock`` (``path``, ``token``) of the lab's clock file (`an_agent.lab.sharedclock`)
``ready``          the agent's NETCONF (and A2A, metrics) port: it serves; ``shared_clock``: it reads the
                   clock file (it is then told only of instants at which it has something due)
``address``        ``[host, port]`` of a peer (``peer``), or null; ``a2a_url`` likewise
``status``         ``seq``, ``busy``, ``head`` (next scheduled instant): sent when the agent turns busy
                   or idle, synchronously (a task handed to an agent is counted before its sender idles)
``next``           long poll of the agent's clock thread: acknowledges what it did (``epoch`` of an
                   advance with its status, ``events`` handled) and waits for the next network events
                   (``{"events": [...]}``), the next instant at which it has something due or, without
                   ``shared_clock``, the next instant (``{"advance": t, "epoch": n}``) or the end
                   (``{"closed": true}``)
``expect`` ...     ``is_expected``, ``arrive``, ``complete``, ``forget``: the hand-off of ``key``
``note``           a journal note; ``exchange``: a recorded NETCONF/A2A exchange; ``error``: a failed activity
``network``        a `ManagedNetwork` call: ``op`` (its name), ``args``; ``{"value": ...}`` or ``{"refused": msg}``
``subscribe``      push the network's events to this agent; ``interest``: null (every event) or a list of
                   ``{"domain", "regions"}`` (either may be null: any): only events of alarms matching one
                   of them are sent (sent again with each new listener: the last one counts)
=================  ===========================================================================

Ordering rule that makes this exact: a status report is answered before the agent goes on (under its
kernel's lock), and a report carries a sequence number so that an older one never overrides a newer one
that came on the other connection.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from an_agent.agents.environment import NetworkEvent
from an_agent.errors import ControlError
from an_agent.lab.control import Handler
from an_agent.lab.journal import Journal
from an_agent.lab.lockstep import LabKernel
from an_agent.lab.network import SimNetwork
from an_agent.lab.wire import NETWORK_METHODS, decode_exchange, encode, param_key, param_name


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
        self._interests: dict[str, list[tuple[str | None, frozenset[str] | None]] | None] = {}
        """The events each subscribed agent needs (``subscribe``'s ``interest``): None, all of them."""
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
        shared = self.kernel.clock.share()
        clock = {} if shared is None else {"clock": shared}
        return {"now": self.kernel.join(name), **clock, **self._logins, **self._hello_files(name)}

    def _on_ready(self, params: dict[str, Any]) -> None:
        name, port, a2a_port = param_name(params), int(params["port"]), params.get("a2a_port")
        if params.get("shared_clock"):
            self.kernel.shares_clock(name)
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
        interest = _interest(params.get("interest"))
        self.kernel.subscribe(name)
        with self._lock:
            self._interests[name] = interest  # a restarted agent's, or its listeners' so far
            if name in self._listening:
                return
            self._listening.add(name)

        def deliver(event: NetworkEvent) -> None:
            with self._lock:
                wanted = self._interests.get(name)
            if wanted is None or any(_matches(w, event) for w in wanted):
                self.kernel.push_event(name, encode(event))

        self.network.subscribe(deliver)


def _interest(value: Any) -> list[tuple[str | None, frozenset[str] | None]] | None:
    """``subscribe``'s ``interest`` (module docstring); `ControlError` when malformed."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ControlError("interest must be null or a list of {domain, regions}")
    wanted: list[tuple[str | None, frozenset[str] | None]] = []
    for item in value:
        domain, regions = item.get("domain"), item.get("regions")
        if not (domain is None or isinstance(domain, str)) or not (regions is None or isinstance(regions, list)):
            raise ControlError("interest: domain is a string or null, regions a list of strings or null")
        wanted.append((domain, None if regions is None else frozenset(str(r) for r in regions)))
    return wanted


def _matches(wanted: tuple[str | None, frozenset[str] | None], event: NetworkEvent) -> bool:
    domain, regions = wanted
    return (domain is None or event.alarm.domain == domain) and (regions is None or event.alarm.region in regions)
