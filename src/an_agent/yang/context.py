"""The libyang context of an agent: the shipped YANG modules, loaded once.

`YangContext` is the only place that calls libyang (with `lyerrors`); it
validates every document that enters or leaves over NETCONF and converts
between RFC 7951 JSON and XML. Every failure of a document is raised as an
`RpcError` ready to become an ``<rpc-error>``; a failure to load the modules
is a `YangError`.

Thread-safety: one lock per context guards every libyang call, because a
libyang context's error list is shared by the calls made on it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import libyang
import libyang.log
from _libyang import ffi, lib  # type: ignore[import-not-found]
from libyang.util import c2str, str2c
from lxml import etree

from an_agent.errors import RpcError, YangError
from an_agent.model.ns import NETCONF_BASE_NS
from an_agent.yang.info import ModuleInfo, SchemaNodeInfo
from an_agent.yang.lyerrors import LyErrorItem, to_rpc_error
from an_agent.yang.reach import UnitReach, analyse
from an_agent.yang.schema_index import SchemaIndex

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

MODULES_DIR = Path(__file__).resolve().parent / "modules"
"""The shipped modules, ``<name>@<revision>.yang`` (package data)."""
NETWORK_MODULES_DIR = MODULES_DIR / "network"
"""The modules a lab's element managers serve besides the protocol ones (ietf-alarms, ietf-network,
ietf-network-topology, an-agent-network); agents do not load them."""
PROTOCOL_MODULES = (
    "ietf-netconf",
    "ietf-netconf-acm",
    "ietf-netconf-monitoring",
    "notifications",
    "nc-notifications",
    "ietf-yang-library",
    "ietf-datastores",
)
"""The shipped modules every NETCONF server of ours needs whatever it serves (operations, NACM, RFC 6022,
RFC 5277, the YANG library of RFC 8525)."""


DEFAULT_FEATURES: Mapping[str, Sequence[str]] = {
    "ietf-netconf": ("writable-running", "candidate", "confirmed-commit", "rollback-on-error", "validate", "xpath"),
    "ietf-netconf-nmda": ("with-defaults",),
}
"""Features enabled when loading the shipped modules: what the an-agent server supports
(``<edit-config>`` on running and candidate, confirmed commit, rollback-on-error,
``<validate>``, XPath filters; ``with-defaults`` in ``<get-data>``, but not ``origin``)."""

IMPORT_ONLY = frozenset({"ietf-origin"})
"""Shipped modules that are only imported, never implemented: ``ietf-origin`` gives
``ietf-netconf-nmda`` its types; this server reports no origin metadata."""

WithDefaults = Literal["report-all", "report-all-tagged", "trim", "explicit"]
"""RFC 6243 retrieval modes."""
_WD_PRINT: dict[str, int] = {
    "report-all": lib.LYD_PRINT_WD_ALL,
    "report-all-tagged": lib.LYD_PRINT_WD_ALL_TAG,
    "trim": lib.LYD_PRINT_WD_TRIM,
    "explicit": lib.LYD_PRINT_WD_EXPLICIT,
}

_LY_WD_DECL = 'xmlns:ncwd="urn:ietf:params:xml:ns:yang:ietf-netconf-with-defaults"'
_WD_DECL = 'xmlns:wd="urn:ietf:params:xml:ns:netconf:default:1.0"'

DocumentKind = Literal["data", "config", "rpc", "reply", "notification"]
"""What a document is: a ``<get>`` reply (``data``), the running datastore
(``config``), an RPC input, an RPC output (``reply``), or a notification."""

_OP_TYPES: dict[DocumentKind, int] = {
    "rpc": lib.LYD_TYPE_RPC_YANG,
    "reply": lib.LYD_TYPE_REPLY_YANG,
    "notification": lib.LYD_TYPE_NOTIF_YANG,
}
# A <data> or <config> wrapper (NETCONF base namespace) around a datastore.
_WRAPPER = re.compile(r"^\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--.*?-->\s*)*<(?:[\w.-]+:)?(?:data|config)[\s>/]", re.S)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>")
_PREDICATES = re.compile(r"\[(?:[^\]'\"]|'[^']*'|\"[^\"]*\")*\]")

_logging_configured = False
_logging_lock = threading.Lock()


def _configure_libyang_logging() -> None:
    """Make libyang record error locations (data paths); do it once per process.

    libyang 2.1 fills an error's location only when logging is on
    (LY_LOLOG). libyang-python then sends every message to the Python logger
    "libyang" as well; every such error reaches our callers as an exception,
    so that logger does not propagate (it would log each rejected request
    twice, at ERROR level).
    """
    global _logging_configured
    with _logging_lock:
        if not _logging_configured:
            libyang.log.configure_logging(True, logging.ERROR)
            logging.getLogger("libyang").propagate = False
            _logging_configured = True


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
        _configure_libyang_logging()
        self._dir = Path(modules_dir)
        self._lock = threading.RLock()
        self._ctx = _new_ly_context(self._dir)
        for extra in extra_dirs:
            lib.ly_ctx_set_searchdir(self._ctx.cdata, str2c(str(extra)))
        shipped_names = {_module_name(p) for p in self._dir.glob("*.yang")} - IMPORT_ONLY
        names = sorted(n for n in shipped_names if only is None or n in only)
        names += sorted({_module_name(p) for d in extra_dirs for p in Path(d).glob("*.yang")})
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
        self._check_data(_unwrap(xml), "xml", "config", partial=False)

    def validate_data(self, xml: str, partial: bool = False) -> None:
        """Validate a ``<get>`` reply (config and state data), in the form `validate_config` takes.

        With ``partial`` (a filtered reply), only what is present is checked:
        element names, values and patterns, but not mandatory nodes, list
        cardinality or leafref targets, which a filter may have left out.
        Either way a module none of whose data is in the document is not
        checked for mandatory nodes (``/nacm`` of ietf-netconf-acm, which
        NACM hides from all but administrators, has mandatory counters).
        """
        self._check_data(_unwrap(xml), "xml", "data", partial=partial)

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
        body = _XML_DECL.sub("", xml)
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
            if mode != "trim":
                present = set()
                node = tree[0]
                while node != ffi.NULL:
                    present.add(int(ffi.cast("uintptr_t", node)))
                    node = node.next
                implicit = lib.LYD_IMPLICIT_NO_STATE if config_only else 0
                if lib.lyd_new_implicit_all(tree, self._ctx.cdata, implicit, ffi.NULL) != lib.LY_SUCCESS:
                    self._free(tree[0])
                    raise YangError(f"libyang cannot add default nodes: {self._take_errors()}")
                tree[0] = _keep_top(tree[0], present)
        try:
            printed = self._print(tree[0], "xml", _WD_PRINT[mode])
        finally:
            self._free(tree[0])
        # libyang 2.1 puts the attribute in the module's namespace; RFC 6243 section 6 names its own.
        return printed.replace(_LY_WD_DECL, _WD_DECL).replace(" ncwd:default=", " wd:default=")

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
            xml = _unwrap(xml)
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
            return _element_in_namespace(text, namespace) if fmt == "xml" else None

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
            ret = lib.lyd_parse_data_mem(self._ctx.cdata, buf, _format(fmt), parse_opts, valid_opts, tree)
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
                ret = lib.lyd_parse_op(self._ctx.cdata, ffi.NULL, in_[0], _format(fmt), data_type, tree, op)
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
            tree = _strip_implicit(tree)
        try:
            return self._print(tree, out_fmt)
        finally:
            self._free(tree)

    def _print(self, tree: Any, fmt: str, extra: int = 0) -> str:
        if tree == ffi.NULL:
            return "{}" if fmt == "json" else ""
        out = ffi.new("char **")
        with self._lock:
            ret = lib.lyd_print_mem(out, tree, _format(fmt), lib.LYD_PRINT_WITHSIBLINGS | lib.LYD_PRINT_SHRINK | extra)
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
        """Data path a missing mandatory node would have, e.g. ``/irtf-agent:tasks/task[task-id='t1']/content``.

        libyang 2.1 reports the schema path of a missing node, or (in RPCs
        and notifications) the data path of an ancestor. Find the nearest
        list (or presence container) above the node, and the first instance
        of it lacking the node, in the document re-parsed without validation.
        """
        known = self._schema.op_by_path if kind in _OP_TYPES else self._schema.by_path
        schema_path = item.schema_path
        if schema_path is None and item.data_path:
            base = _PREDICATES.sub("", item.data_path)
            if base.endswith(f"/{name}"):
                return item.data_path
            below = [p for p, i in known.items() if p.startswith(f"{base}/") and p.endswith(f"/{name}") and i.mandatory]
            schema_path = min(below, key=len) if below else None
        if schema_path is None:
            return None
        steps = schema_path.strip("/").split("/")
        anchor = 0
        for i in range(len(steps) - 1, 0, -1):
            info = known.get("/" + "/".join(steps[:i]))
            if info is not None and (info.kind == "list" or info.presence):
                anchor = i
                break
        if anchor == 0:
            return schema_path  # no list above it: the schema path is its data path
        parent, rest = "/" + "/".join(steps[:anchor]), "/".join(steps[anchor:])
        try:
            if kind in _OP_TYPES:
                tree = self._parse_op(text, fmt, kind, validate=False)
            else:
                tree = self._parse_data(text, fmt, kind, partial=True)
        except (RpcError, YangError):
            return None
        try:
            for found in self._find(tree, f"{parent}[not({rest})]"):
                return f"{found}/{rest}"
        finally:
            self._free(tree)
        return None

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


def _module_name(path: Path) -> str:
    return path.name.split("@", 1)[0].removesuffix(".yang")


def _new_ly_context(search_dir: Path | None) -> libyang.Context:
    # Created through the C API: libyang.Context() would also search the
    # directories named by $YANGPATH / $YANG_MODPATH.
    raw = ffi.new("struct ly_ctx **")
    options = lib.LY_CTX_DISABLE_SEARCHDIR_CWD | lib.LY_CTX_SET_PRIV_PARSED | lib.LY_CTX_NO_YANGLIBRARY
    where = str2c(str(search_dir)) if search_dir is not None else ffi.NULL
    if lib.ly_ctx_new(where, options, raw) != lib.LY_SUCCESS:
        raise YangError(f"cannot create a libyang context for {search_dir}")
    ctx = libyang.Context(cdata=raw[0])
    ctx.cdata = ffi.gc(raw[0], lib.ly_ctx_destroy)
    return ctx


def builtin_modules() -> dict[str, str]:
    """The IETF modules built into libyang (ietf-yang-types, ietf-inet-types, ...), ``file name -> text``.

    Every libyang context resolves imports of these from its own copies; the
    YANG tools (pyang) get the same texts from here.
    """
    ctx = _new_ly_context(None)
    texts: dict[str, str] = {}
    for mod in ctx:
        name = mod.name()
        if name.startswith("ietf-"):
            revisions = [r.date() for r in mod.revisions()]
            printed = mod.print_mem("yang")
            text = printed if isinstance(printed, str) else printed.decode("utf-8")
            texts[f"{name}@{revisions[0]}.yang" if revisions else f"{name}.yang"] = text
    return texts


def _strip_implicit(first: Any) -> Any:
    """Free the default nodes validation added (not in the input); returns the new first sibling.

    libyang prints state-data defaults (e.g. /netconf-state/statistics
    counters) even in "explicit" with-defaults mode; a conversion must give
    back what it was given.
    """
    head = ffi.NULL
    node = first
    while node != ffi.NULL:
        following = node.next
        if node.flags & lib.LYD_DEFAULT:
            lib.lyd_free_tree(node)
        else:
            if head == ffi.NULL:
                head = node
            child = lib.lyd_child(node)
            if child != ffi.NULL:
                _strip_implicit(child)
        node = following
    return head


def _keep_top(first: Any, present: set[int]) -> Any:
    """Free the top-level siblings not in ``present`` (added by lyd_new_implicit_all); the new first sibling."""
    head = ffi.NULL
    node = first
    while node != ffi.NULL:
        following = node.next
        if int(ffi.cast("uintptr_t", node)) in present:
            if head == ffi.NULL:
                head = node
        else:
            lib.lyd_free_tree(node)
        node = following
    return head


def _format(name: str) -> int:
    return int({"xml": lib.LYD_XML, "json": lib.LYD_JSON}[name])


def _unwrap(xml: str) -> str:
    """Strip one NETCONF ``<data>``/``<config>`` wrapper, if there is one."""
    if not _WRAPPER.match(xml):
        return xml
    try:
        root = etree.fromstring(_XML_DECL.sub("", xml).encode("utf-8"))
    except etree.XMLSyntaxError:
        return xml  # libyang will report the syntax error with its location
    if etree.QName(root).namespace != NETCONF_BASE_NS:
        return xml
    return "".join(etree.tostring(child, encoding="unicode", with_tail=False) for child in root)


def _element_in_namespace(xml: str, namespace: str) -> str | None:
    """Local name of the first element in ``namespace``, for an unknown-namespace error."""
    try:
        root = etree.fromstring(f"<r>{_XML_DECL.sub('', xml)}</r>".encode())
    except etree.XMLSyntaxError:
        return None
    for element in root.iter():
        if isinstance(element.tag, str) and etree.QName(element).namespace == namespace:
            return str(etree.QName(element).localname)
    return None
