"""An agent process's side of one-process-per-agent: its kernel, network and journal are the lab's.

``an-agent serve --topology T --agent NAME --lab-control HOST:PORT --lab-secret-file F`` calls
`join_lab`: two authenticated connections to the lab's control channel (`an_agent.lab.control`), one for
requests (status reports, hand-offs, network, journal) and one for the clock thread's long poll. The
agent's behaviour runs on an `AgentKernel` — the same `SimKernel` bookkeeping of its own activities, but
time moves only when the lab says so, and every turn between busy and idle is reported to the lab
before the agent goes on (`an_agent.lab.conductor` describes the protocol and why it is exact). Its
network and journal are the lab's, by request (`an_agent.lab.remote_network`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from an_agent.access.users import User, UserDb
from an_agent.agents.base import LabBehaviour
from an_agent.agents.environment import RoleName, SchemaMode
from an_agent.agents.peers import Peers
from an_agent.errors import AnAgentError, ControlError, TransportError
from an_agent.lab.agent import TASK_CAPACITY, build_profile, directory_login, make_behaviour
from an_agent.lab.certs import write_hello_files
from an_agent.lab.control import ControlClient, connect_patiently, read_secret
from an_agent.lab.kernel import Key, SimKernel
from an_agent.lab.remote_network import RemoteJournal, RemoteNetwork
from an_agent.lab.sharedclock import SharedClock
from an_agent.lab.topology import load_topology
from an_agent.lab.waits import Future
from an_agent.model import AgentProfile
from an_agent.nc.directory_client import DirectoryLogin

log = logging.getLogger(__name__)


class AgentKernel(SimKernel):
    """The simulated time of one agent process, driven by its lab (module docstring).

    ``channel`` carries the status reports and hand-offs; `follow` runs the clock thread on another.
    """

    def __init__(self, start: float, name: str, channel: ControlClient, clock: SharedClock | None = None) -> None:
        """``clock``: the lab's clock file, mapped (`an_agent.lab.sharedclock`); None: a copy moved by the lab."""
        # peers_elsewhere: the hand-off table is the lab's; the local entry only holds the future.
        super().__init__(start, peers_elsewhere=True)
        if clock is not None:
            self.clock = clock
        self.shared_clock = clock is not None
        self.name = name
        self._channel = channel
        self._reported = 0
        self._quiet = False  # applying an advance: its acknowledgement reports the status

    # ---- reports (callers hold _cond) -----------------------------------------------------------
    def _inc(self, label: str) -> None:
        was = self._busy
        super()._inc(label)
        if was == 0 and self._busy > 0:
            self._report()

    def _dec(self, label: str) -> None:
        was = self._busy
        super()._dec(label)
        if was > 0 and self._busy <= 0:
            self._report()

    def _report(self) -> None:
        if self._quiet or self._closed:
            return
        try:
            self._channel.call("status", agent=self.name, **self._status())
        except (TransportError, ControlError) as exc:  # the lab is gone: it stops us, nothing to count
            log.debug("status report to the lab: %s", exc)

    def _status(self) -> dict[str, Any]:
        self._reported += 1
        return {"seq": self._reported, "busy": self._busy > 0, "head": self._head()}

    def _record_error(self, text: str) -> None:
        super()._record_error(text)
        self._lab("error", text=text)

    def call_at(self, when: float, label: str, fn: Callable[[], None]) -> Any:
        with self._cond:
            entry = super().call_at(when, label, fn)
            if self._busy == 0:  # scheduled from outside an activity: the lab must see the new instant
                self._report()
            return entry

    # ---- hand-offs: the table is the lab's ------------------------------------------------------
    def expect(self, key: Key) -> Future[Any]:
        future = super().expect(key)
        self._lab("expect", key=list(key))
        return future

    def is_expected(self, key: Key) -> bool:
        return bool(self._lab("is_expected", key=list(key)))

    def arrive(self, key: Key) -> None:
        self._lab("arrive", key=list(key))

    def complete(self, key: Key, value: Any) -> None:
        with self._cond:  # the waiter's turn to busy is reported before the lab closes the hand-off
            super().complete(key, value)
            self._lab("complete", key=list(key))

    def forget(self, key: Key) -> None:
        super().forget(key)
        self._lab("forget", key=list(key))

    def _lab(self, method: str, **params: Any) -> Any:
        try:
            return self._channel.call(method, agent=self.name, **params)
        except (TransportError, ControlError) as exc:
            log.debug("%s to the lab: %s", method, exc)
            return None

    # ---- the clock thread -----------------------------------------------------------------------
    def follow(self, clock: ControlClient, deliver: Callable[[list[Any]], None]) -> bool:
        """Move time as the lab says and hand its network events to ``deliver``, until the lab closes.

        True when the lab ended the run (the kernel is closed then: its activities unwind with `Shutdown`);
        False when the lab was lost (its channel broke): nothing is closed, so that no task in progress is
        ended on the way out (`LabMember.lost`)."""
        ack: dict[str, Any] = {}
        while not self._closed:
            try:
                reply = clock.call("next", agent=self.name, **ack)
            except (TransportError, ControlError) as exc:
                log.warning("lost the lab's clock: %s", exc)
                return False
            if not isinstance(reply, dict) or reply.get("closed"):
                break
            if "events" in reply:
                deliver(list(reply["events"]))
                ack = {"events": len(reply["events"])}
            elif "advance" in reply:
                ack = self._advance(float(reply["advance"]), int(reply["epoch"]))
        self.close()
        return True

    def _advance(self, at: float, epoch: int) -> dict[str, Any]:
        with self._cond:
            self._quiet = True
            try:
                if at > self.clock.now():
                    self.clock.set(at)
                self._wake_until(at)
            finally:
                self._quiet = False
            self._cond.notify_all()
            return {"epoch": epoch, **self._status()}


