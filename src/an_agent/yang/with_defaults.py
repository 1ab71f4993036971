"""RFC 6243 with-defaults on libyang trees: the modes, their print options, defaults added only where asked.

`an_agent.yang.context.YangContext.with_defaults` parses a reply and calls
`add_defaults` (under its lock) and prints with `PRINT_OPTIONS`; libyang adds
defaults to the whole datastore and names the default attribute in its own
module's namespace, and the functions here keep the additions inside the
subtrees the reply holds and give the attribute RFC 6243's namespace.
"""

from __future__ import annotations

from typing import Any, Literal

from _libyang import ffi, lib  # type: ignore[import-not-found]

__all__ = ["PRINT_OPTIONS", "WithDefaults", "add_defaults", "rfc6243_attributes"]

WithDefaults = Literal["report-all", "report-all-tagged", "trim", "explicit"]
"""RFC 6243 retrieval modes."""
PRINT_OPTIONS: dict[str, int] = {
    "report-all": lib.LYD_PRINT_WD_ALL,
    "report-all-tagged": lib.LYD_PRINT_WD_ALL_TAG,
    "trim": lib.LYD_PRINT_WD_TRIM,
    "explicit": lib.LYD_PRINT_WD_EXPLICIT,
}
"""libyang's print option for each mode."""

_LY_WD_DECL = 'xmlns:ncwd="urn:ietf:params:xml:ns:yang:ietf-netconf-with-defaults"'
_WD_DECL = 'xmlns:wd="urn:ietf:params:xml:ns:netconf:default:1.0"'


def add_defaults(ctx: Any, tree: Any, config_only: bool) -> bool:
    """Add the default nodes inside the top-level subtrees of ``tree[0]`` (a ``struct lyd_node **``), no others.

    State defaults too unless ``config_only``. False when libyang failed (its
    errors are left in the context ``ctx``, a ``struct ly_ctx *``); the caller
    holds the context's lock and frees the tree.
    """
    present = set()
    node = tree[0]
    while node != ffi.NULL:
        present.add(int(ffi.cast("uintptr_t", node)))
        node = node.next
    implicit = lib.LYD_IMPLICIT_NO_STATE if config_only else 0
    if lib.lyd_new_implicit_all(tree, ctx, implicit, ffi.NULL) != lib.LY_SUCCESS:
        return False
    tree[0] = keep_top(tree[0], present)
    return True


def rfc6243_attributes(printed: str) -> str:
    """``printed`` with the ``default`` attribute in RFC 6243 section 6's namespace.

    libyang 2.1 puts the attribute in the ietf-netconf-with-defaults module's namespace.
    """
    return printed.replace(_LY_WD_DECL, _WD_DECL).replace(" ncwd:default=", " wd:default=")


def keep_top(first: Any, present: set[int]) -> Any:
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
