"""`Served`: what a face needs of whatever it serves — an agent (`Operations`) or a lab's element manager.

The NETCONF face (`an_agent.nc.face.NetconfFace`) serves both through these methods: sessions and the
running lock, reads through the NACM read view, edits, RFC 5277 subscriptions, and `invoke` for the RPCs
of the served modules that the face does not carry itself. Task and schema operations (task-negotiate,
the schema RPCs, the directory) are an agent's only: the face reaches them when it serves an `Operations`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Protocol

from lxml import etree

from an_agent.clock import Clock
from an_agent.errors import RpcError
from an_agent.runtime.access import Access, Authorizer
from an_agent.runtime.event_rendering import EventSink
from an_agent.runtime.notifications import NotificationBus, Subscription
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import EditConfig, ReadScope, Subscribe
from an_agent.runtime.sessions import SessionTable
from an_agent.store.agent_store import AgentStore
from an_agent.yang.context import YangContext
from an_agent.yang.info import ModuleInfo


class Served(Protocol):
    """The operation layer behind a NETCONF face (module docstring); every method raises `RpcError` to refuse."""

    sessions: SessionTable
    authorizer: Authorizer
    yang: YangContext
    log_created: float
    """When the notification log began (RFC 5277 ``replayLogCreationTime``)."""

    def modules(self) -> list[ModuleInfo]:
        """The YANG modules served (capabilities, RFC 6022 schemas)."""
        ...

    def open_session(self, session_id: int, principal: Principal, close: Callable[[], None]) -> None: ...

    def close_session(self, session_id: int) -> None: ...

    def read(
        self,
        principal: Principal,
        scope: ReadScope | None = None,
        config_only: bool = False,
        extra: Iterable[etree._Element] = (),
    ) -> list[etree._Element]:
        """The data tree ``principal`` may read (top-level elements), ``extra`` through the same read view."""
        ...

    def data_version(self) -> Hashable:
        """A value that changes whenever what `read` returns may change (a face's reply memo)."""
        ...

    def keys_of(self, element: etree._Element) -> tuple[str, ...]:
        """List key names when ``element`` is a list entry of the data tree, else ()."""
        ...

    def edit_config(self, principal: Principal, session_id: int, request: EditConfig) -> None: ...

    def lock(self, principal: Principal, session_id: int) -> None: ...

    def unlock(self, principal: Principal, session_id: int) -> None: ...

    def kill_session(self, principal: Principal, session_id: int, target: int) -> None: ...

    def subscribe(
        self, principal: Principal, session_id: int, request: Subscribe, send: EventSink | Callable[[str], None]
    ) -> Subscription: ...

    def invoke(self, principal: Principal, operation: etree._Element) -> list[etree._Element] | None:
        """An RPC of a served module that the face does not carry itself (its input already validated by
        libyang): the output nodes, or None for ``<ok/>``."""
        ...


class SessionsAndEvents:
    """What every `Served` does alike: sessions, the running lock, kill-session, RFC 5277 subscriptions over
    the durable notification log, and publishing to it. Subclasses set the attributes in their ``__init__``."""

    sessions: SessionTable
    authorizer: Authorizer
    clock: Clock
    store: AgentStore
    bus: NotificationBus

    def publish_notification(self, content: etree._Element) -> None:
        """Log ``content`` (a notification body) durably and send it to every subscriber."""
        xml = etree.tostring(content, encoding="unicode")

        def log_event() -> tuple[int, float, str]:
            now = self.clock.now()
            return self.store.append_notification(now, xml), now, xml

        self.bus.publish(log_event)

    def _exec(self, principal: Principal, rpc: str) -> None:
        self.authorizer.authorize(Access(principal, "exec", rpc=rpc))

    # -- sessions ---------------------------------------------------------------
    def open_session(self, session_id: int, principal: Principal, close: Callable[[], None]) -> None:
        """A face opened a session (``close`` ends it, for `kill_session`)."""
        self.sessions.open(session_id, principal, close)

    def close_session(self, session_id: int) -> None:
        """A session ended: release its lock, end its subscription."""
        state = self.sessions.close(session_id)
        if state is not None and state.subscription is not None:
            state.subscription.end()

    def lock(self, principal: Principal, session_id: int) -> None:
        """Lock running for the session (granted only once no other session's edit is in flight)."""
        self._exec(principal, "ietf-netconf:lock")
        self.sessions.lock(session_id)

    def unlock(self, principal: Principal, session_id: int) -> None:
        self._exec(principal, "ietf-netconf:unlock")
        self.sessions.unlock(session_id)

    def kill_session(self, principal: Principal, session_id: int, target: int) -> None:
        """Close session ``target``: one's own other sessions, or (admins) anyone's."""
        victim = self.sessions.get(target)
        owner = victim.principal.name if victim is not None else None
        self.authorizer.authorize(Access(principal, "exec", rpc="ietf-netconf:kill-session", owner=owner))
        self.sessions.kill(session_id, target)

    def subscribe(
        self, principal: Principal, session_id: int, request: Subscribe, send: EventSink | Callable[[str], None]
    ) -> Subscription:
        """taskResultSubscribe: events of the durable log from ``start_time``, then live ones, to ``send``.

        ``send`` is the session's `EventSink` or a function taking each
        notification as text. Subscribers with the same principal and
        ``request.filter_key`` share one filter decision per live event.

        One subscription per session; it ends with the session. Call
        `Subscription.start` once the caller has answered the request (replay
        must follow the reply).
        """
        self._exec(principal, "notifications:create-subscription")
        now = self.clock.now()
        start, stop = request.start_time, request.stop_time
        if stop is not None and start is None:
            raise RpcError.missing_element("startTime", "stopTime needs a startTime (RFC 5277 2.1.1)")
        if start is not None and start > now:
            raise RpcError.bad_element("startTime", "startTime is in the future", error_type="protocol")
        if start is not None and stop is not None and stop < start:
            raise RpcError.bad_element("stopTime", "stopTime is earlier than startTime", error_type="protocol")
        wanted = request.event_filter

        def event_filter(event: etree._Element) -> bool:
            return self.authorizer.may_receive(principal, event) and (wanted is None or wanted(event))

        # The read view is the principal's: NACM decides per user and group.
        view = None if request.filter_key is None else (principal, request.filter_key)
        return self.sessions.subscribe(
            session_id, lambda ended: self.bus.subscribe(send, event_filter, start, stop, ended, view)
        )
