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
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from lxml import etree

from an_agent._lxml import default_ns, nsmap_of
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
        self._max_pos: int | None = None  # highest stored position, computed once
        # id(parent) -> (parent, list tag -> key values -> entry); see _entries.
        self._index: dict[int, tuple[etree._Element, dict[str, dict[tuple[str, ...], etree._Element]]]] = {}
        self._version = 0
        self._load()

    # -- reading --------------------------------------------------------------
    @property
    def version(self) -> int:
        """Increases with every committed edit (cheap change detection for caches)."""
        return self._version

    def top_level(
        self,
        include: Callable[[etree._Element], bool] | None = None,
        only_entries: dict[str, list[tuple[str, ...]]] | None = None,
    ) -> list[etree._Element]:
        """Deep copies of the top-level config elements (those ``include`` accepts, default all).

        ``only_entries`` maps a top-level container's tag to the key values of
        the list entries to keep (found through the index), so that reading
        one task out of thousands copies one task.
        """
        with self._lock:
            out: list[etree._Element] = []
            for element in _elements(self._root):
                if include is not None and not include(element):
                    continue
                wanted = None if only_entries is None else only_entries.get(element.tag)
                if wanted is None:
                    out.append(copy.deepcopy(element))
                    continue
                shell = etree.Element(element.tag, nsmap=nsmap_of(element))
                for child in _elements(element):
                    info = self._schema.schema_node(self.schema_path(child))
                    if info is None or info.kind != "list":
                        shell.append(copy.deepcopy(child))
                        continue
                    entries = self._entries(element, child.tag, tuple(info.keys))
                    shell.extend(copy.deepcopy(entries[k]) for k in wanted if k in entries)
                    break  # one list per container here (tasks/task); its entries are placed
                out.append(shell)
            return out

    def find_entries(self, tag: str, key_names: tuple[str, ...], keys: list[tuple[str, ...]]) -> list[etree._Element]:
        """Deep copies of the top-level list entries ``tag`` with these key values (absent ones skipped)."""
        with self._lock:
            index = self._entries(self._root, tag, key_names)
            return [copy.deepcopy(index[k]) for k in keys if k in index]

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
    def edit(
        self, config: etree._Element, default_operation: str = "merge", pre_commit: PreCommit | None = None
    ) -> EditDiff:
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
            plan = self._unit_plan(config, default_operation)
            if plan is not None:
                return self._edit_units(config, default_operation, plan, pre_commit)
            # Whole-tree path (replace/delete of a container, default-operation
            # replace, ...): edit a full copy, validate and diff everything.
            candidate = copy.deepcopy(self._root)
            self._index.clear()  # it indexes the live tree; the copy gets its own entries
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
                self._remember_positions(upserts)
                for key in deletes:
                    self._unit_pos.pop(key, None)
                self._version += 1
            return diff

    # -- the unit-level fast path ---------------------------------------------
    def _unit_plan(self, config: etree._Element, default_operation: str) -> list[_Touched] | None:
        """The units an edit can touch, with snapshots, or None when it needs the whole-tree path.

        The fast path covers what agents do all day: merge/create/delete of
        list entries, at the top level or inside a top-level container (one
        task, one data-param). Its cost does not grow with the number of tasks.
        """
        if default_operation == "replace":
            return None
        touched: list[_Touched] = []
        for top in _elements(config):
            ns, name = _qname(top)
            path: SchemaPath = ((ns, name),)
            info = self._schema.schema_node(path)
            if info is None or not ns:
                return None  # let the whole-tree path report it precisely
            op = top.get(_NC_OP, default_operation)
            if info.kind == "list" and op in _OPERATIONS:
                unit = self._touch(self._root, top, info, path, "")
                if unit is None:
                    return None
                touched.append(unit)
            elif info.kind == "container" and op in ("merge", "none"):
                live = self._root.find(top.tag)
                container_key = self._unit_key_for(path, top)
                touched.append(
                    _Touched(container_key, "", self._root, top, info, path, None if live is None else live, -1, True)
                )
                for child in _elements(top):
                    child_path = (*path, _qname(child))
                    child_info = self._schema.schema_node(child_path)
                    if child_info is None or child_info.kind != "list":
                        return None
                    parent = live if live is not None else None
                    unit = self._touch(parent, child, child_info, child_path, container_key)
                    if unit is None:
                        return None
                    touched.append(unit)
            else:
                return None
        return touched

    def _touch(
        self, parent: etree._Element | None, edit: etree._Element, info: SchemaNode, path: SchemaPath, parent_key: str
    ) -> _Touched | None:
        """Snapshot the live list entry that ``edit`` addresses (None: the entry lacks a key)."""
        ns = path[-1][0]
        if any(edit.find(f"{{{ns}}}{key}") is None for key in info.keys):
            return None
        key = self._unit_key_for(path, edit, parent_key)
        existing = None if parent is None else self._find_match(parent, edit, info, path)
        index = -1 if existing is None or parent is None else parent.index(existing)
        snapshot = None if existing is None else copy.deepcopy(existing)
        return _Touched(key, parent_key, parent, edit, info, path, snapshot, index, False)

    def _unit_key_for(self, path: SchemaPath, element: etree._Element, parent_key: str = "") -> str:
        ns, name = path[-1]
        step = f"{parent_key}/{name}" if parent_key else f"/{self._schema.module_name(ns) or ns}:{name}"
        info = self._schema.schema_node(path)
        if info is not None and info.kind == "list":
            for key in info.keys:
                step += f"[{key}='{(element.findtext(f'{{{ns}}}{key}') or '').strip()}']"
        elif info is not None and info.kind == "leaf-list":
            step += f"[.='{(element.text or '').strip()}']"
        return step

    def _edit_units(
        self, config: etree._Element, default_operation: str, plan: list[_Touched], pre_commit: PreCommit | None
    ) -> EditDiff:
        containers_before = {t.key: t.snapshot for t in plan if t.container}
        try:
            for child in _elements(config):
                self._apply(self._root, child, default_operation, ())
            diff, upserts, deletes = self._unit_diff(plan)
            if diff:
                self._schema.validate_config(self._validation_document(plan, diff))
                if pre_commit is not None:
                    pre_commit(diff)
                self._store.save_config(upserts, deletes)
        except BaseException:
            self._rollback(plan, containers_before)
            raise
        for unit in upserts:
            self._unit_xml[unit.unit_key] = unit.xml
        self._remember_positions(upserts)
        for key in deletes:
            self._unit_xml.pop(key, None)
            self._unit_pos.pop(key, None)
        if diff:
            self._version += 1
        return diff

    def _remember_positions(self, upserts: list[ConfigUnit]) -> None:
        for unit in upserts:
            self._unit_pos[unit.unit_key] = unit.position
            if self._max_pos is not None and unit.position > self._max_pos:
                self._max_pos = unit.position

    def _next_position(self) -> int:
        if self._max_pos is None:
            self._max_pos = max(self._unit_pos.values(), default=-1)
        return self._max_pos + 1

    def _current(self, unit: _Touched) -> etree._Element | None:
        """The live element of a touched unit now (after or during the edit)."""
        if unit.container:
            return self._root.find(unit.edit.tag)
        parent = unit.parent
        if parent is None:  # its container did not exist before the edit
            ns, name = unit.path[0]
            parent = self._root.find(f"{{{ns}}}{name}")
            if parent is None:
                return None
        return self._find_match(parent, unit.edit, unit.info, unit.path)

    def _unit_diff(self, plan: list[_Touched]) -> tuple[EditDiff, list[ConfigUnit], list[str]]:
        diff = EditDiff()
        upserts: list[ConfigUnit] = []
        deletes: list[str] = []
        next_pos = self._next_position()
        for unit in plan:
            now = self._current(unit)
            xml = None if now is None else _serialise(now, unit.container)
            before = self._unit_xml.get(unit.key)
            if xml == before:
                continue
            if now is None:
                deletes.append(unit.key)
                if unit.snapshot is not None:
                    diff.removed[unit.key] = unit.snapshot
                continue
            assert xml is not None
            if before is None:
                diff.added[unit.key] = now
                position = next_pos
                next_pos += 1
            else:
                diff.changed[unit.key] = (unit.snapshot if unit.snapshot is not None else now, now)
                position = self._unit_pos.get(unit.key, next_pos)
            upserts.append(ConfigUnit(unit.key, unit.parent_key, position, xml))
        return diff, upserts, deletes

    def _validation_document(self, plan: list[_Touched], diff: EditDiff) -> str:
        """What libyang must see to judge this edit.

        Removing a top-level entry (a data-param, a context record) may break
        references from any task: then everything is validated. Otherwise the
        untouched entries inside containers (the other tasks) are left out:
        they were valid before and nothing they refer to went away.
        """
        if any(not u.container and not u.parent_key and u.key in diff.removed for u in plan):
            return "".join(etree.tostring(e, encoding="unicode") for e in _elements(self._root))
        touched: dict[str, list[etree._Element]] = {}
        for unit in plan:
            if unit.parent_key:
                now = self._current(unit)
                if now is not None:
                    touched.setdefault(unit.path[0][1], []).append(now)
        parts: list[str] = []
        for top in _elements(self._root):
            info = self._schema.schema_node((_qname(top),))
            if info is None or info.kind != "container":
                parts.append(etree.tostring(top, encoding="unicode"))
                continue
            shell = etree.Element(top.tag, nsmap=nsmap_of(top))
            is_list: dict[str, bool] = {}
            for child in _elements(top):
                if child.tag not in is_list:
                    child_info = self._schema.schema_node((_qname(top), _qname(child)))
                    is_list[child.tag] = child_info is not None and child_info.kind == "list"
                if not is_list[child.tag]:
                    shell.append(copy.deepcopy(child))  # leaves/containers of the container: always checked
            shell.extend(copy.deepcopy(e) for e in touched.get(etree.QName(top).localname, []))
            parts.append(etree.tostring(shell, encoding="unicode"))
        return "".join(parts)

    def _rollback(self, plan: list[_Touched], containers_before: dict[str, etree._Element | None]) -> None:
        """Put every touched unit back as it was: remove what is there now, re-insert the snapshots."""
        self._index.clear()  # rebuilt on next use; rollbacks are rare
        for unit in plan:
            if unit.container:
                continue
            now = self._current(unit)
            if now is not None and now.getparent() is not None:
                now.getparent().remove(now)  # type: ignore[union-attr]
        restore = sorted((u for u in plan if not u.container and u.snapshot is not None), key=lambda u: u.index)
        for unit in restore:
            assert unit.parent is not None and unit.snapshot is not None
            unit.parent.insert(unit.index, unit.snapshot)
        for unit in plan:
            if unit.container and containers_before.get(unit.key) is None:
                created = self._root.find(unit.edit.tag)
                if created is not None:
                    self._root.remove(created)
        self._index.clear()  # the removals above bypassed it

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
        node_path = (*path, (ns, name))
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
                name,
                f"<{name}> is not a node of the YANG schema{(' under ' + where) if where else ''}",
                path=where or None,
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
            self._insert(target_parent, _stripped(edit), info)
        elif op == "delete":
            if existing is None:
                raise RpcError.data_missing(
                    f"{name} does not exist, so it cannot be deleted (operation remove ignores that)",
                    path=self._error_path(node_path, edit),
                )
            self._remove(target_parent, existing, info)
        elif op == "remove":
            if existing is not None:
                self._remove(target_parent, existing, info)
        elif op == "replace":
            self._put(target_parent, existing, _stripped(edit), info)
        else:  # merge or none
            if info.kind in ("leaf", "anydata", "anyxml", "leaf-list"):
                if op == "merge":
                    self._put(target_parent, existing, _stripped(edit), info)
                return
            if existing is None and op == "none":
                # RFC 6241 7.2: with "none", data whose level does not exist is an error.
                raise RpcError.data_missing(
                    f"{name} does not exist; create it first (operation merge or create)",
                    path=self._error_path(node_path, edit),
                )
            node = existing
            if node is None:
                node = etree.Element(edit.tag, nsmap=default_ns(ns))
                for key in info.keys:
                    key_el = edit.find(f"{{{ns}}}{key}")
                    assert key_el is not None  # _find_match checked the keys
                    node.append(_stripped(key_el))
                self._insert(target_parent, node, info)
            for child in _elements(edit):
                child_ns, child_name = _qname(child)
                if info.kind == "list" and child_ns == ns and child_name in info.keys and child.get(_NC_OP) is None:
                    continue  # keys identify the entry; they are not edited
                self._apply(node, child, op, node_path)

    # -- list entry index: finding one task among thousands in O(1) ------------
    def _entries(
        self, parent: etree._Element, tag: str, keys: tuple[str, ...]
    ) -> dict[tuple[str, ...], etree._Element]:
        """Key values -> entry for the ``tag`` list entries under ``parent``, built on first use."""
        slot = self._index.get(id(parent))
        if slot is None or slot[0] is not parent:
            slot = (parent, {})
            self._index[id(parent)] = slot
        by_key = slot[1].get(tag)
        if by_key is None:
            ns = etree.QName(tag).namespace
            by_key = {
                tuple((entry.findtext(f"{{{ns}}}{k}") or "").strip() for k in keys): entry
                for entry in parent.iterchildren(tag)
            }
            slot[1][tag] = by_key
        return by_key

    def _entry_key(self, element: etree._Element, info: SchemaNode) -> tuple[str, ...]:
        ns = etree.QName(element).namespace
        return tuple((element.findtext(f"{{{ns}}}{k}") or "").strip() for k in info.keys)

    def _insert(self, parent: etree._Element, element: etree._Element, info: SchemaNode) -> None:
        parent.append(element)
        if info.kind == "list":
            self._entries(parent, element.tag, tuple(info.keys))[self._entry_key(element, info)] = element

    def _remove(self, parent: etree._Element, element: etree._Element, info: SchemaNode) -> None:
        parent.remove(element)
        if info.kind == "list":
            self._entries(parent, element.tag, tuple(info.keys)).pop(self._entry_key(element, info), None)

    def _put(
        self, parent: etree._Element, existing: etree._Element | None, element: etree._Element, info: SchemaNode
    ) -> None:
        """Replace ``existing`` (in place) with ``element``, or append it."""
        if existing is None:
            self._insert(parent, element, info)
            return
        existing.addprevious(element)
        parent.remove(existing)
        if info.kind == "list":
            self._entries(parent, element.tag, tuple(info.keys))[self._entry_key(element, info)] = element

    def _find_match(
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
                        path=self._error_path(path[:-1], parent) if len(path) > 1 else None,
                        error_type="application",
                    )
                values.append(value.strip())
            return self._entries(parent, tag, tuple(info.keys)).get(tuple(values))
        if info.kind == "leaf-list":
            value = (edit.text or "").strip()
            for candidate in parent.iterchildren(tag):
                if (candidate.text or "").strip() == value:
                    return candidate
            return None
        return next(parent.iterchildren(tag), None)

    # -- persistence ----------------------------------------------------------
    def _unit_key(self, element: etree._Element, parent_key: str) -> str:
        return self._unit_key_for(self.schema_path(element), element, parent_key)

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
        next_pos = self._next_position()
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


