"""The running configuration datastore: RFC 6241 ``<edit-config>`` semantics, libyang
validation before commit, SQLite persistence of what changed.

The datastore holds the top-level config elements as an lxml tree. An edit is
applied to a copy, the copy is validated as a whole by libyang, a pre-commit
hook may still refuse it (the task engine checks new tasks there), and only
then is it persisted and swapped in: a refused edit leaves both memory and
disk untouched.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from lxml import etree

from an_agent.errors import RpcError
from an_agent.store.agent_store import AgentStore, ConfigUnit

NC_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
_NC_OP = f"{{{NC_NS}}}operation"
_OPERATIONS = ("merge", "replace", "create", "delete", "remove", "none")

SchemaPath = tuple[tuple[str, str], ...]


class SchemaNode(Protocol):
    """What the datastore needs to know of a schema node (an_agent.yang provides it)."""

    kind: str  # container | list | leaf | leaf-list | anydata | anyxml
    keys: tuple[str, ...]
    config: bool


class Schema(Protocol):
    def schema_node(self, path: SchemaPath) -> SchemaNode | None: ...

    def validate_config(self, xml: str) -> None: ...

    def module_name(self, namespace: str) -> str | None: ...


@dataclass
class EditDiff:
    """Units (list entries / top-level nodes) an edit adds, changes or removes, by unit key."""

    added: dict[str, etree._Element] = field(default_factory=dict)
    changed: dict[str, tuple[etree._Element, etree._Element]] = field(default_factory=dict)
    removed: dict[str, etree._Element] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.removed)


PreCommit = Callable[[EditDiff], None]


def _elements(node: etree._Element) -> list[etree._Element]:
    return [child for child in node if isinstance(child.tag, str)]


def _qname(element: etree._Element) -> tuple[str, str]:
    q = etree.QName(element)
    return (q.namespace or "", q.localname)


class Datastore:
    """The running datastore of one agent. Thread-safe; edits are serialised."""

    def __init__(self, schema: Schema, store: AgentStore) -> None:
        self._schema = schema
        self._store = store
        self._lock = threading.RLock()
        self._root = etree.Element(f"{{{NC_NS}}}data")
        self._unit_xml: dict[str, str] = {}
        self._unit_pos: dict[str, int] = {}
        self._version = 0
        self._load()

    # -- reading --------------------------------------------------------------
    @property
    def version(self) -> int:
        """Increases with every committed edit (cheap change detection for caches)."""
        return self._version

    def top_level(self) -> list[etree._Element]:
        """Deep copies of the top-level config elements."""
        with self._lock:
            return [copy.deepcopy(e) for e in _elements(self._root)]

    def find(self, namespace: str, *names: str) -> etree._Element | None:
        """A deep copy of the first element at the path of local names in ``namespace``, or None."""
        with self._lock:
            node: etree._Element | None = self._root
            for name in names:
                assert node is not None
                node = node.find(f"{{{namespace}}}{name}")
                if node is None:
                    return None
            return copy.deepcopy(node)

    def keys_of(self, element: etree._Element) -> tuple[str, ...]:
        """List key names when ``element`` is a list entry of the data tree, else ()."""
        info = self._schema.schema_node(self.schema_path(element))
        return tuple(info.keys) if info is not None and info.kind == "list" else ()

    @staticmethod
    def schema_path(element: etree._Element) -> SchemaPath:
        path: list[tuple[str, str]] = []
        node: etree._Element | None = element
        while node is not None and etree.QName(node).localname != "data" and node.getparent() is not None:
            path.append(_qname(node))
            node = node.getparent()
        if node is not None and etree.QName(node).namespace != NC_NS:
            path.append(_qname(node))
        return tuple(reversed(path))

    # -- editing --------------------------------------------------------------
    def edit(self, config: etree._Element, default_operation: str = "merge", pre_commit: PreCommit | None = None) -> EditDiff:
        """Apply the children of an ``<edit-config>``'s ``<config>`` element to running.

        Raises `RpcError` (and changes nothing) when the edit is malformed, when
        the result does not validate against the YANG modules, or when
        ``pre_commit`` refuses the resulting diff.
        """
        if default_operation not in ("merge", "replace", "none"):
            raise RpcError.invalid_value(
                f"default-operation must be merge, replace or none, not {default_operation!r}", error_type="protocol"
            )
        with self._lock:
            candidate = copy.deepcopy(self._root)
            for child in _elements(config):
                self._apply(candidate, child, default_operation, ())
            xml = "".join(etree.tostring(e, encoding="unicode") for e in _elements(candidate))
            self._schema.validate_config(xml)
            diff, upserts, deletes, unit_xml = self._diff(candidate)
            if pre_commit is not None and diff:
                pre_commit(diff)
            if diff:
                self._store.save_config(upserts, deletes)
                self._root = candidate
                self._unit_xml = unit_xml
                self._unit_pos.update((u.unit_key, u.position) for u in upserts)
                for key in deletes:
                    self._unit_pos.pop(key, None)
                self._version += 1
            return diff

    def _error_path(self, path: SchemaPath, element: etree._Element | None = None) -> str:
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

    def _apply(self, target_parent: etree._Element, edit: etree._Element, inherited: str, path: SchemaPath) -> None:
        ns, name = _qname(edit)
        node_path = path + ((ns, name),)
        if not ns:
            raise RpcError.unknown_namespace(
                name, "", f"<{name}> has no XML namespace; give it the namespace of its YANG module"
            )
        info = self._schema.schema_node(node_path)
        if info is None:
            where = self._error_path(path, target_parent) if path else ""
            module = self._schema.module_name(ns)
            if module is None and not path:
                raise RpcError.unknown_namespace(name, ns, f"no YANG module of this agent has namespace {ns}")
            raise RpcError.unknown_element(
                name, f"<{name}> is not a node of the YANG schema{(' under ' + where) if where else ''}", path=where or None
            )
        op = edit.get(_NC_OP, inherited)
        if op not in _OPERATIONS:
            err = RpcError("protocol", "bad-attribute", f"operation={op!r} is not one of {', '.join(_OPERATIONS)}")
            err.info = {"bad-attribute": "operation", "bad-element": name}
            raise err
        if not info.config:
            raise RpcError.invalid_value(
                f"{name} is read-only state (config false) and cannot be edited",
                path=self._error_path(node_path, edit),
            )
        existing = self._find_match(target_parent, edit, info, node_path)
        if op == "create":
            if existing is not None:
                raise RpcError.data_exists(
                    f"{name} already exists; use operation merge or replace to change it",
                    path=self._error_path(node_path, existing),
                )
            target_parent.append(_stripped(edit))
        elif op == "delete":
            if existing is None:
                raise RpcError.data_missing(
                    f"{name} does not exist, so it cannot be deleted (operation remove ignores that)",
                    path=self._error_path(node_path, edit),
                )
            target_parent.remove(existing)
        elif op == "remove":
            if existing is not None:
                target_parent.remove(existing)
        elif op == "replace":
            replacement = _stripped(edit)
            if existing is not None:
                existing.addprevious(replacement)
                target_parent.remove(existing)
            else:
                target_parent.append(replacement)
        else:  # merge or none
            if info.kind in ("leaf", "anydata", "anyxml", "leaf-list"):
                if op == "merge":
                    replacement = _stripped(edit)
                    if existing is not None:
                        existing.addprevious(replacement)
                        target_parent.remove(existing)
                    else:
                        target_parent.append(replacement)
                return
            created = existing is None
            node = existing
            if node is None:
                node = etree.SubElement(target_parent, edit.tag, nsmap={None: ns})
                for key in info.keys:
                    key_el = edit.find(f"{{{ns}}}{key}")
                    assert key_el is not None  # _find_match checked the keys
                    node.append(_stripped(key_el))
            for child in _elements(edit):
                child_ns, child_name = _qname(child)
                if info.kind == "list" and child_ns == ns and child_name in info.keys and child.get(_NC_OP) is None:
                    continue  # keys identify the entry; they are not edited
                self._apply(node, child, op, node_path)
            if created and op == "none" and len(_elements(node)) <= len(info.keys):
                target_parent.remove(node)  # "none" creates nothing by itself

    def _find_match(
        self, parent: etree._Element, edit: etree._Element, info: SchemaNode, path: SchemaPath
    ) -> etree._Element | None:
        tag = edit.tag
        if info.kind == "list":
            ns = path[-1][0]
            wanted: list[tuple[str, str]] = []
            for key in info.keys:
                value = edit.findtext(f"{{{ns}}}{key}")
                if value is None:
                    raise RpcError.missing_element(
                        key,
                        f"list entry <{path[-1][1]}> needs its key <{key}>",
                        path=self._error_path(path[:-1], parent) if len(path) > 1 else None,
                        error_type="application",
                    )
                wanted.append((key, value.strip()))
            for candidate in parent.iterchildren(tag):
                if all((candidate.findtext(f"{{{ns}}}{k}") or "").strip() == v for k, v in wanted):
                    return candidate
            return None
        if info.kind == "leaf-list":
            value = (edit.text or "").strip()
            for candidate in parent.iterchildren(tag):
                if (candidate.text or "").strip() == value:
                    return candidate
            return None
        return next(parent.iterchildren(tag), None)

    # -- persistence ----------------------------------------------------------
    def _unit_key(self, element: etree._Element, parent_key: str) -> str:
        ns, name = _qname(element)
        if parent_key:
            step = f"{parent_key}/{name}"
        else:
            step = f"/{self._schema.module_name(ns) or ns}:{name}"
        path = self.schema_path(element)
        info = self._schema.schema_node(path)
        if info is not None and info.kind == "list":
            for key in info.keys:
                step += f"[{key}='{element.findtext(f'{{{ns}}}{key}') or ''}']"
        elif info is not None and info.kind == "leaf-list":
            step += f"[.='{(element.text or '').strip()}']"
        return step

    def _units(self, root: etree._Element) -> dict[str, tuple[str, etree._Element, bool]]:
        """unit key -> (parent key, element, shallow) for every unit of a tree."""
        units: dict[str, tuple[str, etree._Element, bool]] = {}
        for top in _elements(root):
            info = self._schema.schema_node(self.schema_path(top))
            key = self._unit_key(top, "")
            if info is not None and info.kind == "container":
                units[key] = ("", top, True)
                for child in _elements(top):
                    units[self._unit_key(child, key)] = (key, child, False)
            else:
                units[key] = ("", top, False)
        return units

    def _diff(self, candidate: etree._Element) -> tuple[EditDiff, list[ConfigUnit], list[str], dict[str, str]]:
        diff = EditDiff()
        upserts: list[ConfigUnit] = []
        old_units = self._units(self._root)
        new_units = self._units(candidate)
        new_xml: dict[str, str] = {}
        next_pos = max(self._unit_pos.values(), default=-1) + 1
        for key, (parent_key, element, shallow) in new_units.items():
            xml = _serialise(element, shallow)
            new_xml[key] = xml
            if self._unit_xml.get(key) == xml:
                continue
            if key in old_units:
                diff.changed[key] = (old_units[key][1], element)
                position = self._unit_pos[key]
            else:
                diff.added[key] = element
                position = next_pos
                next_pos += 1
            upserts.append(ConfigUnit(key, parent_key, position, xml))
        deletes = [key for key in old_units if key not in new_units]
        for key in deletes:
            diff.removed[key] = old_units[key][1]
        return diff, upserts, deletes, new_xml

    def _load(self) -> None:
        by_key: dict[str, etree._Element] = {}
        for unit in self._store.load_config():
            element = etree.fromstring(unit.xml)
            parent = self._root if not unit.parent_key else by_key.get(unit.parent_key)
            if parent is None:
                continue  # orphan row from an interrupted older version; ignored
            parent.append(element)
            by_key[unit.unit_key] = element
            self._unit_pos[unit.unit_key] = unit.position
        for key, (_, element, shallow) in self._units(self._root).items():
            self._unit_xml[key] = _serialise(element, shallow)


def _stripped(element: etree._Element) -> etree._Element:
    """A deep copy without nc:operation attributes."""
    out = copy.deepcopy(element)
    for node in out.iter():
        if _NC_OP in node.attrib:
            del node.attrib[_NC_OP]
    return out


def _serialise(element: etree._Element, shallow: bool) -> str:
    if shallow:
        element = etree.Element(element.tag, nsmap={None: etree.QName(element).namespace})
    return etree.tostring(element, encoding="unicode")
