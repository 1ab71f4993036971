"""The YANG library (RFC 8525) of the NETCONF face, and its ``<hello>`` capability (RFC 8526 section 2).

RFC 7950 section 5.6.4: a server implementing YANG 1.1 modules announces them
through ``ietf-yang-library``. `YangLibrary` describes the modules the agent's
libyang context holds, once: ``/yang-library`` (one module set, one schema
shared by every datastore this agent has) and the deprecated RFC 7895
``/modules-state`` for older clients, both carrying the same ``content-id``
(``module-set-id``), which is also in the ``:yang-library:1.1`` capability.

The content-id is a digest of what the library says (names, revisions,
namespaces, features, conformance, datastores), so it changes exactly when
the library does, and is equal across restarts and agents serving the same
modules (a client may keep its cache). The modules are loaded once when the
agent starts and never change while it runs: schema patches (draft-zhou)
change the JSON templates served as data under ``/agent``, not a YANG module,
so this library never changes under a session and no ``yang-library-update``
notification is ever due.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterable, Sequence

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.yang.info import ModuleInfo

YANG_LIBRARY_NS = "urn:ietf:params:xml:ns:yang:ietf-yang-library"
DATASTORES_NS = "urn:ietf:params:xml:ns:yang:ietf-datastores"
YANG_LIBRARY_REVISION = "2019-01-04"
_YL = f"{{{YANG_LIBRARY_NS}}}"
MODULE_SET = "complete"
"""The name of the one module set (and of the one schema) every datastore uses."""

DATASTORES = ("running", "candidate", "operational")
"""The NMDA datastores this agent has (RFC 8342 identities of ietf-datastores)."""


class YangLibrary:
    """``/yang-library`` and ``/modules-state`` for a fixed set of modules; built once, immutable.

    `trees` returns fresh copies for each read (a read view may prune them).
    """

    def __init__(self, modules: Sequence[ModuleInfo], datastores: Sequence[str] = DATASTORES) -> None:
        self.modules = tuple(modules)
        self.datastores = tuple(datastores)
        self.content_id = _digest(self.modules, self.datastores)
        """RFC 8525 ``content-id`` (and RFC 7895 ``module-set-id``): changes whenever the library does."""
        self._library = self._yang_library()
        self._modules_state = self._legacy()

    @property
    def capability(self) -> str:
        """The ``<hello>`` capability of RFC 8526 section 2."""
        return (
            "urn:ietf:params:netconf:capability:yang-library:1.1"
            f"?revision={YANG_LIBRARY_REVISION}&content-id={self.content_id}"
        )

    def trees(self, wants: Callable[[str, str], bool] | None = None) -> list[etree._Element]:
        """``/yang-library`` and ``/modules-state`` (deep copies), those ``wants(namespace, name)`` accepts.

        Only the trees a read can select are copied: the common ``<get>`` of
        one subtree pays nothing for the library.
        """
        return [
            copy.deepcopy(tree)
            for tree in (self._library, self._modules_state)
            if wants is None or wants(YANG_LIBRARY_NS, etree.QName(tree).localname)
        ]

    def _yang_library(self) -> etree._Element:
        root = etree.Element(_YL + "yang-library", nsmap=default_ns(YANG_LIBRARY_NS))
        module_set = etree.SubElement(root, _YL + "module-set")
        _leaf(module_set, "name", MODULE_SET)
        for module in self.modules:
            if not module.implemented:
                continue
            entry = etree.SubElement(module_set, _YL + "module")
            _leaf(entry, "name", module.name)
            if module.revision:
                _leaf(entry, "revision", module.revision)
            _leaf(entry, "namespace", module.namespace)
            for feature in module.features:
                _leaf(entry, "feature", feature)
        for module in self.modules:
            if module.implemented:
                continue
            entry = etree.SubElement(module_set, _YL + "import-only-module")
            _leaf(entry, "name", module.name)
            _leaf(entry, "revision", module.revision or "")
            _leaf(entry, "namespace", module.namespace)
        schema = etree.SubElement(root, _YL + "schema")
        _leaf(schema, "name", MODULE_SET)
        _leaf(schema, "module-set", MODULE_SET)
        for name in self.datastores:
            datastore = etree.SubElement(root, _YL + "datastore")
            ident = etree.SubElement(datastore, _YL + "name", nsmap={"ds": DATASTORES_NS})
            ident.text = f"ds:{name}"
            _leaf(datastore, "schema", MODULE_SET)
        _leaf(root, "content-id", self.content_id)
        return root

    def _legacy(self) -> etree._Element:
        root = etree.Element(_YL + "modules-state", nsmap=default_ns(YANG_LIBRARY_NS))
        _leaf(root, "module-set-id", self.content_id)
        for module in self.modules:
            entry = etree.SubElement(root, _YL + "module")
            _leaf(entry, "name", module.name)
            _leaf(entry, "revision", module.revision or "")
            _leaf(entry, "namespace", module.namespace)
            for feature in module.features:
                _leaf(entry, "feature", feature)
            _leaf(entry, "conformance-type", "implement" if module.implemented else "import")
        return root


def _leaf(parent: etree._Element, name: str, text: str) -> None:
    etree.SubElement(parent, _YL + name).text = text


def _digest(modules: Iterable[ModuleInfo], datastores: Iterable[str]) -> str:
    lines = [
        f"{m.name}@{m.revision or ''} {m.namespace} {','.join(m.features)} {'implement' if m.implemented else 'import'}"
        for m in sorted(modules, key=lambda m: m.name)
    ]
    lines.append("datastores " + ",".join(datastores))
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()[:16]
