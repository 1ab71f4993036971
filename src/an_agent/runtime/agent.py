"""The agent's NETCONF operations: the `RpcHandler` that nc/server.py calls.

Maps each operation to the datastore, the task engine, the notification bus
and the behaviour: ``<get>``, ``<get-config>``, ``<edit-config>``, ``<lock>``,
``<unlock>``, ``<close-session>``, ``<kill-session>``, ``<get-schema>``
(RFC 6022), ``<create-subscription>`` (RFC 5277) and ``task-negotiate``.
Unsupported operations are refused with ``operation-not-supported``.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.clock import Clock, from_rfc3339, to_rfc3339
from an_agent.errors import RpcError
from an_agent.model import (
    IRTF_AGENT_NS,
    NETCONF_MONITORING_NS,
    AgentProfile,
    DataParam,
    NegotiationRequest,
    Task,
)
from an_agent.nc.server import Reply, Session
from an_agent.runtime.behaviour import AgentInfo, Behaviour
from an_agent.runtime.datastore import Datastore, EditDiff
from an_agent.runtime.filters import subtree_filter, xpath_filter
from an_agent.runtime.notifications import NOTIF_NS, NotificationBus, Subscription
from an_agent.runtime.schemas import SCHEMA_NS, SchemaService
from an_agent.runtime.tasks import TaskEngine
from an_agent.store.agent_store import AgentStore
from an_agent.yang.context import YangContext

log = logging.getLogger(__name__)

NC_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
_NC = f"{{{NC_NS}}}"
_NCM = f"{{{NETCONF_MONITORING_NS}}}"
_NOTIF = f"{{{NOTIF_NS}}}"
NETMOD_NOTIF_NS = "urn:ietf:params:xml:ns:netmod:notification"
_NETMOD = f"{{{NETMOD_NOTIF_NS}}}"

BASE_CAPABILITIES = (
    "urn:ietf:params:netconf:capability:writable-running:1.0",
    "urn:ietf:params:netconf:capability:xpath:1.0",
    "urn:ietf:params:netconf:capability:notification:1.0",
    "urn:ietf:params:netconf:capability:interleave:1.0",
)
# Base operations we know but do not offer (no candidate, no startup, no URL capability).
_UNSUPPORTED_BASE = {"copy-config", "delete-config", "commit", "discard-changes", "validate", "cancel-commit"}


@dataclass
class _SessionState:
    session: Session
    subscription: Subscription | None = None


class _Schema:
    """The datastore's view of the YANG context, with namespace -> module names."""

    def __init__(self, yang: YangContext) -> None:
        self._yang = yang
        self._modules = {m.namespace: m.name for m in yang.modules()}

    def schema_node(self, path: tuple[tuple[str, str], ...]):  # type: ignore[no-untyped-def]
        return self._yang.schema_node(path)

    def validate_config(self, xml: str) -> None:
        self._yang.validate_config(xml)

    def module_name(self, namespace: str) -> str | None:
        return self._modules.get(namespace)


