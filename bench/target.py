"""What a benchmark needs from a server under test (ours or the netconfd reference)."""

from __future__ import annotations

from typing import Protocol

from bench.wire import Credentials, Session


class Target(Protocol):
    """A running NETCONF server: where it listens, how to log in, and which processes are it."""

    host: str
    port: int

    @property
    def credentials(self) -> Credentials: ...

    def connect(self, timeout: float = 30.0) -> Session:
        """A new NETCONF session after the hello exchange."""
        ...

    def pids(self) -> list[int]:
        """Every process that serves requests (for CPU time and memory)."""
        ...
