"""an-agent: autonomous-network agents over NETCONF, modelled in YANG.

The public API is what ``__all__`` lists; everything else is internal.
"""

from an_agent.clock import Clock, ManualClock, SystemClock
from an_agent.errors import (
    AnAgentError,
    AuthError,
    ConfigError,
    ConnectError,
    RequestTimeout,
    RpcError,
    SchemaError,
    StoreError,
    TransportError,
    YangError,
)

__version__ = "0.1.0"

__all__ = [
    "AnAgentError",
    "AuthError",
    "Clock",
    "ConfigError",
    "ConnectError",
    "ManualClock",
    "RequestTimeout",
    "RpcError",
    "SchemaError",
    "StoreError",
    "SystemClock",
    "TransportError",
    "YangError",
    "__version__",
]
