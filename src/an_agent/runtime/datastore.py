"""The running configuration datastore: the data tree, its units, their SQLite persistence.

The datastore holds the top-level config elements as an lxml tree and keeps
it in SQLite as *units* (a top-level node, or one entry of a top-level
container: one task, one data-param). An edit is staged under the datastore
lock by `Datastore.edit`: applied (with `an_agent.runtime.edit.TreeEditor`),
diffed by unit and validated by libyang; the caller inspects the diff and
calls `PendingEdit.commit`, which stores the changed units in one
transaction. An edit left uncommitted, or refused by an exception, is rolled
back: memory and disk stay untouched. The datastore never calls back into
the operation layer.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

from lxml import etree

from an_agent import stages
from an_agent._lxml import default_ns, nsmap_of
from an_agent.errors import RpcError
from an_agent.model.ns import NETCONF_BASE_NS
from an_agent.runtime.edit import (
    NC_OPERATION,
    OPERATIONS,
    EditDiff,
    EntryIndex,
    Schema,
    SchemaNode,
    SchemaPath,
    TreeEditor,
    elements,
    qname,
    stripped,
)
from an_agent.runtime.validation_scope import TouchedEntry, validation_document, whole_document
from an_agent.store.agent_store import AgentStore, ConfigUnit


@dataclass
class PendingEdit:
    """An edit applied and validated but not yet stored (see `Datastore.edit`)."""

    diff: EditDiff
    _finish: Callable[[Mapping[str, str]], None]
    committed: bool = False

    def commit(self, task_owners: Mapping[str, str] | None = None) -> None:
        """Store the changed units (and the owners of new tasks, task id -> user) in one transaction."""
        if self.diff:
            self._finish(task_owners or {})
        self.committed = True
        if stages.ON:
            stages.mark("committed")


class Datastore:
    """The running datastore of one agent. Thread-safe; edits are serialised."""

    def __init__(self, schema: Schema, store: AgentStore) -> None:
        self._schema = schema
        self._store = store
        self._lock = threading.RLock()
        self._index = EntryIndex()
        self._editor = TreeEditor(schema, self._index)
        self._root = etree.Element(f"{{{NETCONF_BASE_NS}}}data")
        self._unit_xml: dict[str, str] = {}
        self._unit_pos: dict[str, int] = {}
        self._max_pos: int | None = None  # highest stored position, computed once
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
            for element in elements(self._root):
                if include is not None and not include(element):
                    continue
                wanted = None if only_entries is None else only_entries.get(element.tag)
                if wanted is None:
                    out.append(copy.deepcopy(element))
                    continue
                shell = etree.Element(element.tag, nsmap=nsmap_of(element))
                for child in elements(element):
                    info = self._schema.schema_node(self.schema_path(child))
                    if info is None or info.kind != "list":
                        shell.append(copy.deepcopy(child))
                        continue
                    entries = self._index.entries(element, child.tag, tuple(info.keys))
                    shell.extend(copy.deepcopy(entries[k]) for k in wanted if k in entries)
                    break  # one list per container here (tasks/task); its entries are placed
                out.append(shell)
            return out

    def find_entries(
        self, tag: str, key_names: tuple[str, ...], keys: list[tuple[str, ...]], container: str | None = None
    ) -> list[etree._Element]:
        """Deep copies of the list entries ``tag`` with these key values (absent ones skipped).

        The list is at the top level, or directly inside the top-level
        ``container`` (a tag) when one is given, e.g. tasks/task.
        """
        with self._lock:
            parent = self._root if container is None else self._root.find(container)
            if parent is None:
                return []
            index = self._index.entries(parent, tag, key_names)
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

    def snapshot(self) -> etree._Element:
        """A deep copy of the whole datastore: a ``<data>`` element holding the top-level config nodes."""
        with self._lock:
            return copy.deepcopy(self._root)

    def keys_of(self, element: etree._Element) -> tuple[str, ...]:
        """List key names when ``element`` is a list entry of the data tree, else ()."""
        info = self._schema.schema_node(self.schema_path(element))
        return tuple(info.keys) if info is not None and info.kind == "list" else ()

    @staticmethod
    def schema_path(element: etree._Element) -> SchemaPath:
        path: list[tuple[str, str]] = []
        node: etree._Element | None = element
        while node is not None and etree.QName(node).localname != "data" and node.getparent() is not None:
            path.append(qname(node))
            node = node.getparent()
        if node is not None and etree.QName(node).namespace != NETCONF_BASE_NS:
            path.append(qname(node))
        return tuple(reversed(path))

    # -- editing --------------------------------------------------------------
    @contextmanager
    def edit(
        self, config: etree._Element, default_operation: str = "merge", replace_all: bool = False
    ) -> Iterator[PendingEdit]:
        """Stage the children of an ``<edit-config>``'s ``<config>`` element; hold the datastore lock meanwhile.

        With ``replace_all`` the children of ``config`` become the whole
        datastore (``<commit>`` of the candidate, ``<copy-config>``, a
        confirmed commit's rollback): what they leave out is deleted.

        Raises `RpcError` (and changes nothing) when the edit is malformed or
        its result does not validate against the YANG modules. Inside the
        block the caller sees `PendingEdit.diff` and decides: `PendingEdit.commit`
        stores it; an exception, or leaving without commit, rolls it back.
        """
        if default_operation not in ("merge", "replace", "none"):
            raise RpcError.invalid_value(
                f"default-operation must be merge, replace or none, not {default_operation!r}", error_type="protocol"
            )
        with self._lock:
            plan = None if replace_all else self._unit_plan(config, default_operation)
            if replace_all:
                pending, abort = self._stage_tree(config, default_operation, replace_all=True)
            elif plan is not None:
                pending, abort = self._stage_units(config, default_operation, plan)
            else:
                pending, abort = self._stage_tree(config, default_operation)
            try:
                yield pending
            except BaseException:
                abort()
                raise
            if not pending.committed:
                abort()

    def _stage_tree(
        self, config: etree._Element, default_operation: str, replace_all: bool = False
    ) -> tuple[PendingEdit, Callable[[], None]]:
        """Whole-tree path (replace/delete of a container, default-operation replace, ...).

        Edits a full copy, validates and diffs everything; the live tree is
        swapped only on commit, so aborting is free.
        """
        self._index.clear()  # it indexes the live tree; the copy gets its own entries
        if replace_all:
            candidate = etree.Element(self._root.tag)
            candidate.extend(stripped(child) for child in elements(config))
        else:
            candidate = copy.deepcopy(self._root)
            for child in elements(config):
                self._editor.apply(candidate, child, default_operation, ())
        xml = whole_document(candidate)
        self._schema.validate_config(xml)
        diff, upserts, deletes, unit_xml = self._diff(candidate)

        def finish(task_owners: Mapping[str, str]) -> None:
            self._store.save_config(upserts, deletes, task_owners)
            self._root = candidate
            self._index.clear()
            self._unit_xml = unit_xml
            self._remember_positions(upserts)
            for key in deletes:
                self._unit_pos.pop(key, None)
            self._version += 1

        return PendingEdit(diff, finish), self._index.clear

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
        for top in elements(config):
            ns, name = qname(top)
            path: SchemaPath = ((ns, name),)
            info = self._schema.schema_node(path)
            if info is None or not ns:
                return None  # let the whole-tree path report it precisely
            op = top.get(NC_OPERATION, default_operation)
            if info.kind == "list" and op in OPERATIONS:
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
                for child in elements(top):
                    child_path = (*path, qname(child))
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
        existing = None if parent is None else self._editor.find_match(parent, edit, info, path)
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

    def _stage_units(
        self, config: etree._Element, default_operation: str, plan: list[_Touched]
    ) -> tuple[PendingEdit, Callable[[], None]]:
        """Unit path: edit the live tree in place (snapshots of every touched unit allow the rollback)."""
        containers_before = {t.key: t.snapshot for t in plan if t.container}

        def abort() -> None:
            self._rollback(plan, containers_before)

        try:
            for child in elements(config):
                self._editor.apply(self._root, child, default_operation, ())
            diff, upserts, deletes = self._unit_diff(plan)
            if diff:
                self._schema.validate_config(self._validation_document(plan, diff))
                if stages.ON:
                    stages.mark("yang-validated")
        except BaseException:
            abort()
            raise

        def finish(task_owners: Mapping[str, str]) -> None:
            self._store.save_config(upserts, deletes, task_owners)
            for unit in upserts:
                self._unit_xml[unit.unit_key] = unit.xml
            self._remember_positions(upserts)
            for key in deletes:
                self._unit_xml.pop(key, None)
                self._unit_pos.pop(key, None)
            self._version += 1

        return PendingEdit(diff, finish), abort

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
        return self._editor.find_match(parent, unit.edit, unit.info, unit.path)

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
        """What libyang must see to judge this edit (`an_agent.runtime.validation_scope`)."""
        entries = (unit for unit in plan if not unit.container)
        touched = [TouchedEntry(unit.path, self._current(unit), unit.key in diff.removed) for unit in entries]
        return validation_document(self._schema, self._root, self._index, touched)

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

    # -- persistence ----------------------------------------------------------
    def _unit_key(self, element: etree._Element, parent_key: str) -> str:
        return self._unit_key_for(self.schema_path(element), element, parent_key)

    def units(self, root: etree._Element) -> dict[str, tuple[str, etree._Element, bool]]:
        """unit key -> (parent key, element, shallow) for every unit of a tree (a ``<data>`` element).

        A unit is a top-level node, or a child of a top-level container
        (shallow: the container itself, compared without its children).
        """
        units: dict[str, tuple[str, etree._Element, bool]] = {}
        for top in elements(root):
            info = self._schema.schema_node(self.schema_path(top))
            key = self._unit_key(top, "")
            if info is not None and info.kind == "container":
                units[key] = ("", top, True)
                for child in elements(top):
                    units[self._unit_key(child, key)] = (key, child, False)
            else:
                units[key] = ("", top, False)
        return units

    def _diff(self, candidate: etree._Element) -> tuple[EditDiff, list[ConfigUnit], list[str], dict[str, str]]:
        diff = EditDiff()
        upserts: list[ConfigUnit] = []
        old_units = self.units(self._root)
        new_units = self.units(candidate)
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
        for key, (_, element, shallow) in self.units(self._root).items():
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


def _serialise(element: etree._Element, shallow: bool) -> str:
    if shallow:
        element = etree.Element(element.tag, nsmap=default_ns(etree.QName(element).namespace))
    return etree.tostring(element, encoding="unicode")
