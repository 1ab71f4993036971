"""NETCONF-only data and filters of the NETCONF face: RFC 6022 monitoring, RFC 5277 streams, RFC 8341 /nacm, filters.

Pure functions from the operation layer's values to XML and from filter
elements to predicates; `an_agent.nc.face` calls them.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable, Mapping

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.access.nacm import ALL_OPERATIONS, NACM_NS, NacmState, Rule
from an_agent.clock import to_rfc3339
from an_agent.errors import RpcError
from an_agent.model import IRTF_AGENT_NS, NETCONF_BASE_NS, NETCONF_MONITORING_NS, NETMOD_NOTIFICATION_NS
from an_agent.runtime.filters import subtree_filter, xpath_filter
from an_agent.runtime.requests import EventFilter, ReadScope
from an_agent.yang.info import ModuleInfo, SchemaNodeInfo

_NC = f"{{{NETCONF_BASE_NS}}}"
_NCM = f"{{{NETCONF_MONITORING_NS}}}"
_NETMOD = f"{{{NETMOD_NOTIFICATION_NS}}}"
_TASK_ID = f"{{{IRTF_AGENT_NS}}}task-id"
_ACM = f"{{{NACM_NS}}}"
_RULE_TYPE_LEAF = {"rpc": "rpc-name", "notification": "notification-name"}
_PATH_MODULE = re.compile(r"(?<![\w.-])([A-Za-z_][\w.-]*+):")  # linear: starts only where a name starts

KeysOf = Callable[[etree._Element], tuple[str, ...]]


def netconf_state(capabilities: Iterable[str], modules: Iterable[ModuleInfo]) -> etree._Element:
    """RFC 6022 ``/netconf-state``: capabilities and the schemas a client can fetch with ``<get-schema>``."""
    state = etree.Element(_NCM + "netconf-state", nsmap=default_ns(NETCONF_MONITORING_NS))
    caps = etree.SubElement(state, _NCM + "capabilities")
    for uri in capabilities:
        etree.SubElement(caps, _NCM + "capability").text = uri
    schemas = etree.SubElement(state, _NCM + "schemas")
    for module in modules:
        schema = etree.SubElement(schemas, _NCM + "schema")
        etree.SubElement(schema, _NCM + "identifier").text = module.name
        etree.SubElement(schema, _NCM + "version").text = module.revision or ""
        etree.SubElement(schema, _NCM + "format").text = "yang"
        etree.SubElement(schema, _NCM + "namespace").text = module.namespace
        etree.SubElement(schema, _NCM + "location").text = "NETCONF"
    return state


def nacm(state: NacmState, namespaces: Mapping[str, str], config_only: bool = False) -> etree._Element:
    """RFC 8341 ``/nacm``: the rules in force (groups, rule-lists) and, unless ``config_only``, the counters.

    ``namespaces`` maps module names to namespaces: a rule's ``path`` is
    written with each module name as an XML prefix, declared on the element.
    """
    rules = state.nacm
    root = etree.Element(_ACM + "nacm", nsmap=default_ns(NACM_NS))

    def leaf(parent: etree._Element, name: str, text: str) -> None:
        etree.SubElement(parent, _ACM + name).text = text

    leaf(root, "enable-nacm", str(rules.enable_nacm).lower())
    leaf(root, "read-default", rules.read_default)
    leaf(root, "write-default", rules.write_default)
    leaf(root, "exec-default", rules.exec_default)
    leaf(root, "enable-external-groups", str(rules.enable_external_groups).lower())
    if not config_only:
        leaf(root, "denied-operations", str(state.denied_operations))
        leaf(root, "denied-data-writes", str(state.denied_data_writes))
        leaf(root, "denied-notifications", str(state.denied_notifications))
    if rules.groups:
        groups = etree.SubElement(root, _ACM + "groups")
        for name, users in rules.groups.items():
            group = etree.SubElement(groups, _ACM + "group")
            leaf(group, "name", name)
            for user in sorted(users):
                leaf(group, "user-name", user)
    for rule_list in rules.rule_lists:
        entry = etree.SubElement(root, _ACM + "rule-list")
        leaf(entry, "name", rule_list.name)
        for group_name in sorted(rule_list.groups):
            leaf(entry, "group", group_name)
        for rule in rule_list.rules:
            entry.append(_nacm_rule(rule, namespaces))
    return root


def _nacm_rule(rule: Rule, namespaces: Mapping[str, str]) -> etree._Element:
    element = etree.Element(_ACM + "rule")
    etree.SubElement(element, _ACM + "name").text = rule.name
    etree.SubElement(element, _ACM + "module-name").text = rule.module_name
    if rule.kind == "data":
        # An XPath in XML: its prefixes are XML namespace prefixes in scope (RFC 7950 9.13.2).
        prefixes = {m: namespaces[m] for m in _PATH_MODULE.findall(rule.target or "") if m in namespaces}
        etree.SubElement(element, _ACM + "path", nsmap=prefixes).text = rule.target
    elif rule.kind != "any":
        etree.SubElement(element, _ACM + _RULE_TYPE_LEAF[rule.kind]).text = rule.target or "*"
    operations = "*" if rule.operations >= ALL_OPERATIONS else " ".join(sorted(rule.operations))
    etree.SubElement(element, _ACM + "access-operations").text = operations
    etree.SubElement(element, _ACM + "action").text = rule.action
    return element


def streams(log_created: float) -> etree._Element:
    """RFC 5277 stream discovery: ``/netconf/streams`` (one stream, NETCONF, with replay)."""
    netconf = etree.Element(_NETMOD + "netconf", nsmap=default_ns(NETMOD_NOTIFICATION_NS))
    stream = etree.SubElement(etree.SubElement(netconf, _NETMOD + "streams"), _NETMOD + "stream")
    etree.SubElement(stream, _NETMOD + "name").text = "NETCONF"
    etree.SubElement(
        stream, _NETMOD + "description"
    ).text = "condition-notifications on every task-status transition (draft-wang-nmrg-magent-im)"
    etree.SubElement(stream, _NETMOD + "replaySupport").text = "true"
    etree.SubElement(stream, _NETMOD + "replayLogCreationTime").text = to_rfc3339(log_created)
    return netconf


def get_schema(operation: etree._Element, modules: list[ModuleInfo]) -> etree._Element:
    """RFC 6022 ``<get-schema>``: the ``<data>`` reply holding the module's YANG text."""
    identifier = (operation.findtext(_NCM + "identifier") or "").strip()
    version = (operation.findtext(_NCM + "version") or "").strip()
    fmt = (operation.findtext(_NCM + "format") or "yang").strip()
    if not identifier:
        raise RpcError.missing_element("identifier", "<get-schema> needs the module name in <identifier>")
    if fmt.split(":")[-1] != "yang":
        raise RpcError.invalid_value(f"schema format {fmt!r} is not available; only yang is served")
    matches = [m for m in modules if m.name == identifier and (not version or m.revision == version)]
    if not matches:
        available = ", ".join(f"{m.name}@{m.revision}" for m in modules)
        raise RpcError.invalid_value(
            f"no schema {identifier}{'@' + version if version else ''}; available: {available}"
        )
    data = etree.Element(_NCM + "data", nsmap=default_ns(NETCONF_MONITORING_NS))
    data.text = matches[0].text
    return data


