"""Typing shims for lxml.

lxml-stubs type ``nsmap`` keys as ``str``, but lxml uses ``None`` as the key of
the default namespace; these helpers keep that one disagreement in one place.
"""

from __future__ import annotations

from typing import Any

from lxml import etree


def default_ns(namespace: str | None) -> Any:
    """An ``nsmap`` making ``namespace`` the default namespace."""
    return {None: namespace}


def nsmap_of(element: etree._Element) -> Any:
    """``element.nsmap``, typed for passing back to lxml."""
    return element.nsmap
