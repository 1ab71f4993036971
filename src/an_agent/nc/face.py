"""The NETCONF face: ``<rpc>`` operation element -> typed request + Principal -> operation -> reply elements.

`NetconfFace` is the `RpcHandler` that `an_agent.nc.server` calls. It parses
and checks the XML of each operation (parameters, datastore names, filters,
libyang validation of RPC input), calls `an_agent.runtime.operations.Operations`
and renders the result. It decides, validates and stores nothing itself.
Operations handled: ``<get>``, ``<get-config>``, ``<edit-config>``,
``<lock>``, ``<unlock>``, ``<close-session>``, ``<kill-session>``,
``<commit>``, ``<discard-changes>``, ``<cancel-commit>``, ``<validate>``,
``<copy-config>`` (with `an_agent.nc.config_face`), ``<get-data>`` and
``<edit-data>`` (RFC 8526), ``<get-schema>`` (RFC 6022),
``<create-subscription>`` (RFC 5277), and the agent's own RPCs (``task-negotiate``,
``an-agent-schema``, ``an-agent-directory``: `an_agent.nc.agent_rpcs`); ``<delete-config>`` is refused with
``operation-not-supported`` (no :startup). docs/reference/netconf-capabilities.md lists
what each capability covers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

from lxml import etree

from an_agent import metrics
from an_agent.access.nacm import NACM_NS
from an_agent.clock import from_rfc3339
from an_agent.errors import RpcError
from an_agent.model import (
    AN_AGENT_SCHEMA_NS,
    NETCONF_BASE_NS,
    NETCONF_MONITORING_NS,
    NETCONF_NOTIFICATION_NS,
    NETMOD_NOTIFICATION_NS,
)
from an_agent.nc import agent_rpcs, config_face
from an_agent.nc import state as nc_state
from an_agent.nc.handler import Reply, Session
from an_agent.nc.library import YangLibrary
from an_agent.nc.reply_cache import ReplyCache, request_key
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import (
    ReadScope,
    Subscribe,
)
from an_agent.runtime.served import Served

_NC = f"{{{NETCONF_BASE_NS}}}"
_NOTIF = f"{{{NETCONF_NOTIFICATION_NS}}}"
_S = f"{{{AN_AGENT_SCHEMA_NS}}}"

SERVED_CAPABILITIES = (
    "urn:ietf:params:netconf:capability:writable-running:1.0",
    "urn:ietf:params:netconf:capability:rollback-on-error:1.0",
    "urn:ietf:params:netconf:capability:xpath:1.0",
    "urn:ietf:params:netconf:capability:notification:1.0",
    "urn:ietf:params:netconf:capability:interleave:1.0",
)
"""What every server of ours offers, an agent or a lab's element manager (its edits are all or nothing)."""
AGENT_CAPABILITIES = (
    "urn:ietf:params:netconf:capability:candidate:1.0",
    # 1.0 as well (as ConfD does): yuma123's yangcli offers <commit>'s confirmed parameters only to
    # servers that announce 1.0. 1.1 (persist, same-session rule) is the behaviour either way.
    "urn:ietf:params:netconf:capability:confirmed-commit:1.0",
    "urn:ietf:params:netconf:capability:confirmed-commit:1.1",
    "urn:ietf:params:netconf:capability:validate:1.1",
    config_face.WITH_DEFAULTS_CAPABILITY,
)
"""What an agent offers besides: the candidate datastore, confirmed commit, validate, with-defaults
(an element manager renders the simulator as it is: no second datastore, no defaults to report)."""
BASE_CAPABILITIES = SERVED_CAPABILITIES + AGENT_CAPABILITIES
"""An agent's capabilities before its modules (docs/reference/netconf-capabilities.md)."""
_BASE_VERSIONS = ("urn:ietf:params:netconf:base:1.0", "urn:ietf:params:netconf:base:1.1")
# Base operations we know but do not offer (no startup, no URL capability).
_UNSUPPORTED_BASE = {"delete-config"}


