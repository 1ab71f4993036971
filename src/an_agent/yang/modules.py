"""Which YANG modules an agent ships and loads, and how a libyang context for them is made.

The module set (`MODULES_DIR`, `PROTOCOL_MODULES`, `DEFAULT_FEATURES`), a
libyang context that searches only the directory it is given (never the
current directory or ``$YANGPATH``), the one-time libyang logging set-up, and
the IETF modules built into libyang. Apart from `an_agent.yang.context`,
which validates and converts documents in such a context, because the YANG
tools (pyang, yanglint) and the lab's element managers need the module set
without a context.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import libyang
import libyang.log
from _libyang import ffi, lib  # type: ignore[import-not-found]
from libyang.util import str2c

from an_agent.errors import YangError

__all__ = [
    "DEFAULT_FEATURES",
    "IMPORT_ONLY",
    "MODULES_DIR",
    "NETWORK_MODULES_DIR",
    "PROTOCOL_MODULES",
    "builtin_modules",
    "configure_libyang_logging",
    "module_name",
    "new_ly_context",
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

_logging_configured = False
_logging_lock = threading.Lock()


def configure_libyang_logging() -> None:
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


def module_name(path: Path) -> str:
    """The module name of a ``<name>[@<revision>].yang`` file."""
    return path.name.split("@", 1)[0].removesuffix(".yang")


def new_ly_context(search_dir: Path | None) -> libyang.Context:
    """A libyang context that searches ``search_dir`` only (None: no directory), without ietf-yang-library data."""
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
    ctx = new_ly_context(None)
    texts: dict[str, str] = {}
    for mod in ctx:
        name = mod.name()
        if name.startswith("ietf-"):
            revisions = [r.date() for r in mod.revisions()]
            printed = mod.print_mem("yang")
            text = printed if isinstance(printed, str) else printed.decode("utf-8")
            texts[f"{name}@{revisions[0]}.yang" if revisions else f"{name}.yang"] = text
    return texts