class AgentRuntime:
    """One agent: datastore, tasks, notifications and behaviour behind NETCONF."""

    def __init__(
        self,
        profile: AgentProfile,
        behaviour: Behaviour,
        store: AgentStore,
        clock: Clock,
        yang: YangContext | None = None,
        task_workers: int = 8,
    ) -> None:
        self.profile = profile
        self.yang = yang or YangContext.default()
        self.clock = clock
        self.store = store
        self._schema = _Schema(self.yang)
        self.datastore = Datastore(self._schema, store)
        self.bus = NotificationBus(store, clock)
        self.behaviour = behaviour
        behaviour.bind(AgentInfo(profile=profile, clock=clock, data_params=self._data_params))
        self.tasks = TaskEngine(behaviour, store, self.bus, clock, profile.name, workers=task_workers)
        self._profile_xml = profile.to_xml()
        self._monitoring = self._netconf_state()
        created = store.get_meta("log-created")
        if created is None:
            created = repr(clock.now())
            store.set_meta("log-created", created)
        self._log_created = float(created)
        self._sessions: dict[int, _SessionState] = {}
        self._lock = threading.Lock()
        self._running_lock_owner = 0  # session id holding <lock> on running, 0 when free
        self.schemas: SchemaService | None = None

    def _data_params(self, ids: Sequence[str]) -> list[DataParam]:
        """The ``data-params`` entries with these ids, in the order asked (see `AgentInfo.data_params`)."""
        wanted = list(dict.fromkeys(ids))
        found = self.datastore.find_entries(_DATA_PARAMS, ("id",), [(i,) for i in wanted])
        return [DataParam.from_xml(element) for element in found]

    # -- structured payloads (runtime/schemas.py) -----------------------------
    def attach_schemas(self, service: SchemaService) -> None:
        """Validate structured payloads on assignment, decorate results, serve templates."""
        self.schemas = service
        self.tasks.result_hook = service.decorate_result

    def publish_notification(self, content: etree._Element) -> None:
        """Log ``content`` (a notification body) durably and send it to every subscriber."""
        xml = etree.tostring(content, encoding="unicode")

        def log_event() -> tuple[int, float, str]:
            now = self.clock.now()
            return self.store.append_notification(now, xml), now, xml

        self.bus.publish(log_event)

    def _check_payloads(self, diff: EditDiff, session_user: str) -> None:
        """Pre-commit: every structured payload of every new task must validate (nothing stored otherwise)."""
        if self.schemas is None:
            return
        in_edit: dict[str, DataParam] = {}
        for element in [*diff.added.values(), *(new for _, new in diff.changed.values())]:
            if element.tag == _DATA_PARAMS:
                param = DataParam.from_xml(element)
                in_edit[param.id] = param
        for element in diff.added.values():
            if element.tag != _TASK:
                continue
            task = Task.from_xml(element)
            if not task.msg_data:
                continue
            missing = [i for i in task.msg_data if i not in in_edit]
            params = [in_edit[i] for i in task.msg_data if i in in_edit] + self._data_params(missing)
            self.schemas.check_task(task, params, task.send_from or session_user)

    def start(self) -> None:
        """Resume tasks that were running when the agent last stopped."""
        tasks = self.datastore.find(IRTF_AGENT_NS, "tasks")
        self.tasks.resume(list(tasks) if tasks is not None else [])

    def close(self) -> None:
        self.tasks.close()  # first: running behaviours may still report results
        if self.schemas is not None:
            self.schemas.close()
        self.bus.close()

    # -- RpcHandler -----------------------------------------------------------
    def capabilities(self) -> list[str]:
        return [*BASE_CAPABILITIES, *(m.capability for m in self.yang.modules())]

    def session_opened(self, session: Session) -> None:
        with self._lock:
            self._sessions[session.session_id] = _SessionState(session)

    def session_closed(self, session: Session) -> None:
        with self._lock:
            state = self._sessions.pop(session.session_id, None)
            if self._running_lock_owner == session.session_id:
                self._running_lock_owner = 0
        if state is not None and state.subscription is not None:
            state.subscription.end()

    def handle(self, session: Session, operation: etree._Element) -> Reply:
        q = etree.QName(operation)
        if q.namespace == NC_NS:
            # Many clients (ncclient users among them) send <config>/<filter>
            # without a namespace; they can only mean the base ones.
            for child in operation:
                if isinstance(child.tag, str) and etree.QName(child).namespace is None:
                    child.tag = _NC + child.tag
            method = _BASE_OPERATIONS.get(q.localname)
            if method is not None:
                return method(self, session, operation)
            if q.localname in _UNSUPPORTED_BASE:
                raise RpcError.operation_not_supported(
                    f"<{q.localname}> is not supported: this agent has only the running datastore "
                    "(capability :writable-running)"
                )
            raise RpcError.unknown_element(
                q.localname, f"<{q.localname}> is not a NETCONF operation", error_type="protocol"
            )
        if q.namespace == NETCONF_MONITORING_NS and q.localname == "get-schema":
            return self._get_schema(operation)
        if q.namespace == NOTIF_NS and q.localname == "create-subscription":
            return self._create_subscription(session, operation)
        if q.namespace == IRTF_AGENT_NS and q.localname == "task-negotiate":
            return self._task_negotiate(operation)
        if q.namespace == SCHEMA_NS and q.localname == "get-schema-template":
            if self.schemas is None:
                raise RpcError.operation_not_supported(
                    "this agent serves no scenario schemas", error_type="application"
                )
            self.yang.validate_rpc(etree.tostring(operation, encoding="unicode"))
            return Reply(self.schemas.get_schema_template(operation, session.username))
        if q.namespace == SCHEMA_NS and q.localname in _SCHEMA_DECISIONS:
            if self.schemas is None:
                raise RpcError.operation_not_supported(
                    "this agent serves no scenario schemas", error_type="application"
                )
            self.yang.validate_rpc(etree.tostring(operation, encoding="unicode"))
            return Reply(self.schemas.decide(operation, session.username) or None)
        known = {m.namespace for m in self.yang.modules()}
        if q.namespace in known:
            raise RpcError.operation_not_supported(f"RPC {q.localname} of module {q.namespace} is not implemented")
        raise RpcError.unknown_namespace(
            q.localname, q.namespace or "", f"no module of this agent defines the RPC <{q.localname}> in {q.namespace}"
        )

    # -- data -----------------------------------------------------------------
    def _state_data(self, flt: etree._Element | None) -> list[etree._Element]:
        """Config and state together, as top-level elements (private copies).

        Only what a subtree filter can select is built: its top-level names,
        and, when it names tasks by task-id, only those tasks.
        """
        scope = _Scope.of(flt)
        top: list[etree._Element] = []
        if scope.wants(self._profile_xml):
            agent = copy.deepcopy(self._profile_xml)
            if self.schemas is not None and scope.wants_templates:
                agent.append(self.schemas.templates_state())
            top.append(agent)
        top.extend(self.datastore.top_level(scope.wants, scope.task_keys))
        for element in top:
            if element.tag == _TASKS:
                for entry in element.iterchildren(_TASK):
                    task_id = entry.findtext(_TASK_ID) or ""
                    _insert_state(entry, self.tasks.state_elements(task_id))
        if scope.wants(self._monitoring):
            top.append(copy.deepcopy(self._monitoring))
        if scope.wants_name(NETMOD_NOTIF_NS, "netconf"):
            top.append(self._streams())
        return top

    def _streams(self) -> etree._Element:
        """RFC 5277 stream discovery: ``/netconf/streams`` (one stream, NETCONF, with replay)."""
        netconf = etree.Element(_NETMOD + "netconf", nsmap=default_ns(NETMOD_NOTIF_NS))
        stream = etree.SubElement(etree.SubElement(netconf, _NETMOD + "streams"), _NETMOD + "stream")
        etree.SubElement(stream, _NETMOD + "name").text = "NETCONF"
        etree.SubElement(
            stream, _NETMOD + "description"
        ).text = "condition-notifications on every task-status transition (draft-wang-nmrg-magent-im)"
        etree.SubElement(stream, _NETMOD + "replaySupport").text = "true"
        etree.SubElement(stream, _NETMOD + "replayLogCreationTime").text = to_rfc3339(self._log_created)
        return netconf

    def _filtered(self, operation: etree._Element, data: list[etree._Element]) -> list[etree._Element]:
        flt = operation.find(_NC + "filter")
        if flt is None:
            return data
        kind = flt.get("type", "subtree")
        if kind == "subtree":
            return subtree_filter(data, flt, self.datastore.keys_of)
        if kind == "xpath":
            select = flt.get("select")
            if not select:
                err = RpcError("protocol", "missing-attribute", "an xpath filter needs a select attribute")
                err.info = {"bad-attribute": "select", "bad-element": "filter"}
                raise err
            return xpath_filter(data, select, _prefixes(flt), self.datastore.keys_of)
        err = RpcError("protocol", "bad-attribute", f"filter type {kind!r} is not supported; use subtree or xpath")
        err.info = {"bad-attribute": "type", "bad-element": "filter"}
        raise err

    def _data_reply(self, elements: list[etree._Element]) -> Reply:
        data = etree.Element(_NC + "data", nsmap=default_ns(NC_NS))
        data.extend(elements)
        return Reply([data])

    def _check_params(self, operation: etree._Element, allowed: set[str]) -> None:
        for child in operation:
            if not isinstance(child.tag, str):
                continue
            q = etree.QName(child)
            if q.namespace != NC_NS or q.localname not in allowed:
                raise RpcError.unknown_element(
                    q.localname,
                    f"<{etree.QName(operation).localname}> takes only {', '.join(sorted(allowed))}; "
                    f"<{q.localname}> is not one of them",
                    error_type="protocol",
                )

    def _get(self, session: Session, operation: etree._Element) -> Reply:
        self._check_params(operation, {"filter", "with-defaults"})
        data = self._state_data(operation.find(_NC + "filter"))
        return self._data_reply(self._filtered(operation, data))

    def _datastore_name(self, operation: etree._Element, param: str) -> str:
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

    def _get_config(self, session: Session, operation: etree._Element) -> Reply:
        self._check_params(operation, {"source", "filter", "with-defaults"})
        self._datastore_name(operation, "source")
        scope = _Scope.of(operation.find(_NC + "filter"))
        return self._data_reply(self._filtered(operation, self.datastore.top_level(scope.wants, scope.task_keys)))

    def _edit_config(self, session: Session, operation: etree._Element) -> Reply:
        self._check_params(operation, {"target", "default-operation", "test-option", "error-option", "config", "url"})
        self._datastore_name(operation, "target")
        if operation.find(_NC + "url") is not None:
            raise RpcError.operation_not_supported("<url> is not supported (no :url capability); send <config>")
        config = operation.find(_NC + "config")
        if config is None:
            raise RpcError.missing_element("config", "<edit-config> needs a <config> element with the changes")
        default_operation = (operation.findtext(_NC + "default-operation") or "merge").strip()
        test_option = (operation.findtext(_NC + "test-option") or "test-then-set").strip()
        if test_option not in ("test-then-set", "set", "test-only"):
            raise RpcError.invalid_value(f"test-option {test_option!r} is not supported", error_type="protocol")
        with self._lock:
            owner = self._running_lock_owner
        if owner and owner != session.session_id:
            err = RpcError.in_use(f"running is locked by session {owner}; wait for <unlock> or kill that session")
            err.info = {"session-id": str(owner)}
            raise err
        if test_option == "test-only":
            raise RpcError.operation_not_supported("test-option test-only is not supported (no :validate capability)")

        def pre_commit(diff: EditDiff) -> None:
            self._check_payloads(diff, session.username)
            self.tasks.check_edit(diff)

        diff = self.datastore.edit(config, default_operation, pre_commit=pre_commit)
        if diff:
            self.tasks.apply_edit(diff)
        return Reply()

    def _lock_op(self, session: Session, operation: etree._Element) -> Reply:
        self._check_params(operation, {"target"})
        self._datastore_name(operation, "target")
        with self._lock:
            if self._running_lock_owner:
                holder = self._running_lock_owner
                raise RpcError.lock_denied(
                    holder,
                    f"running is already locked by session {holder}"
                    + (" (this session)" if holder == session.session_id else ""),
                )
            self._running_lock_owner = session.session_id
        return Reply()

    def _unlock_op(self, session: Session, operation: etree._Element) -> Reply:
        self._check_params(operation, {"target"})
        self._datastore_name(operation, "target")
        with self._lock:
            if self._running_lock_owner != session.session_id:
                holder = self._running_lock_owner
                if holder:
                    raise RpcError.lock_denied(holder, f"running is locked by session {holder}, not by this session")
                raise RpcError.operation_failed("running is not locked", error_type="protocol")
            self._running_lock_owner = 0
        return Reply()

    def _close_session(self, session: Session, operation: etree._Element) -> Reply:
        return Reply(close_session=True)

    def _kill_session(self, session: Session, operation: etree._Element) -> Reply:
        text = (operation.findtext(_NC + "session-id") or "").strip()
        if not text:
            raise RpcError.missing_element("session-id", "<kill-session> needs the <session-id> to kill")
        try:
            target = int(text)
        except ValueError:
            raise RpcError.invalid_value(f"session-id {text!r} is not a number", error_type="protocol") from None
        if target == session.session_id:
            raise RpcError.invalid_value("a session cannot kill itself; use <close-session>", error_type="protocol")
        with self._lock:
            victim = self._sessions.get(target)
        if victim is None:
            raise RpcError.invalid_value(f"there is no session {target}", error_type="protocol")
        victim.session.close()
        return Reply()

    # -- RFC 6022 -------------------------------------------------------------
    def _netconf_state(self) -> etree._Element:
        state = etree.Element(_NCM + "netconf-state", nsmap=default_ns(NETCONF_MONITORING_NS))
        caps = etree.SubElement(state, _NCM + "capabilities")
        for uri in [
            "urn:ietf:params:netconf:base:1.0",
            "urn:ietf:params:netconf:base:1.1",
            *self.capabilities(),
        ]:
            etree.SubElement(caps, _NCM + "capability").text = uri
        schemas = etree.SubElement(state, _NCM + "schemas")
        for module in self.yang.modules():
            schema = etree.SubElement(schemas, _NCM + "schema")
            etree.SubElement(schema, _NCM + "identifier").text = module.name
            etree.SubElement(schema, _NCM + "version").text = module.revision or ""
            etree.SubElement(schema, _NCM + "format").text = "yang"
            etree.SubElement(schema, _NCM + "namespace").text = module.namespace
            etree.SubElement(schema, _NCM + "location").text = "NETCONF"
        return state

    def _get_schema(self, operation: etree._Element) -> Reply:
        identifier = (operation.findtext(_NCM + "identifier") or "").strip()
        version = (operation.findtext(_NCM + "version") or "").strip()
        fmt = (operation.findtext(_NCM + "format") or "yang").strip()
        if not identifier:
            raise RpcError.missing_element("identifier", "<get-schema> needs the module name in <identifier>")
        if fmt.split(":")[-1] != "yang":
            raise RpcError.invalid_value(f"schema format {fmt!r} is not available; only yang is served")
        matches = [m for m in self.yang.modules() if m.name == identifier and (not version or m.revision == version)]
        if not matches:
            available = ", ".join(f"{m.name}@{m.revision}" for m in self.yang.modules())
            raise RpcError.invalid_value(
                f"no schema {identifier}{'@' + version if version else ''}; available: {available}"
            )
        data = etree.Element(_NCM + "data", nsmap=default_ns(NETCONF_MONITORING_NS))
        data.text = matches[0].text
        return Reply([data])

    # -- RFC 5277 -------------------------------------------------------------
    def _create_subscription(self, session: Session, operation: etree._Element) -> Reply:
        stream = (operation.findtext(_NOTIF + "stream") or "NETCONF").strip()
        if stream != "NETCONF":
            raise RpcError.invalid_value(f"stream {stream!r} does not exist; this agent has the NETCONF stream")
        start = _time_param(operation, "startTime")
        stop = _time_param(operation, "stopTime")
        now = self.clock.now()
        if stop is not None and start is None:
            raise RpcError.missing_element("startTime", "stopTime needs a startTime (RFC 5277 2.1.1)")
        if start is not None and start > now:
            raise RpcError.bad_element("startTime", "startTime is in the future", error_type="protocol")
        if start is not None and stop is not None and stop < start:
            raise RpcError.bad_element("stopTime", "stopTime is earlier than startTime", error_type="protocol")
        # RFC 5277 puts <filter> in its own namespace; ncclient and others send
        # the base-namespace one (or none): all three mean the same filter.
        flt = next((c for c in operation if isinstance(c.tag, str) and etree.QName(c).localname == "filter"), None)
        event_filter = _event_filter(flt, self.datastore.keys_of)
        with self._lock:
            state = self._sessions.get(session.session_id)
            if state is None:
                raise RpcError.operation_failed("session is closing")
            if state.subscription is not None:
                raise RpcError.operation_failed(
                    "this session already has a subscription; open another session for another one",
                    error_type="protocol",
                )

            def ended(sub: Subscription) -> None:
                with self._lock:
                    if state.subscription is sub:
                        state.subscription = None

            state.subscription = self.bus.subscribe(session.send_notification, event_filter, start, stop, ended)
            subscription = state.subscription
        return Reply(after_send=subscription.start)

    # -- draft-wang task-negotiate --------------------------------------------
    def _task_negotiate(self, operation: etree._Element) -> Reply:
        self.yang.validate_rpc(etree.tostring(operation, encoding="unicode"))
        request = NegotiationRequest.from_xml(operation)
        task: Task | None = None
        entry = None
        tasks = self.datastore.find(IRTF_AGENT_NS, "tasks")
        if tasks is not None and request.task_id:
            for candidate in tasks.iterchildren(f"{{{IRTF_AGENT_NS}}}task"):
                if candidate.findtext(f"{{{IRTF_AGENT_NS}}}task-id") == request.task_id:
                    entry = candidate
                    break
        if entry is not None:
            task = self.tasks.task_with_state(entry)
        result = self.behaviour.negotiate(request, task)
        return Reply(result.to_xml())