class NetconfFace:
    """Serves an agent's `Operations` (or another `Served`, a lab's element manager) over NETCONF; one
    instance per server, called from many session threads."""

    def __init__(self, operations: Served, principal_of: Callable[[str], Principal] | None = None) -> None:
        """``principal_of`` maps an authenticated user name to its principal (default: an administrator)."""
        self.operations = operations
        self._agent = operations if isinstance(operations, Operations) else None
        """The agent, for the task, schema and directory RPCs (None: an element manager serves none)."""
        self._served = {m.namespace for m in operations.modules()}
        self._principal_of = principal_of or Principal.authenticated
        self._namespaces = {m.name: m.namespace for m in operations.modules()}
        self.library = YangLibrary(operations.modules())
        """RFC 8525 ``/yang-library`` and RFC 7895 ``/modules-state``; its content-id is in the hello."""
        self._monitoring = nc_state.netconf_state([*_BASE_VERSIONS, *self.capabilities()], operations.modules())
        self.replies = ReplyCache()
        """Serialised ``<get>``/``<get-config>`` replies by data version, read view and request."""
        self._operation_labels = _KNOWN_OPERATIONS | operations.yang.rpc_names()
        """The request metrics' operation label values: anything else counts as ``other``."""

    # -- RpcHandler -----------------------------------------------------------
    def capabilities(self) -> list[str]:
        # Every module is listed as well (RFC 6020 form), for clients that predate the YANG library
        # (yuma123 yangcli loads what the hello lists); /yang-library says the same.
        offered = BASE_CAPABILITIES if self._agent is not None else SERVED_CAPABILITIES
        return [*offered, self.library.capability, *(m.capability for m in self.operations.modules())]

    def _agent_only(self, what: str) -> Operations:
        """The agent served, or operation-not-supported naming ``what`` (an element manager has none of it)."""
        if self._agent is None:
            raise RpcError.operation_not_supported(
                f"{what} is not supported here: this server renders the lab's network as it is (no candidate "
                "datastore, no confirmed commit, no with-defaults); edit running"
            )
        return self._agent

    def session_opened(self, session: Session) -> None:
        # The transport authenticated the user; its groups and agent names come from the users file.
        self.operations.open_session(session.session_id, self._principal_of(session.username), session.close)

    def session_closed(self, session: Session) -> None:
        self.operations.close_session(session.session_id)

    def keeps_alive(self, session: Session) -> bool:
        return self.operations.sessions.watched_by(session.session_id)

    def handle(self, session: Session, operation: etree._Element) -> Reply:
        """One RPC, counted and timed for the metrics (`an_agent.metrics`) when they are on."""
        if not metrics.enabled():
            return self._dispatch(session, operation)
        name = str(operation.tag).rpartition("}")[2]  # the local name, cheaper than etree.QName
        label = name if name in self._operation_labels else "other"
        start = time.perf_counter()
        try:
            reply = self._dispatch(session, operation)
        except RpcError as exc:
            metrics.netconf_request(label, exc.error_tag, time.perf_counter() - start)
            raise
        except Exception:
            metrics.netconf_request(label, "operation-failed", time.perf_counter() - start)
            raise
        metrics.netconf_request(label, "ok", time.perf_counter() - start)
        return reply

    def _dispatch(self, session: Session, operation: etree._Element) -> Reply:
        state = self.operations.sessions.get(session.session_id)
        principal = state.principal if state is not None else self._principal_of(session.username)
        q = etree.QName(operation)
        if q.namespace == NETCONF_BASE_NS:
            # Many clients (ncclient users among them) send <config>/<filter>
            # without a namespace; they can only mean the base ones.
            for child in operation:
                tag = child.tag
                if isinstance(tag, str) and not tag.startswith("{"):
                    child.tag = _NC + tag
            method = _BASE_OPERATIONS.get(q.localname)
            if method is not None:
                return method(self, principal, session, operation)
            if q.localname in _UNSUPPORTED_BASE:
                raise RpcError.operation_not_supported(
                    f"<{q.localname}> is not supported: this agent has no startup datastore (running is "
                    "persistent) and no :url capability"
                )
            raise RpcError.unknown_element(
                q.localname, f"<{q.localname}> is not a NETCONF operation", error_type="protocol"
            )
        if q.namespace == NETCONF_MONITORING_NS and q.localname == "get-schema":
            return Reply([nc_state.get_schema(operation, self.operations.modules())])
        if q.namespace == config_face.NMDA_NS and q.localname in ("get-data", "edit-data"):
            return self._nmda(principal, session, operation)
        if q.namespace == NETCONF_NOTIFICATION_NS and q.localname == "create-subscription":
            return self._create_subscription(principal, session, operation)
        agent = self._agent
        reply = None if agent is None else agent_rpcs.handle(agent, principal, operation)
        if reply is not None:
            return reply
        if q.namespace in self._served:
            if agent is None:
                self._validate_rpc(operation)
            return Reply(self.operations.invoke(principal, operation))
        raise RpcError.unknown_namespace(
            q.localname, q.namespace or "", f"no module of this agent defines the RPC <{q.localname}> in {q.namespace}"
        )

    def _validate_rpc(self, operation: etree._Element) -> None:
        agent_rpcs.validate_rpc(self.operations, operation)

    # -- data -----------------------------------------------------------------
    def _get(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        version, key = self._memo_key(operation)
        kept = self.replies.lookup(version, principal, key)
        if kept is not None:
            return Reply(serialized=kept)
        _check_params(operation, {"filter", "with-defaults"})
        flt = operation.find(_NC + "filter")
        scope = nc_state.read_scope(flt)
        defaults = config_face.with_defaults(operation)
        if defaults != "explicit":  # explicit is what a server without defaults reports
            self._agent_only(f"<with-defaults> {defaults}")

        def build() -> list[etree._Element]:
            extra = [self._monitoring, *self.library.trees(scope.wants_name)]
            if scope.wants_name(NETMOD_NOTIFICATION_NS, "netconf"):
                extra.append(nc_state.streams(self.operations.log_created))
            if scope.wants_name(NACM_NS, "nacm"):
                extra.append(nc_state.nacm(self.operations.authorizer.nacm_state(), self._namespaces))
            if self._agent is not None:
                data = self._agent.read(principal, scope, extra=extra, with_defaults=defaults)
            else:
                data = self.operations.read(principal, scope, extra=extra)
            return nc_state.filtered(flt, data, self.operations.keys_of)

        # /nacm carries denial counters that change without a data version: never memoised.
        if scope.wants_name(NACM_NS, "nacm"):
            return Reply([nc_state.data_reply(build())])
        return self._memo(version, principal, key, build)

    def _get_config(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        version, key = self._memo_key(operation)
        kept = self.replies.lookup(version, principal, key)
        if kept is not None:
            return Reply(serialized=kept)
        _check_params(operation, {"source", "filter", "with-defaults"})
        source = config_face.datastore_of(operation, "source")
        defaults = config_face.with_defaults(operation)
        if source != "running" or defaults != "explicit":
            self._agent_only("a <get-config> of candidate or with <with-defaults>")

        def build() -> list[etree._Element]:
            flt = operation.find(_NC + "filter")
            extra = [nc_state.nacm(self.operations.authorizer.nacm_state(), self._namespaces, config_only=True)]
            scope = nc_state.read_scope(flt)
            if self._agent is not None:
                data = self._agent.read(principal, scope, True, extra, datastore=source, with_defaults=defaults)
            else:
                data = self.operations.read(principal, scope, True, extra)
            return nc_state.filtered(flt, data, self.operations.keys_of)

        return self._memo(version, principal, key, build)

    def _memo_key(self, operation: etree._Element) -> tuple[Hashable, Hashable]:
        """The data version and the request key a read is memoised under.

        The version is read before any data (see `ReplyCache.get_or_build`).
        The memo is looked up before the request is checked: a kept reply
        was built from the same request text, which passed the checks then
        (errors are never kept), so the hit path skips them.
        """
        return self.operations.data_version(), request_key(operation)

    def _memo(
        self, version: Hashable, principal: Principal, key: Hashable, build: Callable[[], list[etree._Element]]
    ) -> Reply:
        """The ``<data>`` reply from the memo, or built by ``build`` (read, NACM view, filter) and kept."""
        text = self.replies.get_or_build(
            version, principal, key, lambda: etree.tostring(nc_state.data_reply(build()), encoding="unicode")
        )
        return Reply(serialized=text)

    def _edit_config(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, {"target", "default-operation", "test-option", "error-option", "config", "url"})
        target = config_face.datastore_of(operation, "target")
        if operation.find(_NC + "url") is not None:
            raise RpcError.operation_not_supported("<url> is not supported (no :url capability); send <config>")
        config = operation.find(_NC + "config")
        if config is None:
            raise RpcError.missing_element("config", "<edit-config> needs a <config> element with the changes")
        request = config_face.edit_request(operation, config, target)
        if request.target != "running" or request.test_only:
            self._agent_only("an <edit-config> of candidate or with test-option test-only")
        self.operations.edit_config(principal, session.session_id, request)
        return Reply()

    # -- candidate, commit, validate, copy-config (RFC 6241 8.3, 8.4, 8.6) ----------------
    def _commit(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, {"confirmed", "confirm-timeout", "persist", "persist-id"})
        config_face.commit(self._agent_only("<commit>"), principal, session.session_id, operation)
        return Reply()

    def _discard_changes(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, set())
        self._agent_only("<discard-changes>").config.discard_changes(principal, session.session_id)
        return Reply()

    def _cancel_commit(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, {"persist-id"})
        persist_id = operation.findtext(_NC + "persist-id")
        self._agent_only("<cancel-commit>").config.cancel_commit(principal, session.session_id, persist_id)
        return Reply()

    def _validate(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, {"source"})
        agent = self._agent_only("<validate>")
        agent.config.validate(principal, session.session_id, config_face.source_of(operation))
        return Reply()

    def _copy_config(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, {"target", "source", "with-defaults"})
        config_face.with_defaults(operation)  # checked; no :url, so a datastore target stores what it is given
        target = config_face.datastore_of(operation, "target")
        agent = self._agent_only("<copy-config>")
        agent.config.copy_config(principal, session.session_id, target, config_face.source_of(operation))
        return Reply()

    # -- NMDA (RFC 8526) -----------------------------------------------------------------
    def _nmda(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        agent = self._agent_only(f"<{etree.QName(operation).localname}>")
        self._validate_rpc(operation)
        if etree.QName(operation).localname == "edit-data":
            self.operations.edit_config(principal, session.session_id, config_face.edit_data_request(operation))
            return Reply()

        def state_trees(scope: ReadScope) -> list[etree._Element]:
            return [self._monitoring, *self.library.trees(scope.wants_name)]

        return Reply([config_face.get_data(agent, principal, operation, state_trees)])

    # -- sessions and locks -----------------------------------------------------
    def _lock(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, {"target"})
        target = config_face.datastore_of(operation, "target")
        if self._agent is not None:
            self._agent.config.lock(principal, session.session_id, target)
        elif target != "running":
            self._agent_only("a lock of candidate")
        else:
            self.operations.lock(principal, session.session_id)
        return Reply()

    def _unlock(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, {"target"})
        target = config_face.datastore_of(operation, "target")
        if self._agent is not None:
            self._agent.config.unlock(principal, session.session_id, target)
        elif target != "running":
            self._agent_only("an unlock of candidate")
        else:
            self.operations.unlock(principal, session.session_id)
        return Reply()

    def _close_session(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        return Reply(close_session=True)

    def _kill_session(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        text = (operation.findtext(_NC + "session-id") or "").strip()
        if not text:
            raise RpcError.missing_element("session-id", "<kill-session> needs the <session-id> to kill")
        try:
            target = int(text)
        except ValueError:
            raise RpcError.invalid_value(f"session-id {text!r} is not a number", error_type="protocol") from None
        self.operations.kill_session(principal, session.session_id, target)
        return Reply()

    # -- RFC 5277 -------------------------------------------------------------
    def _create_subscription(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        stream = (operation.findtext(_NOTIF + "stream") or "NETCONF").strip()
        if stream != "NETCONF":
            raise RpcError.invalid_value(f"stream {stream!r} does not exist; this agent has the NETCONF stream")
        # RFC 5277 puts <filter> in its own namespace; ncclient and others send
        # the base-namespace one (or none): all three mean the same filter.
        flt = next((c for c in operation if isinstance(c.tag, str) and etree.QName(c).localname == "filter"), None)
        request = Subscribe(
            nc_state.event_filter(flt, self.operations.keys_of),
            _time_param(operation, "startTime"),
            _time_param(operation, "stopTime"),
            # Equal filter elements (with the prefixes in scope) select the same events.
            filter_key=("no filter",) if flt is None else request_key(flt),
        )
        subscription = self.operations.subscribe(principal, session.session_id, request, session)
        return Reply(after_send=subscription.start)


def _check_params(operation: etree._Element, allowed: set[str]) -> None:
    for child in operation:
        if not isinstance(child.tag, str):
            continue
        q = etree.QName(child)
        namespace = config_face.WITH_DEFAULTS_NS if q.localname == "with-defaults" else NETCONF_BASE_NS
        if q.namespace not in (namespace, NETCONF_BASE_NS) or q.localname not in allowed:
            raise RpcError.unknown_element(
                q.localname,
                f"<{etree.QName(operation).localname}> takes only {', '.join(sorted(allowed))}; "
                f"<{q.localname}> is not one of them",
                error_type="protocol",
            )


def _time_param(operation: etree._Element, name: str) -> float | None:
    text = operation.findtext(_NOTIF + name)
    if text is None:
        return None
    try:
        return from_rfc3339(text)
    except ValueError as exc:
        raise RpcError.invalid_value(f"{name}: {exc}", error_type="protocol") from None


_Handler = Callable[[NetconfFace, Principal, Session, etree._Element], Reply]
_BASE_OPERATIONS: dict[str, _Handler] = {
    "get": NetconfFace._get,
    "get-config": NetconfFace._get_config,
    "edit-config": NetconfFace._edit_config,
    "lock": NetconfFace._lock,
    "unlock": NetconfFace._unlock,
    "close-session": NetconfFace._close_session,
    "kill-session": NetconfFace._kill_session,
    "commit": NetconfFace._commit,
    "discard-changes": NetconfFace._discard_changes,
    "cancel-commit": NetconfFace._cancel_commit,
    "validate": NetconfFace._validate,
    "copy-config": NetconfFace._copy_config,
}
# The operation labels of the request metrics besides the RPCs of the served modules: the base operations.
_KNOWN_OPERATIONS = frozenset({*_BASE_OPERATIONS, *_UNSUPPORTED_BASE})
