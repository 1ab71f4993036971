"""The libyang context of an agent: the shipped YANG modules, loaded once.

`YangContext` is the rest of the agent's only way to libyang (with `lyerrors`); it
validates every document that enters or leaves over NETCONF and converts
between RFC 7951 JSON and XML. Every failure of a document is raised as an
`RpcError` ready to become an ``<rpc-error>``; a failure to load the modules
is a `YangError`.

Thread-safety: one lock per context guards every libyang call, because a
libyang context's error list is shared by the calls made on it.

Beside it, each called only from here or for the module set: which modules
are shipped and how a context is made (`an_agent.yang.modules`, re-exported
here), plain operations on data trees and document text
(`an_agent.yang.trees`), RFC 6243 with-defaults (`an_agent.yang.with_defaults`,
`WithDefaults` re-exported here), and the data path of a missing node
(`an_agent.yang.error_paths`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import libyang
import libyang.log
from _libyang import ffi, lib  # type: ignore[import-not-found]
from libyang.util import c2str, str2c

from an_agent.errors import RpcError, YangError
from an_agent.yang.error_paths import missing_node_path
from an_agent.yang.info import ModuleInfo, SchemaNodeInfo
from an_agent.yang.lyerrors import LyErrorItem, to_rpc_error
from an_agent.yang.modules import (
    DEFAULT_FEATURES,
    IMPORT_ONLY,
    MODULES_DIR,
    NETWORK_MODULES_DIR,
    PROTOCOL_MODULES,
    builtin_modules,
    configure_libyang_logging,
    module_name,
    new_ly_context,
)
from an_agent.yang.reach import UnitReach, analyse
from an_agent.yang.schema_index import SchemaIndex
from an_agent.yang.trees import XML_DECL, element_in_namespace, ly_format, strip_implicit, unwrap
from an_agent.yang.with_defaults import PRINT_OPTIONS, WithDefaults, add_defaults, rfc6243_attributes

__all__ = [
    "DEFAULT_FEATURES",
    "MODULES_DIR",
    "NETWORK_MODULES_DIR",
    "PROTOCOL_MODULES",
    "DocumentKind",
    "WithDefaults",
    "YangContext",
    "builtin_modules",
]

DocumentKind = Literal["data", "config", "rpc", "reply", "notification"]
"""What a document is: a ``<get>`` reply (``data``), the running datastore
(``config``), an RPC input, an RPC output (``reply``), or a notification."""

_OP_TYPES: dict[DocumentKind, int] = {
    "rpc": lib.LYD_TYPE_RPC_YANG,
    "reply": lib.LYD_TYPE_REPLY_YANG,
    "notification": lib.LYD_TYPE_NOTIF_YANG,
}


class YangContext:
    """One libyang context holding every module in ``modules_dir``.

    ``YangContext()`` loads the shipped modules with `DEFAULT_FEATURES`;
    `default` returns one shared instance for the process. The search path is ``modules_dir`` only (no
    current directory, no environment variables); libyang's built-in
    ``ietf-yang-types`` and ``ietf-inet-types`` serve the imports.

    Documents are XML strings in the NETCONF encoding (or RFC 7951 JSON for
    `json_to_xml`). The ``validate_*`` methods return None or raise
    `RpcError` with error-type ``application`` (``protocol`` for an unknown
    namespace, ``rpc`` for malformed XML), the RFC 6241 error-tag, the
    libyang data path of the offending node as ``path``, and a message
    naming the node and the problem.
    """

    _default: ClassVar[YangContext | None] = None
    _default_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        modules_dir: Path | str = MODULES_DIR,
        features: Mapping[str, Sequence[str]] = DEFAULT_FEATURES,
        *,
        extra_dirs: Sequence[Path] = (),
        only: Sequence[str] | None = None,
    ) -> None:
        """``extra_dirs``: more directories whose modules are loaded (and searched for imports);
        ``only``: load just these modules of ``modules_dir`` (all of ``extra_dirs``'s are loaded)."""
        configure_libyang_logging()
        self._dir = Path(modules_dir)
        self._lock = threading.RLock()
        self._ctx = new_ly_context(self._dir)
        for extra in extra_dirs:
            lib.ly_ctx_set_searchdir(self._ctx.cdata, str2c(str(extra)))
        shipped_names = {module_name(p) for p in self._dir.glob("*.yang")} - IMPORT_ONLY
        names = sorted(n for n in shipped_names if only is None or n in only)
        names += sorted({module_name(p) for d in extra_dirs for p in Path(d).glob("*.yang")})
        if not names:
            raise YangError(f"no YANG modules (*.yang) in {self._dir}")
        shipped = [self._load(name, features.get(name, ())) for name in names]
        self._schema = SchemaIndex(self._ctx, shipped)
        self._reach = analyse(self._ctx, shipped)

    @classmethod
    def default(cls) -> YangContext:
        """The process-wide context with the shipped modules, created on first use."""
        with cls._default_lock:
            if cls._default is None:
                cls._default = cls()
            return cls._default

    # ------------------------------------------------------------------ schema

    def modules(self) -> list[ModuleInfo]:
        """Every module a client may need, shipped ones first, then their imports.

        Shipped modules are implemented; imported-only modules (built into
        libyang, e.g. ietf-yang-types) have ``implemented=False``. Advertise
        all of them in the hello and serve all of them by ``<get-schema>``:
        a client needs the imports to compile the implemented modules.
        """
        return list(self._schema.modules)

    def rpc_names(self) -> frozenset[str]:
        """The local names of the RPCs the shipped modules define (a bounded set: a metrics label)."""
        return frozenset(self._schema.rpcs)

    def module(self, name: str, revision: str | None = None) -> ModuleInfo | None:
        """The module called ``name`` (and of ``revision`` when given), or None."""
        for info in self._schema.modules:
            if info.name == name and (revision is None or revision == info.revision):
                return info
        return None

    def schema_node(self, path: tuple[tuple[str, str], ...]) -> SchemaNodeInfo | None:
        """The data node at ``path`` ((namespace, local-name) steps from the top), or None.

        Choices and cases are transparent, as in instance documents. Only
        data nodes (not RPC or notification contents) are indexed. A
        dictionary lookup: safe to call for every element of a request.
        """
        return self._schema.nodes.get(tuple(path))

    def unit_reach(self, path: tuple[tuple[str, str], ...]) -> UnitReach | None:
        """How far the constraints of an entry of the unit list at ``path`` reach (`an_agent.yang.reach`).

        None: the list is not a unit list, or its entries cannot be judged
        without the whole datastore.
        """
        return self._reach.get(tuple(path))

    def schema_node_by_path(self, path: str) -> SchemaNodeInfo | None:
        """Like `schema_node`, by a JSON-style schema path, e.g. ``/irtf-agent:tasks/task``.

        Steps carry the module name only where the module changes, as in
        libyang's schema paths and RFC 7951.
        """
        return self._schema.by_path.get(path)

    # -------------------------------------------------------------- validation

    def validate_config(self, xml: str) -> None:
        """Validate a whole running datastore: strict, config only, every constraint.

        ``xml`` holds the top-level elements of the datastore, in sequence;
        it may also be wrapped in one ``<data>`` or ``<config>`` element of
        the NETCONF base namespace. Unknown elements, state (config false)
        nodes, bad values, missing mandatory nodes and dangling leafrefs
        are errors. An empty datastore is valid.
        """
        self._check_data(unwrap(xml), "xml", "config", partial=False)

    def validate_data(self, xml: str, partial: bool = False) -> None:
        """Validate a ``<get>`` reply (config and state data), in the form `validate_config` takes.

        With ``partial`` (a filtered reply), only what is present is checked:
        element names, values and patterns, but not mandatory nodes, list
        cardinality or leafref targets, which a filter may have left out.
        Either way a module none of whose data is in the document is not
        checked for mandatory nodes (``/nacm`` of ietf-netconf-acm, which
        NACM hides from all but administrators, has mandatory counters).
        """
        self._check_data(unwrap(xml), "xml", "data", partial=partial)

    def validate_rpc(self, xml: str) -> None:
        """Validate an RPC's input: the operation element, e.g. ``<task-negotiate xmlns=...>``."""
        self._free(self._parse_op(xml, "xml", "rpc"))

    def validate_rpc_output(self, xml: str, rpc_name_qualified: str) -> None:
        """Validate the output of RPC ``rpc_name_qualified`` (``module:name``, e.g. ``irtf-agent:task-negotiate``).

        ``xml`` is the content of the ``<rpc-reply>``: the output nodes in
        sequence, each in its module's namespace.
        """
        module_name, _, rpc = rpc_name_qualified.partition(":")
        info = self.module(module_name)
        if info is None or not rpc:
            raise YangError(f"no RPC {rpc_name_qualified!r}: expected 'module:rpc-name' of a loaded module")
        body = XML_DECL.sub("", xml)
        self._free(self._parse_op(f'<{rpc} xmlns="{info.namespace}">{body}</{rpc}>', "xml", "reply"))

    def validate_notification(self, xml: str) -> None:
        """Validate a notification: its element, e.g. ``<condition-notifications xmlns=...>``.

        Without the RFC 5277 ``<notification>``/``<eventTime>`` envelope.
        """
        self._free(self._parse_op(xml, "xml", "notification"))

    # ---------------------------------------------------------- with-defaults

    def with_defaults(self, xml: str, mode: WithDefaults, config_only: bool = False) -> str:
        """The top-level data elements in ``xml`` (in sequence) as RFC 6243 ``mode`` reports them.

        ``explicit`` (the agent's basic mode) returns ``xml`` as it is: the
        datastore keeps only what clients set. ``report-all`` adds every
        default node inside the subtrees present (state defaults too, unless
        ``config_only``); ``report-all-tagged`` adds them with the
        ``wd:default="true"`` attribute (RFC 6243 section 6); ``trim`` leaves
        out leaves whose value equals their default. Top-level subtrees that
        ``xml`` does not hold are never added (a filter or a read view left
        them out). Elements no module defines pass through unchanged.
        """
        if mode == "explicit" or not xml.strip():
            return xml
        opts = lib.LYD_PARSE_ONLY | lib.LYD_PARSE_OPAQ
        tree = ffi.new("struct lyd_node **")
        with self._lock:
            if lib.lyd_parse_data_mem(self._ctx.cdata, str2c(xml), lib.LYD_XML, opts, 0, tree) != lib.LY_SUCCESS:
                self._free(tree[0])
                raise self._fail(xml, "xml", "data")
            if mode != "trim" and not add_defaults(self._ctx.cdata, tree, config_only):
                self._free(tree[0])
                raise YangError(f"libyang cannot add default nodes: {self._take_errors()}")
        try:
            printed = self._print(tree[0], "xml", PRINT_OPTIONS[mode])
        finally:
            self._free(tree[0])
        return rfc6243_attributes(printed)

    # -------------------------------------------------------------- conversion

    def json_to_xml(self, data: dict[str, Any], kind: DocumentKind = "data", partial: bool = False) -> str:
        """Convert RFC 7951 JSON (module-qualified top-level names) to NETCONF XML, validating it.

        ``kind`` and ``partial`` have the meaning of the ``validate_*``
        methods; ``partial`` lets a fragment (e.g. one new task whose
        leafrefs point at data already stored) through. For an RPC input,
        reply or notification, ``data`` is ``{"module:name": {...}}`` and the
        result is the operation element (for a reply: with its output nodes
        as children).
        """
        text = json.dumps(data)
        return self._convert(text, "json", "xml", kind, partial)

    def xml_to_json(self, xml: str, kind: DocumentKind = "data", partial: bool = False) -> dict[str, Any]:
        """Convert NETCONF XML to an RFC 7951 JSON dict, validating it; the inverse of `json_to_xml`."""
        if kind in ("data", "config"):
            xml = unwrap(xml)
        out = self._convert(xml, "xml", "json", kind, partial)
        result: dict[str, Any] = json.loads(out) if out.strip() else {}
        return result

    # --------------------------------------------------------------- internals

    def _load(self, name: str, features: Sequence[str]) -> libyang.Module:
        keep = [str2c(f) for f in features]  # must outlive the call
        array = ffi.new("char *[]", [*keep, ffi.NULL])
        mod = lib.ly_ctx_load_module(self._ctx.cdata, str2c(name), ffi.NULL, array)
        if mod == ffi.NULL:
            problems = "; ".join(f"{i.where()}: {i.message}" for i in self._take_errors())
            raise YangError(f"YANG module {name} in {self._dir} does not load: {problems or 'unknown reason'}")
        return libyang.Module(self._ctx, mod)

    def _take_errors(self) -> list[LyErrorItem]:
        items: list[LyErrorItem] = []
        err = lib.ly_err_first(self._ctx.cdata)
        while err:
            item = LyErrorItem.from_raw(c2str(err.msg) or "", c2str(err.path), c2str(err.apptag), int(err.vecode))
            items.append(item)
            err = err.next
        lib.ly_err_clean(self._ctx.cdata, ffi.NULL)
        return items

    def _fail(self, text: str, fmt: str, kind: DocumentKind) -> RpcError:
        items = self._take_errors() or [LyErrorItem("libyang rejected the document without saying why")]

        def resolve(item: LyErrorItem, name: str) -> str | None:
            return self._missing_node_path(text, fmt, kind, item, name)

        def find_ns(namespace: str) -> str | None:
            return element_in_namespace(text, namespace) if fmt == "xml" else None

        return to_rpc_error(items, resolve, find_ns, frozenset(self._schema.pattern_app_tags))

    def _check_data(self, text: str, fmt: str, kind: DocumentKind, partial: bool) -> None:
        self._free(self._parse_data(text, fmt, kind, partial))

    def _parse_data(self, text: str, fmt: str, kind: DocumentKind, partial: bool) -> Any:
        parse_opts = lib.LYD_PARSE_STRICT
        valid_opts = 0
        if kind == "config":
            parse_opts |= lib.LYD_PARSE_NO_STATE
            valid_opts |= lib.LYD_VALIDATE_NO_STATE
        else:
            # Only the modules the document has data of: a reply a read view pruned of /nacm (or a
            # profile on its own) need not carry ietf-netconf-acm's mandatory state counters.
            valid_opts |= lib.LYD_VALIDATE_PRESENT
        if partial:
            parse_opts |= lib.LYD_PARSE_ONLY
        tree = ffi.new("struct lyd_node **")
        buf = str2c(text)
        with self._lock:
            ret = lib.lyd_parse_data_mem(self._ctx.cdata, buf, ly_format(fmt), parse_opts, valid_opts, tree)
            if ret != lib.LY_SUCCESS:
                self._free(tree[0])
                raise self._fail(text, fmt, kind)
        return tree[0]

    def _parse_op(self, text: str, fmt: str, kind: DocumentKind, validate: bool = True) -> Any:
        data_type = _OP_TYPES[kind]
        buf = str2c(text)
        in_ = ffi.new("struct ly_in **")
        tree = ffi.new("struct lyd_node **")
        op = ffi.new("struct lyd_node **")
        with self._lock:
            if lib.ly_in_new_memory(buf, in_) != lib.LY_SUCCESS:
                raise YangError("libyang cannot allocate an input buffer")
            try:
                ret = lib.lyd_parse_op(self._ctx.cdata, ffi.NULL, in_[0], ly_format(fmt), data_type, tree, op)
            finally:
                lib.ly_in_free(in_[0], False)
            if ret == lib.LY_SUCCESS and validate:
                # lyd_parse_op checks names and values only; mandatory nodes,
                # must and leafrefs are checked here (no operational
                # datastore: our operations do not refer to it).
                ret = lib.lyd_validate_op(tree[0], ffi.NULL, data_type, ffi.NULL)
            if ret != lib.LY_SUCCESS:
                self._free(tree[0])
                raise self._fail(text, fmt, kind)
        return tree[0]

    def _convert(self, text: str, in_fmt: str, out_fmt: str, kind: DocumentKind, partial: bool) -> str:
        if kind in _OP_TYPES:
            tree = self._parse_op(text, in_fmt, kind, validate=not partial)
        else:
            tree = self._parse_data(text, in_fmt, kind, partial)
        with self._lock:
            tree = strip_implicit(tree)
        try:
            return self._print(tree, out_fmt)
        finally:
            self._free(tree)

    def _print(self, tree: Any, fmt: str, extra: int = 0) -> str:
        if tree == ffi.NULL:
            return "{}" if fmt == "json" else ""
        out = ffi.new("char **")
        with self._lock:
            ret = lib.lyd_print_mem(
                out, tree, ly_format(fmt), lib.LYD_PRINT_WITHSIBLINGS | lib.LYD_PRINT_SHRINK | extra
            )
            if ret != lib.LY_SUCCESS:
                raise YangError(f"libyang cannot print data: {self._take_errors()}")
        try:
            return c2str(out[0]) or ""
        finally:
            lib.free(out[0])

    def _free(self, tree: Any) -> None:
        if tree is not None and tree != ffi.NULL:
            with self._lock:
                lib.lyd_free_all(tree)

    def _missing_node_path(self, text: str, fmt: str, kind: DocumentKind, item: LyErrorItem, name: str) -> str | None:
        """Data path a missing mandatory node would have (`an_agent.yang.error_paths`)."""
        known = self._schema.op_by_path if kind in _OP_TYPES else self._schema.by_path

        def instances(xpath: str) -> list[str]:
            try:
                if kind in _OP_TYPES:
                    tree = self._parse_op(text, fmt, kind, validate=False)
                else:
                    tree = self._parse_data(text, fmt, kind, partial=True)
            except (RpcError, YangError):
                return []
            try:
                return list(self._find(tree, xpath))
            finally:
                self._free(tree)

        return missing_node_path(known, item, name, instances)

    def _find(self, tree: Any, xpath: str) -> Iterator[str]:
        result: list[str] = []
        node_set = ffi.new("struct ly_set **")
        with self._lock:
            if tree == ffi.NULL or lib.lyd_find_xpath(tree, str2c(xpath), node_set) != lib.LY_SUCCESS:
                self._take_errors()
                return iter(result)
            try:
                for i in range(node_set[0].count):
                    raw = lib.lyd_path(node_set[0].dnodes[i], lib.LYD_PATH_STD, ffi.NULL, 0)
                    result.append(c2str(raw))
                    lib.free(raw)
            finally:
                lib.ly_set_free(node_set[0], ffi.NULL)
        return iter(result)