_SCHEMA_DECISIONS = {"approve-schema-patch", "reject-schema-patch", "withdraw-schema-key"}
_TASKS = f"{{{IRTF_AGENT_NS}}}tasks"
_DATA_PARAMS = f"{{{IRTF_AGENT_NS}}}data-params"
_TASK = f"{{{IRTF_AGENT_NS}}}task"
_TASK_ID = f"{{{IRTF_AGENT_NS}}}task-id"


@dataclass
class _Scope:
    """What a subtree filter can possibly select: top-level names, and task ids when it names them."""

    names: set[tuple[str | None, str]] | None = None
    task_ids: set[str] | None = None
    wants_templates: bool = True  # False when the filter names /agent's children without schema-templates

    @classmethod
    def of(cls, flt: etree._Element | None) -> _Scope:
        if flt is None or flt.get("type", "subtree") != "subtree":
            return cls()
        names: set[tuple[str | None, str]] = set()
        task_ids: set[str] | None = None
        wants_templates = True
        for child in flt:
            if not isinstance(child.tag, str):
                continue
            q = etree.QName(child)
            names.add((q.namespace, q.localname))
            if q.localname == "agent" and q.namespace in (None, IRTF_AGENT_NS):
                selected = [etree.QName(c).localname for c in child if isinstance(c.tag, str)]
                wants_templates = not selected or "schema-templates" in selected
            if q.localname == "tasks" and q.namespace in (None, IRTF_AGENT_NS):
                entries = [e for e in child if isinstance(e.tag, str)]
                ids = [(e.findtext(_TASK_ID) or e.findtext("task-id") or "").strip() for e in entries]
                if entries and all(ids) and all(etree.QName(e).localname == "task" for e in entries):
                    task_ids = set(ids)
        return cls(names, task_ids, wants_templates)

    def wants(self, element: etree._Element) -> bool:
        q = etree.QName(element)
        return self.wants_name(q.namespace, q.localname)

    def wants_name(self, namespace: str | None, name: str) -> bool:
        if self.names is None:
            return True
        return (namespace, name) in self.names or (None, name) in self.names

    @property
    def task_keys(self) -> dict[str, list[tuple[str, ...]]] | None:
        """For `Datastore.top_level`: only these tasks of the tasks container, found by key."""
        if self.task_ids is None:
            return None
        return {_TASKS: [(task_id,) for task_id in sorted(self.task_ids)]}


