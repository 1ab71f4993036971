"""What the loaded YANG modules define, indexed once when an agent's libyang context is built.

`SchemaIndex` walks the shipped modules (and the modules they import) and keeps what request
handling looks up for every element: module descriptions for the hello and ``<get-schema>``,
data nodes by (namespace, name) path and by JSON-style schema path, RPC/notification content
nodes by path (for error locations), and the error-app-tags of pattern statements. Built once,
read-only afterwards: lookups are dictionary reads, safe from any thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libyang
from _libyang import ffi, lib  # type: ignore[import-not-found]
from libyang.schema import SNotif
from libyang.util import c2str

from an_agent.yang.info import ModuleInfo, NodeKind, SchemaNodeInfo

_KINDS: dict[int, NodeKind] = {
    lib.LYS_CONTAINER: "container",
    lib.LYS_LIST: "list",
    lib.LYS_LEAF: "leaf",
    lib.LYS_LEAFLIST: "leaf-list",
    lib.LYS_ANYDATA: "anydata",
    lib.LYS_ANYXML: "anyxml",
}
_DATA_TYPES = tuple(_KINDS)


class SchemaIndex:
    """The index of the modules ``shipped`` in ``ctx`` (see the module docstring)."""

    def __init__(self, ctx: libyang.Context, shipped: list[libyang.Module]) -> None:
        self._ctx = ctx
        self.modules: tuple[ModuleInfo, ...] = self._describe(shipped)
        """Shipped modules first (implemented), then their imports (``implemented=False``)."""
        self.nodes: dict[tuple[tuple[str, str], ...], SchemaNodeInfo] = {}
        """Data nodes by (namespace, local-name) steps from the top; choices and cases transparent."""
        self.by_path: dict[str, SchemaNodeInfo] = {}
        """Data nodes by JSON-style schema path, e.g. ``/irtf-agent:tasks/task``."""
        self.op_by_path: dict[str, SchemaNodeInfo] = {}
        """RPC input/output and notification nodes, by schema path without input/output steps
        (as libyang writes them in error locations)."""
        self.pattern_app_tags: set[str] = set()
        """error-app-tags of every pattern statement (leaves, leaf-lists, typedefs)."""
        self.rpcs: set[str] = set()
        """The local names of the RPCs the shipped modules define."""
        for mod in shipped:
            self._index(mod)
        for info in self.modules:
            self._collect_typedef_app_tags(ctx.get_module(info.name))

    def _describe(self, shipped: list[libyang.Module]) -> tuple[ModuleInfo, ...]:
        infos: list[ModuleInfo] = []
        seen: set[str] = set()
        queue = [(m, True) for m in shipped]
        while queue:
            mod, implemented = queue.pop(0)
            if mod.name() in seen:
                continue
            seen.add(mod.name())
            infos.append(self._module_info(mod, implemented))
            for imp in mod.imports():
                queue.append((libyang.Module(self._ctx, imp.cdata.module), False))
        return tuple(infos)

    def _module_info(self, mod: libyang.Module, implemented: bool) -> ModuleInfo:
        path = mod.filepath()
        if path:
            text = Path(path).read_text(encoding="utf-8")
        else:
            printed = mod.print_mem("yang")
            text = printed if isinstance(printed, str) else printed.decode("utf-8")
        revisions = [r.date() for r in mod.revisions()]
        return ModuleInfo(
            name=mod.name(),
            revision=revisions[0] if revisions else None,
            namespace=c2str(mod.cdata.ns),
            prefix=mod.prefix(),
            features=tuple(f.name() for f in mod.features() if f.state()),
            path=path,
            text=text,
            implemented=implemented and mod.implemented(),
        )

    def _index(self, mod: libyang.Module) -> None:
        for node in mod.children(types=_DATA_TYPES):
            self._index_node(node, (), "", op=False)
        for op in mod.children(types=(lib.LYS_RPC, lib.LYS_NOTIF)):
            path = f"/{mod.name()}:{op.name()}"
            if isinstance(op, libyang.SRpc):
                self.rpcs.add(op.name())
            parts = [op.input(), op.output()] if isinstance(op, libyang.SRpc) else [op]
            for part in parts:
                if isinstance(part, libyang.SRpcInOut | SNotif):
                    for node in part.children(types=_DATA_TYPES):
                        self._index_node(node, (), path, op=True)

    def _index_node(self, node: libyang.SNode, parent: tuple[tuple[str, str], ...], parent_path: str, op: bool) -> None:
        module = node.module()
        namespace = c2str(module.cdata.ns)
        key = (*parent, (namespace, node.name()))
        same_module = parent_path and _parent_module(node) == module.name()
        step = node.name() if same_module else f"{module.name()}:{node.name()}"
        path = f"{parent_path}/{step}"
        info = _node_info(self._ctx, node, namespace, module.name())
        if op:
            self.op_by_path.setdefault(path, info)
        else:
            self.nodes[key] = info
            self.by_path[path] = info
        self._collect_leaf_app_tags(node)
        if isinstance(node, libyang.SContainer | libyang.SList):
            for child in node.children(types=_DATA_TYPES):
                self._index_node(child, key, path, op)

    def _collect_leaf_app_tags(self, node: libyang.SNode) -> None:
        if isinstance(node, libyang.SLeaf | libyang.SLeafList):
            parsed = node.cdata_leaf_parsed if isinstance(node, libyang.SLeaf) else node.cdata_leaflist_parsed
            self.pattern_app_tags.update(_pattern_app_tags(parsed.type))

    def _collect_typedef_app_tags(self, mod: libyang.Module) -> None:
        for typedef in mod.typedefs():
            self.pattern_app_tags.update(_pattern_app_tags(typedef.cdata.type))


def _parent_module(node: libyang.SNode) -> str | None:
    parent = node.cdata.parent
    return c2str(parent.module.name) if parent != ffi.NULL else None


def _node_info(ctx: libyang.Context, node: libyang.SNode, namespace: str, module: str) -> SchemaNodeInfo:
    kind = _KINDS[node.nodetype()]
    keys: tuple[str, ...] = ()
    ordered = presence = is_key = False
    default: str | None = None
    if isinstance(node, libyang.SList):
        keys = tuple(k.name() for k in node.keys())  # noqa: SIM118 (SList.keys(), not a dict)
        ordered = node.ordered()
    elif isinstance(node, libyang.SLeafList):
        ordered = node.ordered()
    elif isinstance(node, libyang.SContainer):
        presence = node.presence() is not None
    elif isinstance(node, libyang.SLeaf):
        is_key = node.is_key()
        if node.cdata_leaf.dflt:
            value = lib.lyd_value_get_canonical(ctx.cdata, node.cdata_leaf.dflt)
            default = c2str(value) if value else None
    return SchemaNodeInfo(
        kind=kind,
        name=node.name(),
        namespace=namespace,
        module=module,
        keys=keys,
        config=not node.config_false(),
        presence=presence,
        ordered_by_user=ordered,
        default=default,
        mandatory=node.mandatory(),
        is_key=is_key,
    )


def _pattern_app_tags(parsed_type: Any) -> Iterator[str]:
    """error-app-tags of the pattern statements of a parsed (lysp) type, unions included."""
    if parsed_type == ffi.NULL:
        return
    if parsed_type.patterns != ffi.NULL:
        for restr in _sized_array(parsed_type.patterns):
            if restr.eapptag:
                yield c2str(restr.eapptag)
    if parsed_type.types != ffi.NULL:
        for member in _sized_array(parsed_type.types):
            yield from _pattern_app_tags(ffi.addressof(member))


def _sized_array(cdata: Any) -> list[Any]:
    """Items of a libyang "sized array" (its count is stored just before the first item)."""
    if cdata == ffi.NULL:
        return []
    count = int(ffi.cast("uint64_t *", cdata)[-1])
    return [cdata[i] for i in range(count)]
