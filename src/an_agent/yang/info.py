"""Plain descriptions of the loaded YANG modules and schema nodes.

These are what the rest of an-agent sees of libyang's schema: immutable,
hashable, and free of libyang objects, so they can be cached and shared
between threads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

NodeKind = Literal["container", "list", "leaf", "leaf-list", "anydata", "anyxml"]


@dataclass(frozen=True)
class ModuleInfo:
    """One YANG module a client may need.

    ``implemented`` is False for modules that are only imported (e.g.
    ``ietf-yang-types``): they define no data nodes on this server but a
    client needs their text to compile the implemented ones.
    ``path`` is the shipped file, or None for modules built into libyang.
    ``text`` is the module source served by ``<get-schema>`` (format yang).
    """

    name: str
    revision: str | None
    namespace: str
    prefix: str
    features: tuple[str, ...]
    path: str | None
    text: str
    implemented: bool = True

    @property
    def capability(self) -> str:
        """The module's NETCONF hello capability URI (RFC 6020 section 5.6.4 form)."""
        uri = f"{self.namespace}?module={self.name}"
        if self.revision:
            uri += f"&revision={self.revision}"
        if self.features:
            uri += "&features=" + ",".join(self.features)
        return uri


@dataclass(frozen=True)
class SchemaNodeInfo:
    """A data node of the schema, as edit-config and filters need it.

    ``keys`` lists a list's key leaf names in schema order (empty for other
    kinds). ``default`` is the canonical default of a leaf, if any.
    ``config`` is False for state (``config false``) nodes.
    ``module`` is the name of the module that defines the node (its
    RFC 7951 JSON prefix).
    """

    kind: NodeKind
    name: str
    namespace: str
    module: str
    keys: tuple[str, ...] = ()
    config: bool = True
    presence: bool = False
    ordered_by_user: bool = False
    default: str | None = None
    mandatory: bool = False
    is_key: bool = False
