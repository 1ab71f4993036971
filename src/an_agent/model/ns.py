"""XML namespaces of the protocols and modules an-agent speaks."""

from __future__ import annotations

IRTF_AGENT_NS = "urn:ietf:params:xml:ns:yang:irtf-agent"
"""Namespace of module ``irtf-agent``; groupings from ``agent-message`` used there land in it too."""

AGENT_MESSAGE_NS = "urn:ietf:params:xml:ns:yang:agent-message"
"""Namespace of module ``agent-message`` (groupings only; no data nodes of its own)."""

NETCONF_BASE_NS = "urn:ietf:params:xml:ns:netconf:base:1.0"
"""RFC 6241 base namespace (``<rpc>``, ``<data>``, ``<config>``, ``operation`` attribute)."""

NETCONF_NOTIFICATION_NS = "urn:ietf:params:xml:ns:netconf:notification:1.0"
"""RFC 5277 namespace (``<notification>``, ``<eventTime>``, ``<create-subscription>``)."""

NETCONF_MONITORING_NS = "urn:ietf:params:xml:ns:yang:ietf-netconf-monitoring"
"""RFC 6022 namespace (``<get-schema>``, ``/netconf-state/schemas``)."""

NETMOD_NOTIFICATION_NS = "urn:ietf:params:xml:ns:netmod:notification"
"""RFC 5277 stream discovery and markers (``/netconf/streams``, ``replayComplete``, ``notificationComplete``)."""

AN_AGENT_SCHEMA_NS = "urn:an-agent:params:xml:ns:yang:an-agent-schema"
"""Namespace of module ``an-agent-schema`` (scenario schema templates, patch decisions, ``schema-update``)."""

AN_AGENT_DIRECTORY_NS = "urn:an-agent:params:xml:ns:yang:an-agent-directory"
"""Namespace of module ``an-agent-directory`` (registration and discovery of agent profiles)."""

AN_AGENT_TRACE_NS = "urn:an-agent:params:xml:ns:yang:an-agent-trace"
"""Namespace of module ``an-agent-trace`` (a task's W3C ``traceparent``, `an_agent.tracing`)."""
