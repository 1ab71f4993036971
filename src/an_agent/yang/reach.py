"""How far the constraints of a list entry reach, computed once from the compiled schema.

The datastore stores config data as *units*: one entry of a top-level list,
or of a list directly inside a top-level container (one task, one
data-param, one context record). To judge an edit that adds or changes one
unit, libyang need not see the whole datastore when the YANG proves that
nothing outside the unit can be affected and nothing outside it is needed
except the entries its leafrefs name. `analyse` decides that per unit list:

- inside the entry (config nodes only; validation of running ignores state):
  every ``must`` and ``when`` stays in the entry (no absolute path, no more
  ``..`` steps than the node's depth below the entry, no ``deref()``); every
  leafref either stays in the entry the same way or names, by an absolute
  path without predicates, the single key of another unit list (then only the
  entries it names are needed); no instance-identifier;
- on the list itself: no ``unique`` and no ``min-elements``/``max-elements``
  (they span sibling entries);
- from outside: no ``must``/``when`` anywhere else mentions the list, and no
  leafref elsewhere names a node of the entry other than its key (a leafref to
  the key only breaks when an entry is removed: `UnitReach.referenced`).

A list that fails any test has no `UnitReach`: its edits are validated whole.
The tests are textual on XPath and conservative: a false alarm costs a full
validation, never a missed error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import libyang
from libyang.util import c2str

SchemaPath = tuple[tuple[str, str], ...]
"""(namespace, local name) steps from the top (the datastore's schema paths)."""

_ABSOLUTE = re.compile(r"(?:^|[\s(\[,=<>!|+*])/")
_STEP = re.compile(r"^(?:([A-Za-z_][\w.-]*):)?([A-Za-z_][\w.-]*)$")


@dataclass(frozen=True)
class LeafrefTarget:
    """A leafref inside a unit that names the key of another unit list."""

    source: SchemaPath
    """The leaf (or leaf-list), as steps below the unit entry."""
    target_list: SchemaPath
    """The unit list whose key it names (absolute)."""


@dataclass
class UnitReach:
    """A unit list whose entries can be validated without their siblings (see the module docstring)."""

    targets: tuple[LeafrefTarget, ...] = ()
    """Leafrefs to other units: the entries they name must be in the document."""
    referenced: bool = False
    """Some leafref outside names this list's key: removing an entry needs the whole datastore."""


@dataclass
class _Constraint:
    """One XPath or leafref path of a config node, with where it sits."""

    node: SchemaPath
    text: str
    leafref: bool
    module: libyang.Module | None = None


@dataclass
class _Walk:
    constraints: list[_Constraint] = field(default_factory=list)
    unit_lists: dict[SchemaPath, libyang.SList] = field(default_factory=dict)
    inst: set[SchemaPath] = field(default_factory=set)  # instance-identifier leaves


def analyse(ctx: libyang.Context, modules: list[libyang.Module]) -> dict[SchemaPath, UnitReach]:
    """The unit lists of ``modules`` whose entries can be judged alone, with what else they need."""
    walk = _Walk()
    for mod in modules:
        for node in mod.children():
            _visit(node, (), walk, under_top_container=False)
    out: dict[SchemaPath, UnitReach] = {}
    for path, node in walk.unit_lists.items():
        reach = _reach(ctx, path, node, walk)
        if reach is not None:
            out[path] = reach
    return out


def _namespace(node: libyang.SNode) -> str:
    return c2str(node.module().cdata.ns) or ""


def _visit(node: libyang.SNode, parent: SchemaPath, walk: _Walk, under_top_container: bool) -> None:
    if node.config_false():
        return
    path = (*parent, (_namespace(node), node.name()))
    if isinstance(node, libyang.SList) and (not parent or under_top_container):
        walk.unit_lists[path] = node
    whens: list[str] = list(node.when_conditions())  # type: ignore[no-untyped-call]
    for text in (*node.must_conditions(), *whens):
        walk.constraints.append(_Constraint(path, text, leafref=False))
    if isinstance(node, libyang.SLeaf | libyang.SLeafList):
        for typ in _types(node.type()):
            if typ.base() == libyang.Type.LEAFREF:
                walk.constraints.append(_Constraint(path, typ.leafref_path() or "", leafref=True, module=node.module()))
            elif typ.base() == libyang.Type.INST:
                walk.inst.add(path)
    if isinstance(node, libyang.SContainer | libyang.SList):
        top_container = isinstance(node, libyang.SContainer) and not parent
        for child in node.children():
            _visit(child, path, walk, top_container)


def _types(typ: libyang.Type) -> Iterator[libyang.Type]:
    if typ.base() == libyang.Type.UNION:
        for member in typ.union_types():
            yield from _types(member)
    else:
        yield typ


def _reach(ctx: libyang.Context, unit: SchemaPath, node: libyang.SList, walk: _Walk) -> UnitReach | None:
    cdata = node.cdata_list
    if int(cdata.min) > 0 or int(cdata.max) != 0xFFFFFFFF or cdata.uniques:
        return None
    keys = [(_namespace(k), k.name()) for k in node.keys()]  # noqa: SIM118 (SList.keys())
    reach = UnitReach()
    targets: list[LeafrefTarget] = []
    for item in walk.constraints:
        inside = item.node[: len(unit)] == unit
        depth = len(item.node) - len(unit)
        if inside and not item.leafref:
            if _escapes(item.text, depth):
                return None
        elif inside:
            if not _escapes(item.text, depth):
                continue  # a relative leafref that stays in the entry
            target = _absolute_target(ctx, item)
            if target is None:
                return None
            target_list, leaf = target[:-1], target[-1]
            other = walk.unit_lists.get(target_list)
            if other is None or [(_namespace(k), k.name()) for k in other.keys()] != [leaf]:  # noqa: SIM118
                return None
            if target_list == unit:
                reach.referenced = True  # entries name each other: removing one needs the whole datastore
            targets.append(LeafrefTarget(item.node[len(unit) :], target_list))
        elif item.leafref:
            target = _absolute_target(ctx, item)
            if target is None:
                if _mentions(item.text, unit):
                    return None
                continue
            if target[: len(unit)] == unit:
                if len(keys) == 1 and target == (*unit, keys[0]):
                    reach.referenced = True
                else:
                    return None
        elif _mentions(item.text, unit):
            return None
    if any(p[: len(unit)] == unit for p in walk.inst):
        return None
    reach.targets = tuple(targets)
    return reach


def _escapes(text: str, depth: int) -> bool:
    """An XPath (or leafref path) of a node ``depth`` steps below the entry may leave the entry."""
    return bool(_ABSOLUTE.search(text)) or "deref(" in text or text.count("..") > depth


def _mentions(text: str, unit: SchemaPath) -> bool:
    """Whether an XPath outside the unit may address it (its list name appears as a step)."""
    name = re.escape(unit[-1][1])
    return re.search(rf"(?:^|[/:\s(\[]){name}(?:$|[/\[\s)=<>!,|])", text) is not None


def _absolute_target(ctx: libyang.Context, item: _Constraint) -> SchemaPath | None:
    """The schema path an absolute, predicate-free leafref path names; None otherwise."""
    text = item.text.strip()
    if not text.startswith("/") or "[" in text or item.module is None:
        return None
    prefixes = {item.module.prefix(): item.module.name()}
    prefixes.update({imp.prefix() or "": imp.name() for imp in item.module.imports()})
    steps: list[tuple[str, str]] = []
    module_name = item.module.name()
    for raw in text[1:].split("/"):
        match = _STEP.match(raw.strip())
        if match is None:
            return None
        prefix, name = match.groups()
        if prefix is not None:
            if prefix not in prefixes:
                return None
            module_name = prefixes[prefix]
        try:
            module = ctx.get_module(module_name)
        except libyang.LibyangError:
            return None
        steps.append((c2str(module.cdata.ns) or "", name))
    return tuple(steps)
