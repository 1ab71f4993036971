"""libyang validation errors -> RFC 6241 ``<rpc-error>`` (`RpcError`).

libyang 2.1 reports an error as a message, a location string and an
app-tag. This module parses the location into a data path (the future
``<error-path>``) and maps each kind of message onto the error-tag that
RFC 6241 appendix A and RFC 7950 section 15 prescribe. The table is kept
apart from `YangContext` so that it can be read (and tested) on its own.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass

from an_agent.errors import RpcError

# libyang 2.1 location strings, e.g.
#   Data location "/irtf-agent:tasks/task[task-id='t1']", line number 1.
#   Schema location "/irtf-agent:tasks/task/content".
_DATA_LOC = re.compile(r'[Dd]ata location "(?P<p>(?:[^"\\]|\\.)*)"')
_SCHEMA_LOC = re.compile(r'[Ss]chema location "(?P<p>(?:[^"\\]|\\.)*)"')
_LINE = re.compile(r"[Ll]ine number (?P<n>\d+)")


@dataclass(frozen=True)
class LyErrorItem:
    """One error as libyang stored it, with its location parsed."""

    message: str
    data_path: str | None = None
    schema_path: str | None = None
    line: int | None = None
    app_tag: str | None = None
    vecode: int = 0

    @classmethod
    def from_raw(cls, message: str, location: str | None, app_tag: str | None, vecode: int) -> LyErrorItem:
        data = _DATA_LOC.search(location or "")
        schema = _SCHEMA_LOC.search(location or "")
        line = _LINE.search(location or "")
        return cls(
            message=message,
            data_path=data.group("p") if data else None,
            schema_path=schema.group("p") if schema else None,
            line=int(line.group("n")) if line else None,
            app_tag=app_tag,
            vecode=vecode,
        )

    def where(self) -> str:
        """The best location text for a person: data path, else schema path, else line."""
        if self.data_path:
            return self.data_path
        if self.schema_path:
            return self.schema_path
        return f"line {self.line}" if self.line else "the document"


# A resolver turns the location libyang gives for a missing mandatory node
# (its schema path, or the data path of an ancestor) and the node's name into
# the data path the node should have (with list keys), or None.
MissingResolver = Callable[[LyErrorItem, str], str | None]
# A resolver that finds the element carrying an unknown namespace.
NamespaceResolver = Callable[[str], str | None]

_Builder = Callable[[re.Match[str], LyErrorItem, MissingResolver, NamespaceResolver], RpcError]


def _leaf_name(path: str | None) -> str:
    """Last node name of a path, without predicates or module prefix."""
    if not path:
        return ""
    last = re.sub(r"\[[^\]]*\]", "", path).rstrip("/").rsplit("/", 1)[-1]
    return last.split(":", 1)[-1]


def _unknown_element(m: re.Match[str], item: LyErrorItem, _r: MissingResolver, _n: NamespaceResolver) -> RpcError:
    element = m.group("el")
    parent = item.data_path or item.schema_path
    where = f"under {parent}" if parent else "at the top level"
    err = RpcError.unknown_element(
        element,
        f"unknown element '{element}' {where}: the schema has no such node there ({item.message})",
        parent,
    )
    return err


def _unknown_namespace(m: re.Match[str], item: LyErrorItem, _r: MissingResolver, find: NamespaceResolver) -> RpcError:
    namespace = m.group("ns")
    element = find(namespace) or ""
    shown = f"'{element}' " if element else ""
    return RpcError.unknown_namespace(
        element,
        namespace,
        f"element {shown}is in namespace '{namespace}', which no module of this agent defines",
    )


def _missing(m: re.Match[str], item: LyErrorItem, resolve: MissingResolver, _n: NamespaceResolver) -> RpcError:
    name = m.group("el")
    path = resolve(item, name) or item.data_path or item.schema_path
    err = RpcError.missing_element(
        name, f"mandatory node '{name}' is missing at {path or item.where()}", path, error_type="application"
    )
    return err


def _missing_key(m: re.Match[str], item: LyErrorItem, _r: MissingResolver, _n: NamespaceResolver) -> RpcError:
    key = m.group("el")
    return RpcError.missing_element(
        key, f"list entry {item.where()} has no key leaf '{key}'", item.data_path, error_type="application"
    )


def _leafref(m: re.Match[str], item: LyErrorItem, _r: MissingResolver, _n: NamespaceResolver) -> RpcError:
    target = re.sub(r"[\w.-]+:", "", m.group("target"))  # /agtask:data-params/agtask:id -> /data-params/id
    return RpcError.data_missing(
        f"{item.where()} refers to '{m.group('value')}', but no {target} has that value",
        item.data_path,
        app_tag=item.app_tag or "instance-required",
    )


def _invalid_value(_m: re.Match[str], item: LyErrorItem, _r: MissingResolver, _n: NamespaceResolver) -> RpcError:
    return RpcError.invalid_value(
        f"invalid value of {item.where()}: {item.message}", item.data_path, app_tag=item.app_tag
    )


def _state_node(m: re.Match[str], item: LyErrorItem, _r: MissingResolver, _n: NamespaceResolver) -> RpcError:
    name = m.group("el")
    return RpcError.invalid_value(
        f"'{name}' at {item.where()} is state data (config false): it cannot be configured",
        item.data_path,
        info={"bad-element": name},
    )


def _duplicate(m: re.Match[str], item: LyErrorItem, _r: MissingResolver, _n: NamespaceResolver) -> RpcError:
    message = f"duplicate entry {item.where()}: each '{m.group('el')}' must be unique"
    return RpcError.invalid_value(message, item.data_path, info={"bad-element": m.group("el")})


def _missing_choice(m: re.Match[str], item: LyErrorItem, resolve: MissingResolver, _n: NamespaceResolver) -> RpcError:
    # RFC 7950 section 15.6: data-missing, app-tag missing-choice, the path of the choice's parent.
    choice = m.group("el")
    where = resolve(item, choice) or item.data_path or item.schema_path
    parent = where.rsplit("/", 1)[0] if where and where.endswith(f"/{choice}") else where
    return RpcError.data_missing(
        f"{parent or item.where()} needs one of the cases of choice '{choice}'",
        parent or None,
        app_tag="missing-choice",
        info={"missing-choice": choice},
    )


def _too_few(m: re.Match[str], item: LyErrorItem, resolve: MissingResolver, _n: NamespaceResolver) -> RpcError:
    name = m.group("el")
    path = resolve(item, name) or item.data_path or item.schema_path
    return RpcError.operation_failed(
        f"{path}: too few '{name}' entries ({item.message})", path, app_tag="too-few-elements"
    )


def _failed(app_tag: str) -> _Builder:
    def build(_m: re.Match[str], item: LyErrorItem, _r: MissingResolver, _n: NamespaceResolver) -> RpcError:
        return RpcError.operation_failed(
            f"{item.where()}: {item.message}", item.data_path, app_tag=item.app_tag or app_tag
        )

    return build


def _when(_m: re.Match[str], item: LyErrorItem, _r: MissingResolver, _n: NamespaceResolver) -> RpcError:
    name = _leaf_name(item.data_path or item.schema_path)
    return RpcError.unknown_element(
        name, f"{item.where()} is not allowed here, its 'when' condition is false ({item.message})", item.data_path
    )


# First match wins. Patterns are anchored on libyang 2.1 message texts.
_RULES: tuple[tuple[re.Pattern[str], _Builder], ...] = (
    (re.compile(r'^Node "(?P<el>[^"]+)" not found'), _unknown_element),
    (re.compile(r'^No module with namespace "(?P<ns>[^"]*)"'), _unknown_namespace),
    (re.compile(r'^No module named "(?P<el>[^"]*)"'), _unknown_element),
    (re.compile(r'^Mandatory node "(?P<el>[^"]+)" instance does not exist'), _missing),
    (re.compile(r'^List instance is missing its key "(?P<el>[^"]+)"'), _missing_key),
    (
        re.compile(r'^Invalid leafref value "(?P<value>[^"]*)" - no target instance "(?P<target>[^"]*)"'),
        _leafref,
    ),
    (re.compile(r'^Unexpected data state node "(?P<el>[^"]+)"'), _state_node),
    (re.compile(r'^Duplicate instance of "(?P<el>[^"]+)"'), _duplicate),
    (re.compile(r"^Unique data leaf\(s\)"), _failed("data-not-unique")),
    (re.compile(r"^Too many "), _failed("too-many-elements")),
    (re.compile(r'^Too few "(?P<el>[^"]+)" instances'), _too_few),
    (re.compile(r'^Mandatory choice "(?P<el>[^"]+)"'), _missing_choice),
    (re.compile(r"^Must condition "), _failed("must-violation")),
    (re.compile(r"^When condition "), _when),
    (re.compile(r"^(Invalid|Unsatisfied|Value|Unexpected value)"), _invalid_value),
)

# vecodes of libyang 2.1 (enum LY_VECODE) that mean the input is not
# well-formed XML/JSON rather than invalid against the schema.
_SYNTAX_VECODES = {1, 7, 8}  # LYVE_SYNTAX, LYVE_SYNTAX_XML, LYVE_SYNTAX_JSON


def to_rpc_error(
    items: list[LyErrorItem],
    resolve_missing: MissingResolver,
    find_namespace: NamespaceResolver,
    pattern_app_tags: frozenset[str] = frozenset(),
) -> RpcError:
    """Map libyang's errors to one `RpcError` (the first), the others kept in its message.

    ``items`` must not be empty. A custom ``error-message`` of a ``must`` or
    ``pattern`` statement replaces libyang's text; its ``error-app-tag`` is
    kept as the RpcError's app_tag, and ``pattern_app_tags`` (the app-tags
    the schema declares on ``pattern`` statements) tells a pattern mismatch
    (invalid-value) from a ``must`` violation (operation-failed).
    """
    first = _map_one(items[0], resolve_missing, find_namespace, pattern_app_tags)
    if len(items) > 1:
        others = "; ".join(f"{i.where()}: {i.message}" for i in items[1:])
        first = dataclasses.replace(first, message=f"{first.message} (and {len(items) - 1} more: {others})")
    return first


def _map_one(
    item: LyErrorItem,
    resolve_missing: MissingResolver,
    find_namespace: NamespaceResolver,
    pattern_app_tags: frozenset[str],
) -> RpcError:
    if item.app_tag and item.app_tag in pattern_app_tags:
        return RpcError.invalid_value(
            f"invalid value of {item.where()}: {item.message}", item.data_path, app_tag=item.app_tag
        )
    if item.vecode in _SYNTAX_VECODES:
        return RpcError.malformed_message(f"malformed XML/JSON at {item.where()}: {item.message}")
    for pattern, build in _RULES:
        m = pattern.search(item.message)
        if m:
            return build(m, item, resolve_missing, find_namespace)
    if item.app_tag:
        # A custom error-message of a must statement (pattern app-tags were handled above).
        return RpcError.operation_failed(f"{item.where()}: {item.message}", item.data_path, app_tag=item.app_tag)
    return RpcError.operation_failed(f"{item.where()}: {item.message}", item.data_path)
