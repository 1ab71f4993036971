"""Where a missing mandatory node would be: the data path an ``<error-path>`` names for it.

libyang 2.1 reports a missing node by its schema path, or (in RPCs and
notifications) by the data path of an ancestor; a client needs the data path
of the instance that lacks it. Finding it is reasoning on schema paths plus
one query of the document, so it lives apart from the libyang calls of
`an_agent.yang.context`, which supplies the query.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from an_agent.yang.info import SchemaNodeInfo
from an_agent.yang.lyerrors import LyErrorItem

_PREDICATES = re.compile(r"\[(?:[^\]'\"]|'[^']*'|\"[^\"]*\")*\]")


def missing_node_path(
    known: Mapping[str, SchemaNodeInfo],
    item: LyErrorItem,
    name: str,
    instances: Callable[[str], list[str]],
) -> str | None:
    """Data path a missing mandatory node ``name`` would have, e.g. ``/irtf-agent:tasks/task[task-id='t1']/content``.

    ``known`` maps the schema paths of the document's kind to their nodes;
    ``instances(xpath)`` gives the data paths of the nodes ``xpath`` selects
    in the document (re-parsed without validation; empty if it cannot be).
    Finds the nearest list (or presence container) above the node, and the
    first instance of it lacking the node; None when there is none to name.
    """
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
    for found in instances(f"{parent}[not({rest})]"):
        return f"{found}/{rest}"
    return None
