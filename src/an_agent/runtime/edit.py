"""RFC 6241 ``<edit-config>`` semantics on an lxml data tree, validated against the YANG schema.

`TreeEditor.apply` carries out one edit element (merge, replace, create,
delete, remove, none) on a tree, with the error-tag and error-path RFC 6241
asks for on each refusal. It knows nothing of persistence or of what the
data means: `an_agent.runtime.datastore` owns the tree, diffs the result and
stores it. `EntryIndex` finds list entries by key in O(1), so an edit of one
task among thousands does not scan them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Protocol

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.errors import RpcError
from an_agent.model.ns import NETCONF_BASE_NS
from an_agent.yang.context import YangContext
from an_agent.yang.reach import UnitReach

NC_OPERATION = f"{{{NETCONF_BASE_NS}}}operation"
OPERATIONS = ("merge", "replace", "create", "delete", "remove", "none")

SchemaPath = tuple[tuple[str, str], ...]


class SchemaNode(Protocol):
    """What the datastore needs to know of a schema node (an_agent.yang provides it)."""

    @property
    def kind(self) -> str:
        """container | list | leaf | leaf-list | anydata | anyxml"""
        ...

    @property
    def keys(self) -> tuple[str, ...]: ...

    @property
    def config(self) -> bool: ...


class Schema(Protocol):
    """The datastore's view of the YANG context."""

    def schema_node(self, path: SchemaPath) -> SchemaNode | None: ...

    def validate_config(self, xml: str) -> None: ...

    def module_name(self, namespace: str) -> str | None: ...

    def unit_reach(self, path: SchemaPath) -> UnitReach | None:
        """What an entry of the unit list at ``path`` needs to be validated alone; None: the whole datastore."""
        ...


class YangSchema:
    """`Schema` over a libyang context, with namespace -> module names."""

    def __init__(self, yang: YangContext) -> None:
        self._yang = yang
        self._modules = {m.namespace: m.name for m in yang.modules()}

    def schema_node(self, path: SchemaPath) -> SchemaNode | None:
        return self._yang.schema_node(path)

    def validate_config(self, xml: str) -> None:
        self._yang.validate_config(xml)

    def module_name(self, namespace: str) -> str | None:
        return self._modules.get(namespace)

    def unit_reach(self, path: SchemaPath) -> UnitReach | None:
        return self._yang.unit_reach(path)


@dataclass
class EditDiff:
    """Units (list entries / top-level nodes) an edit adds, changes or removes, by unit key.

    A unit key is the unit's instance identifier, e.g.
    ``/irtf-agent:tasks/task[task-id='t1']``.
    """

    added: dict[str, etree._Element] = field(default_factory=dict)
    changed: dict[str, tuple[etree._Element, etree._Element]] = field(default_factory=dict)
    removed: dict[str, etree._Element] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def elements(node: etree._Element) -> list[etree._Element]:
    """The element children of ``node`` (comments and processing instructions skipped)."""
    return [child for child in node if isinstance(child.tag, str)]


def qname(element: etree._Element) -> tuple[str, str]:
    """(namespace, local name) of ``element``."""
    q = etree.QName(element)
    return (q.namespace or "", q.localname)


def stripped(element: etree._Element) -> etree._Element:
    """A deep copy without nc:operation attributes."""
    out = copy.deepcopy(element)
    for node in out.iter():
        if NC_OPERATION in node.attrib:
            del node.attrib[NC_OPERATION]
    return out


class EntryIndex:
    """Key values -> list entry, per parent element and list tag, built on first use.

    Whoever changes a tree behind the index's back (a rollback, a swapped
    tree) calls `clear`.
    """

    def __init__(self) -> None:
        # id(parent) -> (parent, list tag -> key values -> entry)
        self._slots: dict[int, tuple[etree._Element, dict[str, dict[tuple[str, ...], etree._Element]]]] = {}

    def clear(self) -> None:
        self._slots.clear()

    def entries(self, parent: etree._Element, tag: str, keys: tuple[str, ...]) -> dict[tuple[str, ...], etree._Element]:
        """Key values -> entry for the ``tag`` list entries under ``parent``."""
        slot = self._slots.get(id(parent))
        if slot is None or slot[0] is not parent:
            slot = (parent, {})
            self._slots[id(parent)] = slot
        by_key = slot[1].get(tag)
        if by_key is None:
            ns = etree.QName(tag).namespace
            by_key = {
                tuple((entry.findtext(f"{{{ns}}}{k}") or "").strip() for k in keys): entry
                for entry in parent.iterchildren(tag)
            }
            slot[1][tag] = by_key
        return by_key