@dataclass
class LabMember:
    """What `join_lab` gives ``an-agent serve``: the agent to serve and its link to the lab."""

    name: str
    profile: AgentProfile
    behaviour: LabBehaviour | None
    """None for the lab's directory agent (the server plays the directory role itself)."""
    peers: Peers | None
    kernel: AgentKernel
    network: RemoteNetwork
    journal: RemoteJournal
    register_with: DirectoryLogin | None
    """The lab's directory agent, to register with on start (None: no directory, or this is it)."""
    a2a_trust: Path | None
    """The lab's A2A certificates (`an_agent.lab.certs`): the agent serves HTTPS with the one the lab made in
    its state directory, and verifies its peers against these; None: plain HTTP (``--a2a-tls off``)."""
    users: dict[str, str]
    user_db: UserDb
    task_workers: int
    schemas: SchemaMode
    closed: threading.Event
    """Set when the lab ends the run (its clock closes) or is lost: the process should stop serving."""
    _channel: ControlClient
    _clock: ControlClient
    lost: bool = False
    """True (when `closed` is set) if the lab was lost rather than ended the run: its channel broke (the
    lab process died, or a chaos `control_drop`). The process must then stop as if killed, without closing
    anything: closing would end its tasks in progress ("the lab stopped") and tell their assigners, whereas
    a lab that starts the agent again on its state directory resumes them (`Tasks.resume`)."""

    def ready(self, port: int, a2a_port: int | None, metrics_port: int | None = None) -> None:
        """Tell the lab the agent serves (its ports), then start following the lab's clock."""
        self._channel.call(
            "ready",
            agent=self.name,
            port=port,
            a2a_port=a2a_port,
            metrics_port=metrics_port,
            shared_clock=self.kernel.shared_clock,
        )
        threading.Thread(target=self._follow, args=(self.network,), name=f"lab-clock:{self.name}", daemon=True).start()

    def _follow(self, network: RemoteNetwork) -> None:
        try:
            self.lost = not self.kernel.follow(self._clock, network.deliver)
        finally:
            self.closed.set()

    def close(self) -> None:
        """After the server stopped: the kernel, the sessions to peers, the channels."""
        self.kernel.close()
        for thread in self.peers.close(join=False) if self.peers is not None else ():
            thread.join(5.0)
        self._clock.close()
        self._channel.close()


def join_lab(
    topology_file: Path,
    name: str,
    control: str,
    secret_file: Path,
    schemas: SchemaMode | None,
    state_dir: Path,
    incarnation: int | None = None,
) -> LabMember:
    """Join the lab at ``control`` (``HOST:PORT``) as agent ``name`` of ``topology_file`` (module docstring).

    The lab's A2A trust bundle (and, for an agent of another host, its own certificate and key) are written
    into ``state_dir`` (`an_agent.lab.certs.write_hello_files`). ``incarnation``: this start's number, when
    the caller counted it (`an_agent.lab.incarnation`); else it is counted here.

    `ConfigError` for a bad topology, agent or secret file; `TransportError` when the lab cannot be reached.
    """
    from an_agent.errors import ConfigError

    host, sep, port = control.rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--lab-control expects HOST:PORT, got {control!r}")
    topology = load_topology(topology_file)
    spec = topology.agent(name)
    if schemas is not None:
        spec = replace(spec, schemas=schemas)
    secret = read_secret(secret_file)
    channel = connect_patiently(host, int(port), secret)
    try:
        clock = connect_patiently(host, int(port), secret)
    except AnAgentError:
        channel.close()
        raise
    hello = channel.call("hello", agent=name)
    kernel = AgentKernel(float(hello["now"]), name, channel, SharedClock.open(hello.get("clock")))
    network = RemoteNetwork(name, channel)
    journal = RemoteJournal(name, channel)
    logins: dict[str, str] = dict(hello["logins"])
    speaks_for: dict[str, list[str]] = dict(hello.get("speaks_for") or {})

    def address_of(peer: str) -> tuple[str, int] | None:
        value = channel.call("address", agent=name, peer=peer)
        return None if value is None else (str(value[0]), int(value[1]))

    def a2a_url_of(peer: str) -> str | None:
        value = channel.call("a2a_url", agent=name, peer=peer)
        return None if value is None else str(value)

    directory = spec.role == RoleName.DIRECTORY
    a2a_trust = write_hello_files(hello, state_dir)
    behaviour, peers = (None, None) if directory else make_behaviour(
        topology,
        spec,
        kernel,
        network,
        journal,
        address_of,
        credentials=(name, logins[name]),
        a2a_url_of=a2a_url_of,
        a2a_trust=a2a_trust,
        state_dir=state_dir,
        incarnation=incarnation,
    )  # fmt: skip
    user_db = UserDb(
        {
            user: User(user, password, frozenset({"operators"}), frozenset({user, *speaks_for.get(user, ())}))
            for user, password in logins.items()
        }
    )
    admin = hello.get("admin") or []
    return LabMember(
        name=name,
        profile=build_profile(spec),
        behaviour=behaviour,
        peers=peers,
        kernel=kernel,
        network=network,
        journal=journal,
        # the lab starts its directory first: it serves by now
        a2a_trust=a2a_trust,
        register_with=directory_login(topology, name, address_of, (name, logins[name])),
        users={str(admin[0]): str(admin[1])} if admin else {},
        user_db=user_db,
        task_workers=TASK_CAPACITY,
        schemas=spec.schemas,
        closed=threading.Event(),
        _channel=channel,
        _clock=clock,
    )
