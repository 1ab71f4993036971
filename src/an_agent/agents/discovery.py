"""Finding peers through a directory (draft-wang 4.1/5.1, draft-zhou 3.2 step 2) instead of wiring them by name.

`Discovery` asks a directory agent (`an_agent.nc.directory_client`) for the agents that fit a query
(skill, domain, schema, provider). ``allowed`` is the caller's policy of whom it may talk to (a lab's
``talks_to``): the directory finds, the policy filters; it never adds a peer. When no agent fits,
`choose` raises `NoPeerFits` whose message says what was asked, where, and what the policy allowed,
so the caller's task fails with that reason ("SHOULD report the failure", draft-zhou 3.2 step 2).

`BrokerBehaviour` is an agent that does nothing itself: each task goes to a peer it finds in the
directory, by the schema of the task's structured payload (an agent that accepts it) or else by the
broker's skill. The peer's ``input-required`` is relayed to the broker's assigner (the broker's own task
asks for the same items), and the answer relayed back, so an input round trip works across the two hops;
the peer's result or failure ends the broker's task.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace

from an_agent.agents.exchange import Exchange, Recorder, next_order
from an_agent.agents.sdk import Behaviour, TaskRun
from an_agent.errors import AnAgentError
from an_agent.model import (
    DataParam,
    NegotiationRequest,
    NegotiationResult,
    NegotiationType,
    Task,
    TaskResult,
    TaskStatus,
)
from an_agent.model.directory import AgentQuery, DirectoryEntry
from an_agent.nc.agent_client import AgentClient
from an_agent.nc.directory_client import DirectoryLogin
from an_agent.schemas.validate import schema_id_from_media_type


class NoPeerFits(AnAgentError):
    """No registered agent fits the query (and the policy); the message says what and where."""


class Discovery:
    """Peers found in the directory at ``login``, filtered by the ``allowed`` names (None: no policy)."""

    def __init__(self, login: DirectoryLogin, allowed: Collection[str] | None = None) -> None:
        self.login = login
        self.allowed = None if allowed is None else frozenset(allowed)

    def find(self, query: AgentQuery) -> list[DirectoryEntry]:
        """The agents that fit ``query`` and the policy, by name."""
        with self.login.connect() as directory:
            found = directory.find(query)
        return [e for e in found if self.allowed is None or e.name in self.allowed]

    def choose(self, query: AgentQuery, exclude: str = "") -> DirectoryEntry:
        """The first fitting agent other than ``exclude`` (the caller itself); `NoPeerFits` when none."""
        fitting = [e for e in self.find(query) if e.name != exclude and e.port is not None]
        if not fitting:
            policy = (
                ""
                if self.allowed is None
                else f" among the agents it may talk to ({', '.join(sorted(self.allowed)) or 'none'})"
            )
            raise NoPeerFits(
                f"no agent registered in the directory at {self.login.host}:{self.login.port} fits "
                f"{query.describe()}{policy}"
            )
        return fitting[0]


class DirectoryPeers:
    """A lab agent's peers found through its lab's directory agent (`an_agent.agents.environment.PeerFinder`).

    ``find(role)`` asks the directory (``find-agents``) for the role's skill (``skill_of``), keeps the
    answers the ``allowed`` policy (``talks_to``) lets ``me`` talk to, and remembers where each one said
    it listens: `address_of` and `a2a_url_of` give the peers' addresses *from the directory's answer*,
    not from the topology. Each query is recorded (``record``) as an exchange ``find-agents`` /
    ``AgentDiscovery`` to ``directory_name``, saying what the directory answered and what the policy
    kept; `why_none` keeps the explanation of a query nothing fit, for the caller's failure reason.
    ``login`` is called for each query (the directory's address is known once it serves); it returns
    None when there is no directory to ask.
    """

    def __init__(
        self,
        me: str,
        directory_name: str,
        login: Callable[[], DirectoryLogin | None],
        allowed: Collection[str],
        skill_of: Mapping[str, str],
        record: Recorder,
        now: Callable[[], float],
    ) -> None:
        self.me = me
        self.directory_name = directory_name
        self._login = login
        self.allowed = frozenset(allowed)
        self._skill_of = dict(skill_of)
        self._record = record
        self._now = now
        self._lock = threading.Lock()
        self._found: dict[str, DirectoryEntry] = {}
        self._why: dict[str, str] = {}

    def find(self, role: str) -> list[str]:
        """The names the directory answers for ``role``'s skill that the policy allows (sorted)."""
        skill = self._skill_of.get(role, role)
        query = AgentQuery(skill=skill)
        login = self._login()
        order = next_order()
        if login is None:
            self._note_none(role, "the lab has no directory serving yet", query, order, ok=False)
            return []
        try:
            answer = [e for e in Discovery(login).find(query) if e.name != self.me]
        except AnAgentError as exc:
            self._note_none(role, f"the directory at {login.host}:{login.port} failed: {exc}", query, order, ok=False)
            return []
        kept = [e for e in answer if e.name in self.allowed and e.port is not None]
        with self._lock:
            self._found.update((e.name, e) for e in kept)
        answered = ", ".join(e.name for e in answer) or "none"
        if kept:
            self._why.pop(role, None)
            kept_names = ", ".join(e.name for e in kept)
            summary = f"{query.describe()}: directory answered {answered}; talks_to keeps {kept_names}"
        else:
            policy = ", ".join(sorted(self.allowed)) or "none"
            why = (
                f"no agent registered in the directory at {login.host}:{login.port} fits {query.describe()} "
                f"among the agents {self.me} may talk to ({policy}); the directory answered {answered}"
            )
            self._why[role] = why
            summary = why
        self._record(
            Exchange(
                self._now(), self.me, self.directory_name, "find-agents", "AgentDiscovery", None, summary,
                "found" if kept else "no fit", None, True, None, order,
            )
        )  # fmt: skip
        return sorted(e.name for e in kept)

    def _note_none(self, role: str, why: str, query: AgentQuery, order: int, ok: bool) -> None:
        self._why[role] = f"no agent found for {query.describe()}: {why}"
        self._record(
            Exchange(
                self._now(), self.me, self.directory_name, "find-agents", "AgentDiscovery", None, self._why[role],
                "no fit", None, ok, None if ok else why, order,
            )
        )  # fmt: skip

    def why_none(self, role: str) -> str:
        return self._why.get(role, "")

    def address_of(self, name: str) -> tuple[str, int] | None:
        """Where ``name`` said it listens when the directory last answered it (None: not found yet)."""
        with self._lock:
            entry = self._found.get(name)
        if entry is None or entry.port is None:
            return None
        return (entry.address or "127.0.0.1", entry.port)

    def a2a_url_of(self, name: str) -> str | None:
        with self._lock:
            entry = self._found.get(name)
        return None if entry is None else entry.a2a_url


class BrokerBehaviour(Behaviour):
    """Delegates every task to a peer found through the directory (module docstring).

    ``login`` is the broker's user on its peers (user, password); ``skill`` what to look for when a
    task carries no structured payload; ``input_seconds`` how long the relayed question waits.
    """

    def __init__(
        self,
        discovery: Discovery,
        login: tuple[str, str],
        skill: str | None = None,
        input_seconds: float = 300.0,
        timeout: float = 30.0,
    ) -> None:
        self.discovery = discovery
        self.login = login
        self.skill = skill
        self.input_seconds = input_seconds
        self.timeout = timeout

    def execute(self, task: Task, run: TaskRun) -> None:
        run.set_status(TaskStatus.PROCESSING)
        params = self.agent.data_params(task.msg_data)
        schema = next((s for p in params if p.format and (s := schema_id_from_media_type(p.format))), None)
        query = AgentQuery(schema=schema) if schema else AgentQuery(skill=self.skill)
        try:
            peer = self.discovery.choose(query, exclude=self.agent.profile.name)
        except AnAgentError as exc:  # NoPeerFits, or the directory cannot be reached
            run.fail(str(exc))
            return
        run.block(f"delegated to {peer.name}, found in the directory by {query.describe()}")
        try:
            self._delegate(task, run, peer, params)
        except AnAgentError as exc:
            run.fail(f"the delegation to {peer.name} failed: {exc}")

    def _connect(self, peer: DirectoryEntry) -> AgentClient:
        assert peer.port is not None
        user, password = self.login
        return AgentClient.connect(
            peer.address or "127.0.0.1", peer.port, username=user, password=password, timeout=self.timeout
        )

    def _delegate(self, task: Task, run: TaskRun, peer: DirectoryEntry, params: list[DataParam]) -> None:
        sub_id = f"{task.task_id}.{peer.name}"
        forwarded = [_renamed(p, f"{sub_id}.{p.id}") for p in params]
        with self._connect(peer) as watcher, self._connect(peer) as client:
            events = watcher.watch(sub_id, timeout=None)  # subscribed before the task exists: nothing missed
            client.assign_task(
                Task(
                    sub_id, send_to=peer.name, task_async=True, content=task.content, msg_data=[p.id for p in forwarded]
                ),
                forwarded,
            )
            for event in events:
                if run.cancelled:
                    client.cancel_task(sub_id)
                    return
                if event.status == TaskStatus.INPUT_REQUIRED:
                    if not self._relay_input(
                        run, client, peer, sub_id, event.reason, [i.required for i in event.input_required]
                    ):
                        client.cancel_task(sub_id)
                        return
                elif event.status == TaskStatus.FINISHED:
                    result = client.get_task(sub_id).result or TaskResult()
                    summary = f"{peer.name}: {result.summary or 'finished'}"
                    run.finish(TaskResult(summary=summary, format=result.format, data=result.data))
                    return
                elif event.status.terminal:
                    run.fail(
                        f"{peer.name} ended the delegated task {event.status.value}: {event.reason or 'no reason'}"
                    )
                    return

    def _relay_input(
        self, run: TaskRun, client: AgentClient, peer: DirectoryEntry, sub_id: str, reason: str | None, asked: list[str]
    ) -> bool:
        """Ask the assigner what ``peer`` asks, pass its answer on; False when none came."""
        before = run.task.content
        provided = run.request_input(asked, f"{peer.name} asks: {reason or 'input required'}", self.input_seconds)
        if provided is None:
            if not run.cancelled:
                run.fail(f"{peer.name} asked for input and none came within {self.input_seconds:g} s")
            return False
        content = provided.task.content if provided.task.content != before else None
        client.provide_input(sub_id, [_renamed(p, f"{sub_id}.{p.id}") for p in provided.data_params], content)
        run.block(f"input passed on to {peer.name}")
        return True

    def negotiate(self, request: NegotiationRequest, task: Task | None) -> NegotiationResult:
        """FEASIBILITY: feasible when some agent in the directory fits the broker's skill; else why not."""
        if request.type != NegotiationType.FEASIBILITY:
            return NegotiationResult(
                type=request.type, fulfilled=task is not None and task.status == TaskStatus.FINISHED
            )
        try:
            peer = self.discovery.choose(AgentQuery(skill=self.skill), exclude=self.agent.profile.name)
        except AnAgentError as exc:
            return NegotiationResult(type=request.type, feasible=False, reason=str(exc))
        return NegotiationResult(
            type=request.type, feasible=True, reason=f"{peer.name} (found in the directory) can do it"
        )


def _renamed(param: DataParam, new_id: str) -> DataParam:
    """``param`` under ``new_id`` (ids are the assigner's; on the peer they must not collide)."""
    return replace(param, id=new_id)