class TreeEditor:
    """Applies edit elements to a data tree; keeps ``index`` up to date with what it inserts and removes."""

    def __init__(self, schema: Schema, index: EntryIndex) -> None:
        self._schema = schema
        self._index = index

    def error_path(self, path: SchemaPath, element: etree._Element | None = None) -> str:
        """An instance-identifier like libyang's data_path: /module:node/node[key='v']."""
        parts: list[str] = []
        prev_ns = None
        # The element and its ancestors, one per step of ``path`` (an edit's
        # element sits under <config>, a running one under <data>).
        chain: list[etree._Element | None] = [None] * len(path)
        node = element
        for i in range(len(path) - 1, -1, -1):
            if node is None:
                break
            chain[i] = node
            node = node.getparent()
        for i, (ns, name) in enumerate(path):
            prefix = ""
            if ns != prev_ns:
                prefix = f"{self._schema.module_name(ns) or ns}:"
                prev_ns = ns
            step = f"/{prefix}{name}"
            entry = chain[i] if i < len(chain) else None
            if entry is not None:
                info = self._schema.schema_node(path[: i + 1])
                if info is not None and info.kind == "list":
                    for key in info.keys:
                        value = entry.findtext(f"{{{ns}}}{key}")
                        if value is not None:
                            step += f"[{key}='{value}']"
            parts.append(step)
        return "".join(parts)

    def apply(self, target_parent: etree._Element, edit: etree._Element, inherited: str, path: SchemaPath) -> None:
        ns, name = qname(edit)
        node_path = (*path, (ns, name))
        if not ns:
            raise RpcError.unknown_namespace(
                name, "", f"<{name}> has no XML namespace; give it the namespace of its YANG module"
            )
        info = self._schema.schema_node(node_path)
        if info is None:
            where = self.error_path(path, target_parent) if path else ""
            module = self._schema.module_name(ns)
            if module is None and not path:
                raise RpcError.unknown_namespace(name, ns, f"no YANG module of this agent has namespace {ns}")
            raise RpcError.unknown_element(
                name,
                f"<{name}> is not a node of the YANG schema{(' under ' + where) if where else ''}",
                path=where or None,
            )
        op = edit.get(NC_OPERATION, inherited)
        if op not in OPERATIONS:
            raise RpcError.bad_attribute("operation", name, f"operation={op!r} is not one of {', '.join(OPERATIONS)}")
        if not info.config:
            raise RpcError.invalid_value(
                f"{name} is read-only state (config false) and cannot be edited",
                path=self.error_path(node_path, edit),
            )
        existing = self.find_match(target_parent, edit, info, node_path)
        if op == "create":
            if existing is not None:
                raise RpcError.data_exists(
                    f"{name} already exists; use operation merge or replace to change it",
                    path=self.error_path(node_path, existing),
                )
            self.insert(target_parent, stripped(edit), info)
        elif op == "delete":
            if existing is None:
                raise RpcError.data_missing(
                    f"{name} does not exist, so it cannot be deleted (operation remove ignores that)",
                    path=self.error_path(node_path, edit),
                )
            self.remove(target_parent, existing, info)
        elif op == "remove":
            if existing is not None:
                self.remove(target_parent, existing, info)
        elif op == "replace":
            self.put(target_parent, existing, stripped(edit), info)
        else:  # merge or none
            if info.kind in ("leaf", "anydata", "anyxml", "leaf-list"):
                if op == "merge":
                    self.put(target_parent, existing, stripped(edit), info)
                return
            if existing is None and op == "none":
                # RFC 6241 7.2: with "none", data whose level does not exist is an error.
                raise RpcError.data_missing(
                    f"{name} does not exist; create it first (operation merge or create)",
                    path=self.error_path(node_path, edit),
                )
            node = existing
            if node is None:
                node = etree.Element(edit.tag, nsmap=default_ns(ns))
                for key in info.keys:
                    key_el = edit.find(f"{{{ns}}}{key}")
                    assert key_el is not None  # _find_match checked the keys
                    node.append(stripped(key_el))
                self.insert(target_parent, node, info)
            for child in elements(edit):
                child_ns, child_name = qname(child)
                if (
                    info.kind == "list"
                    and child_ns == ns
                    and child_name in info.keys
                    and child.get(NC_OPERATION) is None
                ):
                    continue  # keys identify the entry; they are not edited
                self.apply(node, child, op, node_path)

    def entry_key(self, element: etree._Element, info: SchemaNode) -> tuple[str, ...]:
        ns = etree.QName(element).namespace
        return tuple((element.findtext(f"{{{ns}}}{k}") or "").strip() for k in info.keys)

    def insert(self, parent: etree._Element, element: etree._Element, info: SchemaNode) -> None:
        parent.append(element)
        if info.kind == "list":
            self._index.entries(parent, element.tag, tuple(info.keys))[self.entry_key(element, info)] = element

    def remove(self, parent: etree._Element, element: etree._Element, info: SchemaNode) -> None:
        parent.remove(element)
        if info.kind == "list":
            self._index.entries(parent, element.tag, tuple(info.keys)).pop(self.entry_key(element, info), None)

    def put(
        self, parent: etree._Element, existing: etree._Element | None, element: etree._Element, info: SchemaNode
    ) -> None:
        """Replace ``existing`` (in place) with ``element``, or append it."""
        if existing is None:
            self.insert(parent, element, info)
            return
        existing.addprevious(element)
        parent.remove(existing)
        if info.kind == "list":
            self._index.entries(parent, element.tag, tuple(info.keys))[self.entry_key(element, info)] = element

    def find_match(
        self, parent: etree._Element, edit: etree._Element, info: SchemaNode, path: SchemaPath
    ) -> etree._Element | None:
        tag = edit.tag
        if info.kind == "list":
            ns = path[-1][0]
            values: list[str] = []
            for key in info.keys:
                value = edit.findtext(f"{{{ns}}}{key}")
                if value is None:
                    raise RpcError.missing_element(
                        key,
                        f"list entry <{path[-1][1]}> needs its key <{key}>",
                        path=self.error_path(path[:-1], parent) if len(path) > 1 else None,
                        error_type="application",
                    )
                values.append(value.strip())
            return self._index.entries(parent, tag, tuple(info.keys)).get(tuple(values))
        if info.kind == "leaf-list":
            value = (edit.text or "").strip()
            for candidate in parent.iterchildren(tag):
                if (candidate.text or "").strip() == value:
                    return candidate
            return None
        return next(parent.iterchildren(tag), None)
