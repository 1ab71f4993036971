"""YANG layer: the shipped modules, libyang validation, and the pyang/yanglint checks.

`YangContext` validates every document that crosses the NETCONF boundary
and converts RFC 7951 JSON to and from XML; `check` and `tree` run the
YANG tools on the shipped modules (``tools`` imports pyang lazily).
"""

from an_agent.yang.context import DocumentKind, YangContext
from an_agent.yang.info import ModuleInfo, NodeKind, SchemaNodeInfo
from an_agent.yang.modules import DEFAULT_FEATURES, MODULES_DIR

__all__ = ["DEFAULT_FEATURES", "MODULES_DIR", "DocumentKind", "ModuleInfo", "NodeKind", "SchemaNodeInfo", "YangContext"]
