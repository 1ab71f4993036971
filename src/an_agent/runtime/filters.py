"""RFC 6241 section 6 subtree filtering and ``:xpath`` filtering over lxml data trees.

Both take the top-level data elements (children of ``<data>``) and return new
top-level elements holding only what the filter selects; the input is never
modified. List keys of every selected list entry are kept, so the output is
valid instance data (RFC 6241 6.2.5 allows it; generic clients need it).

XPath is evaluated by libxml2, which cannot be interrupted once it runs, so
a hostile expression is refused before it runs:

- only XPath 1.0's own functions: any prefixed function call (EXSLT's
  ``re:test``, ``math:max``, ``date:*``, ``set:*`` ... which lxml registers) is
  ``invalid-value``; lxml's regular-expression extension is switched off too;
- a node budget: the cost of an expression is estimated as N^(1+k), N the
  number of data nodes and k the number of nested predicate levels that
  start a path over the whole tree (``//``, an absolute path, or the
  descendant/ancestor/following/preceding axes); above `XPATH_NODE_BUDGET`
  the request is ``resource-denied`` without evaluating anything;
- a time budget (`XPATH_TIME_BUDGET`, wall clock), checked between the
  evaluations of the top-level elements, for what the estimate lets through.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Sequence

from lxml import etree

from an_agent._lxml import nsmap_of
from an_agent.errors import RpcError
from an_agent.model.ns import NETCONF_BASE_NS

NC_NS = NETCONF_BASE_NS

# Returns the key leaf names of a data element when it is a list entry, else ().
KeysOf = Callable[[etree._Element], tuple[str, ...]]


def _elements(node: etree._Element) -> list[etree._Element]:
    return [child for child in node if isinstance(child.tag, str)]


def _matches(data: etree._Element, flt: etree._Element) -> bool:
    """Name match; a filter element without a namespace matches any namespace (RFC 6241 6.2.1)."""
    fq = etree.QName(flt)
    dq = etree.QName(data)
    if fq.localname != dq.localname:
        return False
    return fq.namespace is None or fq.namespace == dq.namespace


def _shallow(data: etree._Element) -> etree._Element:
    out = etree.Element(data.tag, nsmap=nsmap_of(data))
    for name, value in data.attrib.items():
        out.set(name, value)
    return out


def subtree_filter(data: Sequence[etree._Element], flt: etree._Element, keys_of: KeysOf) -> list[etree._Element]:
    """Apply the subtree filter whose top-level filter nodes are the children of ``flt``."""
    selected = _filter_level(_Wrapper(data), flt, keys_of)
    return [] if selected is None else _elements(selected)


class _Wrapper:
    """Presents a list of top-level elements as one parent node."""

    def __init__(self, children: Sequence[etree._Element]) -> None:
        self.children = list(children)


def _children_of(node: etree._Element | _Wrapper) -> list[etree._Element]:
    return node.children if isinstance(node, _Wrapper) else _elements(node)


def _filter_level(data: etree._Element | _Wrapper, flt: etree._Element, keys_of: KeysOf) -> etree._Element | None:
    """Filter the children of ``data`` with the children of ``flt``.

    Returns a shallow copy of ``data`` (or a holder element for the top level)
    with the selected children, or None when the content-match nodes fail or
    nothing below matched.
    """
    fchildren = _elements(flt)
    data_children = _children_of(data)
    content_match = [f for f in fchildren if not _elements(f) and (f.text or "").strip()]
    others = [f for f in fchildren if f not in content_match]

    for f in content_match:
        wanted = (f.text or "").strip()
        if not any(_matches(d, f) and (d.text or "").strip() == wanted for d in data_children):
            return None

    out = etree.Element("holder") if isinstance(data, _Wrapper) else _shallow(data)
    if not others and content_match:
        # Only content-match nodes at this level: the whole node is selected.
        for d in data_children:
            out.append(copy.deepcopy(d))
        return out

    included: set[int] = set()
    picked: list[tuple[int, etree._Element]] = []
    for f in content_match:
        for i, d in enumerate(data_children):
            if _matches(d, f) and i not in included:
                included.add(i)
                picked.append((i, copy.deepcopy(d)))
    matched_other = False
    for f in others:
        is_selection = not _elements(f)
        for i, d in enumerate(data_children):
            if not _matches(d, f):
                continue
            if is_selection:
                if i not in included:
                    included.add(i)
                    picked.append((i, copy.deepcopy(d)))
                matched_other = True
                continue
            sub = _filter_level(d, f, keys_of)
            if sub is None:
                continue
            matched_other = True
            if i in included:
                continue
            included.add(i)
            picked.append((i, sub))
    if others and not matched_other and not content_match:
        return None
    # Keep list keys of this entry so the output still identifies it.
    if not isinstance(data, _Wrapper) and picked:
        key_names = keys_of(data)
        for i, d in enumerate(data_children):
            if i not in included and etree.QName(d).localname in key_names:
                included.add(i)
                picked.append((i, copy.deepcopy(d)))
    for _, element in sorted(picked, key=lambda item: item[0]):
        out.append(element)
    return out


def xpath_filter(
    data: Sequence[etree._Element], select: str, namespaces: dict[str, str], keys_of: KeysOf
) -> list[etree._Element]:
    """Nodes selected by an XPath 1.0 expression, with their ancestors (and ancestors' list keys).

    Each top-level element is evaluated as the root of its own document, so
    ``/prefix:agent/prefix:name`` and ``//prefix:task-id`` work as they do
    against a NETCONF datastore.
    """
    ns = {prefix: uri for prefix, uri in namespaces.items() if prefix}
    syntax = _without_literals(select)
    _refuse_extension_functions(select, syntax)
    try:
        compiled = etree.XPath(select, namespaces=ns, regexp=False)
    except etree.XPathSyntaxError as exc:
        raise RpcError.invalid_value(
            f"the xpath filter {select!r} is not valid XPath 1.0: {exc}", error_type="protocol"
        ) from None

    # yuma123's yangcli (and people typing by hand) send "/agent" without a
    # prefix. XPath 1.0 would match nothing; like netconfd and ConfD we then
    # match names in any namespace, by evaluating on a namespace-free copy.
    match_any_namespace = _PREFIXED_NAME.search(select) is None
    _check_node_budget(select, syntax, sum(1 for top in data for _ in top.iter()))
    started = time.monotonic()
    results: list[etree._Element] = []
    for top in data:
        if time.monotonic() - started > XPATH_TIME_BUDGET:
            raise RpcError.resource_denied(
                f"the xpath filter {select!r} exceeded its time budget of {XPATH_TIME_BUDGET:g} s; "
                "narrow it (fewer '//' and nested predicates) or use a subtree filter"
            )
        # A private copy, so that selected nodes have a document root of their own.
        doc = etree.ElementTree(copy.deepcopy(top))
        target = doc
        originals: dict[etree._Element, etree._Element] = {}
        if match_any_namespace:
            bare = _without_namespaces(doc.getroot())
            originals = dict(zip(bare.iter(), doc.getroot().iter(), strict=True))
            target = etree.ElementTree(bare)
        try:
            found = compiled(target)
        except etree.XPathEvalError as exc:
            raise RpcError.invalid_value(
                f"the xpath filter {select!r} cannot be evaluated: {exc} "
                "(declare every prefix you use with xmlns:prefix on the <filter> element)",
                error_type="protocol",
            ) from None
        if not isinstance(found, list):
            raise RpcError.invalid_value(
                f"the xpath filter {select!r} yields a {type(found).__name__}, not a node-set", error_type="protocol"
            )
        nodes = [n for n in found if isinstance(n, etree._Element)]
        if match_any_namespace:
            nodes = [originals[n] for n in nodes if n in originals]
        if not nodes:
            continue
        results.append(_project(doc.getroot(), nodes, keys_of))
    return results


_PREFIXED_NAME = re.compile(r"(?<![:\w.-])[A-Za-z_][\w.-]*:(?!:)[A-Za-z_*]")

XPATH_NODE_BUDGET = 20_000_000
"""Largest estimated number of node visits an XPath filter may cost (see the module docstring)."""
XPATH_TIME_BUDGET = 2.0
"""Seconds of evaluation after which an XPath filter is stopped (checked between top-level elements)."""
_MAX_EXPRESSION = 4096

_LITERAL = re.compile(r"\"[^\"]*\"|'[^']*'")
_PREFIXED_CALL = re.compile(r"(?<![:\w.-])([A-Za-z_][\w.-]*:[A-Za-z_][\w.-]*)\s*\(")
# A step that ranges over the whole tree rather than an entry's own children.
_WIDE_STEP = re.compile(
    r"//|(?<![\w.-])(?:descendant|descendant-or-self|ancestor|ancestor-or-self|following|following-sibling"
    r"|preceding|preceding-sibling)\s*::"
    # an absolute path: "/" where an expression starts (after an operator, bracket or comma)
    r"|(?:(?<=[\[(,=<>|+*-])|(?<=\sand)|(?<=\sor)|(?<=\sdiv)|(?<=\smod))/"
)


def _without_literals(select: str) -> str:
    """``select`` with string literals blanked (same length), so their content is not read as syntax."""
    return _LITERAL.sub(lambda m: m.group()[0] + " " * (len(m.group()) - 2) + m.group()[0], select)


def _refuse_extension_functions(select: str, bare: str) -> None:
    if len(select) > _MAX_EXPRESSION:
        raise RpcError.invalid_value(
            f"the xpath filter is {len(select)} characters long; at most {_MAX_EXPRESSION} are accepted",
            error_type="protocol",
        )
    call = _PREFIXED_CALL.search(bare)
    if call is not None:
        raise RpcError.invalid_value(
            f"the xpath filter {select!r} calls the extension function {call.group(1)}(); only the XPath 1.0 "
            "core functions are available (no EXSLT)",
            error_type="protocol",
        )


def _check_node_budget(select: str, bare: str, nodes: int) -> None:
    """Refuse ``select`` when its estimated cost over ``nodes`` data nodes exceeds `XPATH_NODE_BUDGET`."""
    depth = 0
    wide_levels: set[int] = set()
    bare = re.sub(r"\s*([\[\]()/,=<>|+*-])\s*", r"\1", bare)  # spaces around syntax do not matter here
    for index, char in enumerate(bare):
        if char == "[":
            depth += 1
        elif char == "]":
            depth = max(0, depth - 1)
        elif depth and char in "/dafp" and _WIDE_STEP.match(bare, index):
            wide_levels.add(depth)
    cost = max(nodes, 1) ** (1 + len(wide_levels))
    if cost > XPATH_NODE_BUDGET:
        raise RpcError.resource_denied(
            f"the xpath filter {select!r} would visit about {nodes}^{1 + len(wide_levels)} nodes, over the "
            f"budget of {XPATH_NODE_BUDGET}; avoid '//' or absolute paths inside nested predicates"
        )


def _without_namespaces(root: etree._Element) -> etree._Element:
    """A copy of ``root`` with every element renamed to its local name, in the same document order."""
    bare = copy.deepcopy(root)
    for element in bare.iter():
        if isinstance(element.tag, str):
            element.tag = etree.QName(element).localname
    etree.cleanup_namespaces(bare)
    return bare


def _project(root: etree._Element, nodes: list[etree._Element], keys_of: KeysOf) -> etree._Element:
    """A copy of ``root`` holding the selected ``nodes`` (whole subtrees) and their ancestors."""
    selected = set(nodes)
    keep: set[etree._Element] = set()
    for node in nodes:
        parent = node.getparent()
        while parent is not None:
            keep.add(parent)
            parent = parent.getparent()

    def build(element: etree._Element) -> etree._Element:
        if element in selected:
            return copy.deepcopy(element)
        out = _shallow(element)
        key_names = keys_of(element)
        for child in _elements(element):
            if child in selected or child in keep:
                out.append(build(child))
            elif etree.QName(child).localname in key_names:
                out.append(copy.deepcopy(child))
        return out

    return build(root)
