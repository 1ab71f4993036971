"""The NETCONF face: ``<rpc>`` operation element -> typed request + Principal -> operation -> reply elements.

`NetconfFace` is the `RpcHandler` that `an_agent.nc.server` calls. It parses
and checks the XML of each operation (parameters, datastore names, filters,
libyang validation of RPC input), calls `an_agent.runtime.operations.Operations`
and renders the result. It decides, validates and stores nothing itself.
Operations handled: ``<get>``, ``<get-config>``, ``<edit-config>``,
``<lock>``, ``<unlock>``, ``<close-session>``, ``<kill-session>``,
``<get-schema>`` (RFC 6022), ``<create-subscription>`` (RFC 5277),
``task-negotiate`` and the ``an-agent-schema`` RPCs; other base operations
are refused with ``operation-not-supported``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import cast

from lxml import etree

from an_agent import metrics
from an_agent._lxml import default_ns
from an_agent.access.nacm import NACM_NS
from an_agent.clock import from_rfc3339
from an_agent.errors import RpcError
from an_agent.model import (
    AN_AGENT_DIRECTORY_NS,
    AN_AGENT_SCHEMA_NS,
    IRTF_AGENT_NS,
    NETCONF_BASE_NS,
    NETCONF_MONITORING_NS,
    NETCONF_NOTIFICATION_NS,
    NETMOD_NOTIFICATION_NS,
    NegotiationRequest,
)
from an_agent.model.directory import AgentQuery, DirectoryEntry, entries_to
from an_agent.nc import state as nc_state
from an_agent.nc.reply_cache import ReplyCache, request_key
from an_agent.nc.server import Reply, Session
from an_agent.runtime.directory import DirectoryOperations
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import (
    EditConfig,
    EditOperation,
    GetSchemaTemplate,
    PatchDecision,
    PatchDecisionKind,
    Subscribe,
)

_NC = f"{{{NETCONF_BASE_NS}}}"
_NOTIF = f"{{{NETCONF_NOTIFICATION_NS}}}"
_S = f"{{{AN_AGENT_SCHEMA_NS}}}"

BASE_CAPABILITIES = (
    "urn:ietf:params:netconf:capability:writable-running:1.0",
    "urn:ietf:params:netconf:capability:xpath:1.0",
    "urn:ietf:params:netconf:capability:notification:1.0",
    "urn:ietf:params:netconf:capability:interleave:1.0",
)
_BASE_VERSIONS = ("urn:ietf:params:netconf:base:1.0", "urn:ietf:params:netconf:base:1.1")
# Base operations we know but do not offer (no candidate, no startup, no URL capability).
_UNSUPPORTED_BASE = {"copy-config", "delete-config", "commit", "discard-changes", "validate", "cancel-commit"}
_SCHEMA_DECISIONS = {"approve-schema-patch", "reject-schema-patch", "withdraw-schema-key"}


class NetconfFace:
    """Serves `Operations` over NETCONF; one instance per agent, called from many session threads."""

    def __init__(self, operations: Operations, principal_of: Callable[[str], Principal] | None = None) -> None:
        """``principal_of`` maps an authenticated user name to its principal (default: an administrator)."""
        self.operations = operations
        self._principal_of = principal_of or Principal.authenticated
        self._namespaces = {m.name: m.namespace for m in operations.modules()}
        self._monitoring = nc_state.netconf_state([*_BASE_VERSIONS, *self.capabilities()], operations.modules())
        self.replies = ReplyCache()
        """Serialised ``<get>``/``<get-config>`` replies by data version, read view and request."""

    # -- RpcHandler -----------------------------------------------------------
    def capabilities(self) -> list[str]:
        return [*BASE_CAPABILITIES, *(m.capability for m in self.operations.modules())]

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
        label = name if name in _KNOWN_OPERATIONS else "other"
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
                    f"<{q.localname}> is not supported: this agent has only the running datastore "
                    "(capability :writable-running)"
                )
            raise RpcError.unknown_element(
                q.localname, f"<{q.localname}> is not a NETCONF operation", error_type="protocol"
            )
        if q.namespace == NETCONF_MONITORING_NS and q.localname == "get-schema":
            return Reply([nc_state.get_schema(operation, self.operations.modules())])
        if q.namespace == NETCONF_NOTIFICATION_NS and q.localname == "create-subscription":
            return self._create_subscription(principal, session, operation)
        if q.namespace == IRTF_AGENT_NS and q.localname == "task-negotiate":
            self._validate_rpc(operation)
            result = self.operations.negotiate(principal, NegotiationRequest.from_xml(operation))
            return Reply(result.to_xml())
        if q.namespace == AN_AGENT_SCHEMA_NS and q.localname == "get-schema-template":
            return self._get_schema_template(principal, operation)
        if q.namespace == AN_AGENT_SCHEMA_NS and q.localname in _SCHEMA_DECISIONS:
            return self._decide(principal, operation)
        if q.namespace == AN_AGENT_DIRECTORY_NS and self.operations.directory is not None:
            return self._directory(principal, operation, self.operations.directory)
        known = {m.namespace for m in self.operations.modules()}
        if q.namespace in known:
            raise RpcError.operation_not_supported(f"RPC {q.localname} of module {q.namespace} is not implemented")
        raise RpcError.unknown_namespace(
            q.localname, q.namespace or "", f"no module of this agent defines the RPC <{q.localname}> in {q.namespace}"
        )

    def _validate_rpc(self, operation: etree._Element) -> None:
        """Every RPC input is checked against the YANG by libyang before it is parsed."""
        self.operations.yang.validate_rpc(etree.tostring(operation, encoding="unicode"))

    # -- data -----------------------------------------------------------------
    def _get(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        version, key = self._memo_key(operation)
        kept = self.replies.lookup(version, principal, key)
        if kept is not None:
            return Reply(serialized=kept)
        _check_params(operation, {"filter", "with-defaults"})
        flt = operation.find(_NC + "filter")
        scope = nc_state.read_scope(flt)

        def build() -> list[etree._Element]:
            extra = [self._monitoring]
            if scope.wants_name(NETMOD_NOTIFICATION_NS, "netconf"):
                extra.append(nc_state.streams(self.operations.log_created))
            if scope.wants_name(NACM_NS, "nacm"):
                extra.append(nc_state.nacm(self.operations.authorizer.nacm_state(), self._namespaces))
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
        _datastore_name(operation, "source")

        def build() -> list[etree._Element]:
            flt = operation.find(_NC + "filter")
            extra = [nc_state.nacm(self.operations.authorizer.nacm_state(), self._namespaces, config_only=True)]
            data = self.operations.read(principal, nc_state.read_scope(flt), config_only=True, extra=extra)
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
        _datastore_name(operation, "target")
        if operation.find(_NC + "url") is not None:
            raise RpcError.operation_not_supported("<url> is not supported (no :url capability); send <config>")
        config = operation.find(_NC + "config")
        if config is None:
            raise RpcError.missing_element("config", "<edit-config> needs a <config> element with the changes")
        default_operation = (operation.findtext(_NC + "default-operation") or "merge").strip()
        if default_operation not in ("merge", "replace", "none"):
            raise RpcError.invalid_value(
                f"default-operation must be merge, replace or none, not {default_operation!r}", error_type="protocol"
            )
        test_option = (operation.findtext(_NC + "test-option") or "test-then-set").strip()
        if test_option not in ("test-then-set", "set", "test-only"):
            raise RpcError.invalid_value(f"test-option {test_option!r} is not supported", error_type="protocol")
        if test_option == "test-only":
            raise RpcError.operation_not_supported("test-option test-only is not supported (no :validate capability)")
        request = EditConfig(config, cast(EditOperation, default_operation))
        self.operations.edit_config(principal, session.session_id, request)
        return Reply()

    # -- sessions and locks -----------------------------------------------------
    def _lock(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, {"target"})
        _datastore_name(operation, "target")
        self.operations.lock(principal, session.session_id)
        return Reply()

    def _unlock(self, principal: Principal, session: Session, operation: etree._Element) -> Reply:
        _check_params(operation, {"target"})
        _datastore_name(operation, "target")
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

    # -- an-agent-directory -----------------------------------------------------
    def _directory(self, principal: Principal, operation: etree._Element, directory: DirectoryOperations) -> Reply:
        """register-agent, deregister-agent, find-agents of a directory agent (input checked by libyang)."""
        self._validate_rpc(operation)
        name = etree.QName(operation).localname
        if name == "register-agent":
            directory.register(principal, DirectoryEntry.from_xml(operation))
            return Reply()
        if name == "deregister-agent":
            directory.deregister(principal, (operation.findtext(f"{{{AN_AGENT_DIRECTORY_NS}}}name") or "").strip())
            return Reply()
        if name == "find-agents":
            holder = etree.Element(f"{{{AN_AGENT_DIRECTORY_NS}}}output", nsmap=default_ns(AN_AGENT_DIRECTORY_NS))
            entries_to(holder, "agent", directory.find(principal, AgentQuery.from_xml(operation)))
            return Reply(list(holder))
        raise RpcError.operation_not_supported(f"RPC {name} of module an-agent-directory is not implemented")

    # -- an-agent-schema --------------------------------------------------------
    def _get_schema_template(self, principal: Principal, operation: etree._Element) -> Reply:
        self._require_schemas()
        self._validate_rpc(operation)
        request = GetSchemaTemplate(
            (operation.findtext(_S + "scenario") or "").strip(),
            (operation.findtext(_S + "client-id") or "").strip() or None,
            (operation.findtext(_S + "preferred-language") or "").strip() or None,
            tuple((e.text or "").strip() for e in operation.iterchildren(_S + "supported-version")),
        )
        template = self.operations.get_schema_template(principal, request)
        holder = etree.Element(_S + "output", nsmap=default_ns(AN_AGENT_SCHEMA_NS))
        etree.SubElement(holder, _S + "schema-id").text = template.schema_id
        etree.SubElement(holder, _S + "language").text = template.language
        etree.SubElement(holder, _S + "template").text = template.template_json
        for patch_id in template.applied_patches:
            etree.SubElement(holder, _S + "applied-patch").text = patch_id
        return Reply(list(holder))

    def _decide(self, principal: Principal, operation: etree._Element) -> Reply:
        self._require_schemas()
        self._validate_rpc(operation)
        key_name = (operation.findtext(_S + "key-name") or "").strip() or None
        decision = PatchDecision(
            cast(PatchDecisionKind, etree.QName(operation).localname),
            (operation.findtext(_S + "patch-id") or "").strip(),
            key_name,
        )
        decided = self.operations.decide_patch(principal, decision)
        if decided is None:
            return Reply()
        holder = etree.Element(_S + "output", nsmap=default_ns(AN_AGENT_SCHEMA_NS))
        etree.SubElement(holder, _S + "patch-id").text = decided.patch_id
        etree.SubElement(holder, _S + "state").text = decided.state
        return Reply(list(holder))

    def _require_schemas(self) -> None:
        # Before libyang sees the RPC: without the service its input is not worth checking.
        if self.operations.schemas is None:
            raise RpcError.operation_not_supported("this agent serves no scenario schemas", error_type="application")


def _check_params(operation: etree._Element, allowed: set[str]) -> None:
    for child in operation:
        if not isinstance(child.tag, str):
            continue
        q = etree.QName(child)
        if q.namespace != NETCONF_BASE_NS or q.localname not in allowed:
            raise RpcError.unknown_element(
                q.localname,
                f"<{etree.QName(operation).localname}> takes only {', '.join(sorted(allowed))}; "
                f"<{q.localname}> is not one of them",
                error_type="protocol",
            )


def _datastore_name(operation: etree._Element, param: str) -> str:
    holder = operation.find(_NC + param)
    if holder is None:
        raise RpcError.missing_element(param, f"<{etree.QName(operation).localname}> needs <{param}>")
    chosen = [etree.QName(c).localname for c in holder if isinstance(c.tag, str)]
    if len(chosen) != 1:
        raise RpcError.missing_element(param, f"<{param}> must name exactly one datastore, e.g. <running/>")
    if chosen[0] != "running":
        raise RpcError.invalid_value(
            f"datastore <{chosen[0]}> is not available: this agent has only <running/>", error_type="protocol"
        )
    return chosen[0]


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
}
# The operation label of the request metrics: every RPC this face serves; anything else counts as "other".
_KNOWN_OPERATIONS = frozenset(
    {
        *_BASE_OPERATIONS,
        *_UNSUPPORTED_BASE,
        *_SCHEMA_DECISIONS,
        "get-schema",
        "create-subscription",
        "task-negotiate",
        "get-schema-template",
        "register-agent",
        "deregister-agent",
        "find-agents",
    }
)