@dataclass
class _Touched:
    """One unit an edit may change: where it lives and what it was before."""

    key: str
    parent_key: str
    parent: etree._Element | None  # live parent before the edit (None: its container does not exist yet)
    edit: etree._Element  # the edit element addressing it (carries the keys)
    info: SchemaNode
    path: SchemaPath
    snapshot: etree._Element | None  # deep copy before the edit; None when it did not exist
    index: int
    container: bool  # a top-level container unit (compared shallow)


@functools.lru_cache(maxsize=256)
def _entry_finder(namespace: str, name: str, keys: tuple[str, ...]) -> etree.XPath:
    """Compiled ``./p:name[normalize-space(p:k0)=$v0]...`` for one list."""
    predicates = "".join(f"[normalize-space(p:{key})=$v{i}]" for i, key in enumerate(keys))
    return etree.XPath(f"./p:{name}{predicates}", namespaces={"p": namespace})


def _stripped(element: etree._Element) -> etree._Element:
    """A deep copy without nc:operation attributes."""
    out = copy.deepcopy(element)
    for node in out.iter():
        if _NC_OP in node.attrib:
            del node.attrib[_NC_OP]
    return out


def _serialise(element: etree._Element, shallow: bool) -> str:
    if shallow:
        element = etree.Element(element.tag, nsmap=default_ns(etree.QName(element).namespace))
    return etree.tostring(element, encoding="unicode")
