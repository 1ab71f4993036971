"""RFC 6241 section 6 subtree filtering and ``:xpath`` filtering over lxml data trees.

Both take the top-level data elements (children of ``<data>``) and return new
top-level elements holding only what the filter selects; the input is never
modified. List keys of every selected list entry are kept, so the output is
valid instance data (RFC 6241 6.2.5 allows it; generic clients need it).
"""

from __future__ import annotations

import copy
import re
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
    try:
        compiled = etree.XPath(select, namespaces=ns)
    except etree.XPathSyntaxError as exc:
        raise RpcError.invalid_value(
            f"the xpath filter {select!r} is not valid XPath 1.0: {exc}", error_type="protocol"
        ) from None

    # yuma123's yangcli (and people typing by hand) send "/agent" without a
    # prefix. XPath 1.0 would match nothing; like netconfd and ConfD we then
    # match names in any namespace, by evaluating on a namespace-free copy.
    match_any_namespace = _PREFIXED_NAME.search(select) is None
    results: list[etree._Element] = []
    for top in data:
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
