"""ACME's transport fault agent, a third-party behaviour for an-agent (see README.md)."""

from acme_transport.agent import TransportFaultAgent

__all__ = ["TransportFaultAgent"]
