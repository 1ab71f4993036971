"""A directory agent's RPCs from the client side (module ``an-agent-directory``): `DirectoryClient`.

Used by an agent to register itself when it starts and deregister when it stops
(`an_agent.server.AgentServer` with `ServerConfig.register_with`), by behaviours to find peers
(`an_agent.agents.discovery`), and by ``an-agent agents find``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType

from an_agent.model import AN_AGENT_DIRECTORY_NS
from an_agent.model import _xml as x
from an_agent.model.directory import AgentQuery, DirectoryEntry, entries_from
from an_agent.nc.client import NetconfClient


@dataclass(frozen=True)
class DirectoryLogin:
    """Where a directory agent listens (NETCONF) and the login to use there."""

    host: str
    port: int
    username: str
    password: str | None = None
    timeout: float = 30.0

    def connect(self) -> DirectoryClient:
        return DirectoryClient.connect(
            self.host, self.port, username=self.username, password=self.password, timeout=self.timeout
        )


class DirectoryClient:
    """One NETCONF session to a directory agent."""

    def __init__(self, netconf: NetconfClient) -> None:
        self.netconf = netconf

    @classmethod
    def connect(
        cls, host: str, port: int, *, username: str, password: str | None = None, timeout: float = 30.0
    ) -> DirectoryClient:
        """A session to the directory at ``host:port`` (errors as `NetconfClient.connect`)."""
        return cls(NetconfClient.connect(host, port, username=username, password=password, timeout=timeout))

    def register(self, entry: DirectoryEntry) -> None:
        """register-agent (refreshes an existing entry of the same name)."""
        self.netconf.call(entry.fill(x.root("register-agent", AN_AGENT_DIRECTORY_NS)))

    def deregister(self, name: str) -> None:
        """deregister-agent (`RpcError` data-missing when it is not registered)."""
        rpc = x.root("deregister-agent", AN_AGENT_DIRECTORY_NS)
        x.leaf(rpc, "name", name, AN_AGENT_DIRECTORY_NS)
        self.netconf.call(rpc)

    def find(self, query: AgentQuery) -> list[DirectoryEntry]:
        """find-agents: the registered agents matching ``query`` (and, when it names some, only those)."""
        found = entries_from(self.netconf.call(query.to_xml()), "agent")
        return [e for e in found if not query.names or e.name in query.names]

    def close(self) -> None:
        self.netconf.close()

    def __enter__(self) -> DirectoryClient:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
