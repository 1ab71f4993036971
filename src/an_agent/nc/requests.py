"""The requests `an_agent.nc.client.NetconfClient` sends, built without I/O (testable without a socket).

Some are ours rather than ncclient's, where ncclient's encoding is one that yuma123 netconfd (rightly)
refuses and our agents tolerate:

- ``<get-schema>``: ncclient puts ``<format>`` under a generated prefix with no default namespace, so
  its unprefixed identity ``yang`` names no module (RFC 7950 section 9.10.3); netconfd answers
  "wrong namespace". Here the monitoring namespace is the default one.
- ``<create-subscription>``: ncclient puts ``<filter>`` in the base namespace; RFC 5277's schema has it
  in the notification namespace, and netconfd answers "unknown object" otherwise.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any, Literal

from lxml import etree

from an_agent._lxml import default_ns
from an_agent.clock import to_rfc3339
from an_agent.model.ns import IRTF_AGENT_NS, NETCONF_BASE_NS, NETCONF_MONITORING_NS, NETCONF_NOTIFICATION_NS

FilterType = Literal["subtree", "xpath"]
Filter = etree._Element | str


def get_schema_request(identifier: str, version: str | None = None, fmt: str = "yang") -> etree._Element:
    """RFC 6022 ``<get-schema>`` (module docstring)."""
    m = f"{{{NETCONF_MONITORING_NS}}}"
    request = etree.Element(m + "get-schema", nsmap=default_ns(NETCONF_MONITORING_NS))
    etree.SubElement(request, m + "identifier").text = identifier
    if version is not None:
        etree.SubElement(request, m + "version").text = version
    etree.SubElement(request, m + "format").text = fmt
    return request


def filter_spec(filter: Filter | None, filter_type: FilterType, namespaces: dict[str, str] | None) -> Any:
    """The ``filter`` argument ncclient's operations take."""
    if filter is None:
        return None
    if filter_type == "xpath":
        if not isinstance(filter, str):
            raise TypeError("an xpath filter is a string")
        return ("xpath", (namespaces or {"irtf-agent": IRTF_AGENT_NS}, filter))
    if filter_type != "subtree":
        raise ValueError(f"filter_type must be 'subtree' or 'xpath', not {filter_type!r}")
    return ("subtree", filter)


def subscription_request(
    stream: str | None,
    filter: Filter | None,
    filter_type: FilterType,
    namespaces: dict[str, str] | None,
    start_time: float | None,
    stop_time: float | None,
) -> etree._Element:
    """The RFC 5277 ``<create-subscription>``, its ``<filter>`` in the notification namespace (module
    docstring); times are seconds since the epoch."""
    n = f"{{{NETCONF_NOTIFICATION_NS}}}"
    request = etree.Element(n + "create-subscription", nsmap=default_ns(NETCONF_NOTIFICATION_NS))
    if stream is not None:
        etree.SubElement(request, n + "stream").text = stream
    if filter is not None:
        if filter_type == "xpath":
            if not isinstance(filter, str):
                raise TypeError("an xpath filter is a string")
            nsmap = namespaces or {"irtf-agent": IRTF_AGENT_NS}
            etree.SubElement(request, n + "filter", type="xpath", select=filter, nsmap=nsmap)
        elif filter_type == "subtree":
            holder = etree.SubElement(request, n + "filter", type="subtree")
            holder.append(etree.fromstring(filter.encode("utf-8")) if isinstance(filter, str) else deepcopy(filter))
        else:
            raise ValueError(f"filter_type must be 'subtree' or 'xpath', not {filter_type!r}")
    if start_time is not None:
        etree.SubElement(request, n + "startTime").text = to_rfc3339(start_time)
    if stop_time is not None:
        etree.SubElement(request, n + "stopTime").text = to_rfc3339(stop_time)
    return request


def config_element(config: etree._Element | list[etree._Element]) -> etree._Element:
    """The ``<config>`` of an ``<edit-config>``: ``config`` itself, or the top-level nodes put in one."""
    if not isinstance(config, list) and config.tag == f"{{{NETCONF_BASE_NS}}}config":
        return config
    wrapped = etree.Element(f"{{{NETCONF_BASE_NS}}}config", nsmap=default_ns(NETCONF_BASE_NS))
    for node in config if isinstance(config, list) else [config]:
        wrapped.append(node)
    return wrapped