def read_scope(flt: etree._Element | None) -> ReadScope:
    """What a subtree filter can possibly select: top-level names, and task ids when it names them."""
    if flt is None or flt.get("type", "subtree") != "subtree":
        return ReadScope()
    names: set[tuple[str | None, str]] = set()
    task_ids: frozenset[str] | None = None
    templates = True
    for child in flt:
        if not isinstance(child.tag, str):
            continue
        q = etree.QName(child)
        names.add((q.namespace, q.localname))
        if q.localname == "agent" and q.namespace in (None, IRTF_AGENT_NS):
            selected = [etree.QName(c).localname for c in child if isinstance(c.tag, str)]
            templates = not selected or "schema-templates" in selected
        if q.localname == "tasks" and q.namespace in (None, IRTF_AGENT_NS):
            entries = [e for e in child if isinstance(e.tag, str)]
            ids = [(e.findtext(_TASK_ID) or e.findtext("task-id") or "").strip() for e in entries]
            if entries and all(ids) and all(etree.QName(e).localname == "task" for e in entries):
                task_ids = frozenset(ids)
    return ReadScope(frozenset(names), task_ids, templates)


def filtered(flt: etree._Element | None, data: list[etree._Element], keys_of: KeysOf) -> list[etree._Element]:
    """Apply a ``<get>``/``<get-config>`` filter (subtree or xpath) to top-level data elements."""
    if flt is None:
        return data
    kind = flt.get("type", "subtree")
    if kind == "subtree":
        return subtree_filter(data, flt, keys_of)
    if kind == "xpath":
        select = flt.get("select")
        if not select:
            raise RpcError.missing_attribute("select", "filter", "an xpath filter needs a select attribute")
        return xpath_filter(data, select, _prefixes(flt), keys_of)
    raise RpcError.bad_attribute("type", "filter", f"filter type {kind!r} is not supported; use subtree or xpath")


