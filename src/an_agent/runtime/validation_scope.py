"""What libyang must see to judge an edit of some units: `validation_document`.

An edit on the datastore's unit path (`an_agent.runtime.datastore`) changes a few list entries (a task,
a data-param). Validating the whole datastore after each would cost time linear in the number of stored
tasks. When the compiled YANG proves that a touched entry's constraints stay inside the entry, except
leafrefs to other units' keys (`Schema.unit_reach`, `an_agent.yang.reach`), the document holds the
touched entries, the entries their leafrefs name, and every top-level node that is not a unit (a
container's own leaves and containers): the untouched units were valid before and nothing they depend on
changed. Otherwise — no such proof, a removed entry that a leafref may name, or a named entry not found
by its key value (libyang may compare it differently) — the whole datastore.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import NamedTuple

from lxml import etree

from an_agent._lxml import nsmap_of
from an_agent.runtime.edit import EntryIndex, Schema, SchemaPath, elements, qname


class TouchedEntry(NamedTuple):
    """A list entry an edit touched: its schema path, the live entry now (None: removed), whether removed."""

    path: SchemaPath
    entry: etree._Element | None
    removed: bool


def validation_document(
    schema: Schema, root: etree._Element, index: EntryIndex, touched: Iterable[TouchedEntry]
) -> str:
    """The XML libyang validates for an edit that touched ``touched`` in the tree ``root`` (module docstring).

    ``index`` finds entries by key in ``root``'s lists (the datastore's own).
    """
    keep: dict[int, etree._Element] = {}  # id -> unit entry the document must hold
    for unit in touched:
        reach = schema.unit_reach(unit.path)
        if reach is None or (reach.referenced and unit.removed):
            return whole_document(root)
        if unit.entry is None:
            continue
        keep[id(unit.entry)] = unit.entry
        for target in reach.targets:
            for value in _values_at(unit.entry, target.source):
                named = _entry_by_key(schema, root, index, target.target_list, value)
                if named is None:
                    return whole_document(root)
                keep[id(named)] = named
    parts: list[str] = []
    kinds: dict[str, str] = {}  # tag -> "whole" | "unit" (an entry of a unit list) | "container"
    for top in elements(root):
        kind = kinds.get(top.tag)
        if kind is None:
            info = schema.schema_node((qname(top),))
            if info is not None and info.kind == "container":
                kind = "container"
            elif info is not None and info.kind == "list" and schema.unit_reach((qname(top),)) is not None:
                kind = "unit"
            else:
                kind = "whole"
            kinds[top.tag] = kind
        if kind == "whole" or (kind == "unit" and id(top) in keep):
            parts.append(etree.tostring(top, encoding="unicode"))
        elif kind == "container":
            parts.append(etree.tostring(_container_part(schema, top, keep), encoding="unicode"))
    return "".join(parts)


def whole_document(root: etree._Element) -> str:
    """Every top-level node of ``root``: the whole datastore."""
    return "".join(etree.tostring(e, encoding="unicode") for e in elements(root))


def _container_part(schema: Schema, top: etree._Element, keep: dict[int, etree._Element]) -> etree._Element:
    """A top-level container with its own nodes, the kept entries of its unit lists and every other entry."""
    shell = etree.Element(top.tag, nsmap=nsmap_of(top))
    partial: dict[str, bool] = {}
    for child in elements(top):
        if child.tag not in partial:
            path = (qname(top), qname(child))
            child_info = schema.schema_node(path)
            is_list = child_info is not None and child_info.kind == "list"
            partial[child.tag] = is_list and schema.unit_reach(path) is not None
        if not partial[child.tag] or id(child) in keep:
            shell.append(copy.deepcopy(child))
    return shell


def _entry_by_key(
    schema: Schema, root: etree._Element, index: EntryIndex, list_path: SchemaPath, value: str
) -> etree._Element | None:
    """The live entry of the unit list at ``list_path`` whose single key is ``value``."""
    info = schema.schema_node(list_path)
    if info is None or len(info.keys) != 1:
        return None
    parent: etree._Element | None = root
    if len(list_path) == 2:
        ns, name = list_path[0]
        parent = root.find(f"{{{ns}}}{name}")
    if parent is None:
        return None
    ns, name = list_path[-1]
    return index.entries(parent, f"{{{ns}}}{name}", tuple(info.keys)).get((value,))


def _values_at(entry: etree._Element, steps: SchemaPath) -> list[str]:
    """The text of every element at ``steps`` below ``entry`` (nested lists and leaf-lists give several)."""
    path = "/".join(f"{{{ns}}}{name}" for ns, name in steps)
    return [(e.text or "").strip() for e in entry.iterfind(path)]