def _insert_state(entry: etree._Element, state: list[etree._Element]) -> None:
    for element in state:
        entry.append(element)


def _prefixes(element: etree._Element) -> dict[str, str]:
    """The prefix -> namespace declarations in scope at ``element`` (for an xpath select)."""
    return {prefix: uri for prefix, uri in element.nsmap.items() if prefix}


def _time_param(operation: etree._Element, name: str) -> float | None:
    text = operation.findtext(_NOTIF + name)
    if text is None:
        return None
    try:
        return from_rfc3339(text)
    except ValueError as exc:
        raise RpcError.invalid_value(f"{name}: {exc}", error_type="protocol") from None


def _event_filter(
    flt: etree._Element | None, keys_of: Callable[[etree._Element], tuple[str, ...]]
) -> Callable[[etree._Element], bool] | None:
    if flt is None:
        return None
    kind = flt.get("type", "subtree")
    if kind == "xpath":
        select = flt.get("select") or ""
        namespaces = _prefixes(flt)
        xpath_filter([], select, namespaces, keys_of)  # reject a bad expression now, not per event
        return lambda event: bool(xpath_filter([event], select, namespaces, keys_of))
    if kind != "subtree":
        raise RpcError.invalid_value(
            f"filter type {kind!r} is not supported; use subtree or xpath", error_type="protocol"
        )
    return lambda event: bool(subtree_filter([event], flt, keys_of))


_BASE_OPERATIONS: dict[str, Callable[[AgentRuntime, Session, etree._Element], Reply]] = {
    "get": AgentRuntime._get,
    "get-config": AgentRuntime._get_config,
    "edit-config": AgentRuntime._edit_config,
    "lock": AgentRuntime._lock_op,
    "unlock": AgentRuntime._unlock_op,
    "close-session": AgentRuntime._close_session,
    "kill-session": AgentRuntime._kill_session,
}