def event_filter(flt: etree._Element | None, keys_of: KeysOf) -> EventFilter | None:
    """A ``<create-subscription>`` filter as a predicate on notification contents (None: everything)."""
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


def data_reply(elements: list[etree._Element]) -> etree._Element:
    """``<data>`` holding ``elements`` (the reply of ``<get>`` and ``<get-config>``)."""
    data = etree.Element(_NC + "data", nsmap=default_ns(NETCONF_BASE_NS))
    data.extend(elements)
    return data


def _prefixes(element: etree._Element) -> dict[str, str]:
    """The prefix -> namespace declarations in scope at ``element`` (for an xpath select)."""
    return {prefix: uri for prefix, uri in element.nsmap.items() if prefix}


def nmda_filter(subtree: etree._Element | None, xpath: etree._Element | None) -> etree._Element | None:
    """An RFC 8526 ``<get-data>`` filter (``subtree-filter`` or ``xpath-filter``) as a base ``<filter>``."""
    if subtree is not None:
        flt = etree.Element(_NC + "filter", type="subtree")
        flt.extend(copy.deepcopy(child) for child in subtree if isinstance(child.tag, str))
        return flt
    if xpath is not None:
        prefixes = _prefixes(xpath)
        return etree.Element(_NC + "filter", type="xpath", select=(xpath.text or "").strip(), nsmap=prefixes)
    return None


SchemaNodeOf = Callable[[tuple[tuple[str, str], ...]], SchemaNodeInfo | None]


def state_only(data: list[etree._Element], schema_node: SchemaNodeOf) -> list[etree._Element]:
    """``config-filter false`` of ``<get-data>``: the state (config false) nodes and their ancestors with keys."""

    def keep(element: etree._Element, path: tuple[tuple[str, str], ...]) -> bool:
        q = etree.QName(element)
        here = (*path, (q.namespace or "", q.localname))
        info = schema_node(here)
        if info is None or not info.config:
            return True
        children = [c for c in element if isinstance(c.tag, str)]
        kept = [c for c in children if keep(c, here)]
        for child in children:
            if child not in kept and not _is_key(child, info.keys):
                element.remove(child)
        return bool(kept)

    return [e for e in data if keep(e, ())]


def _is_key(element: etree._Element, keys: tuple[str, ...]) -> bool:
    return etree.QName(element).localname in keys
