"""`ElementManager`: one ``devices:`` entry of a topology served over NETCONF — the composition root.

The same parts as an agent's server (`an_agent.server.AgentServer`): the SSH/NETCONF listener
(`an_agent.nc.server`), the NETCONF face (`an_agent.nc.face.NetconfFace`), the users and NACM
(`an_agent.runtime.authorization.NacmAuthorizer`) and the durable notification log, over an
`ElementOperations` instead of an agent. It runs in the lab's process, beside the simulator it serves.

Users: the lab's admin (``admin``/``admin``, admin group), every agent of the lab (its own login,
group ``operators``), and the topology's ``users_file``. `ELEMENT_MANAGER_NACM` decides what each may do.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Literal

from an_agent.access.nacm import Nacm, Rule, RuleList
from an_agent.access.users import UserDb
from an_agent.clock import Clock
from an_agent.lab.devices import DeviceSpec
from an_agent.lab.em.operations import MODULE, ElementOperations
from an_agent.lab.em.windows import CallAt
from an_agent.lab.network import SimNetwork
from an_agent.nc.face import NetconfFace
from an_agent.nc.server import NetconfSshServer
from an_agent.nc.ssh_auth import load_or_create_host_key
from an_agent.runtime.authorization import NacmAuthorizer
from an_agent.runtime.principal import Principal
from an_agent.server import ServerConfig
from an_agent.store.agent_store import AgentStore
from an_agent.yang.context import YangContext
from an_agent.yang.modules import NETWORK_MODULES_DIR, PROTOCOL_MODULES

log = logging.getLogger(__name__)

OPERATORS = "operators"
"""The group that may act on the network (edit cells, run the RPCs); the lab's agents are in it."""


def _exec(name: str, module: str, rpc: str, action: Literal["permit", "deny"] = "permit") -> Rule:
    return Rule(name, action, module_name=module, kind="rpc", target=rpc, operations=frozenset({"exec"}))


ELEMENT_MANAGER_NACM = Nacm(
    exec_default="deny",
    rule_lists=(
        RuleList("admin", frozenset({"admin"}), (Rule("permit-all", "permit"),)),
        RuleList(
            OPERATORS,
            frozenset({OPERATORS}),
            (
                Rule(
                    "write-cells",
                    "permit",
                    module_name=MODULE,
                    kind="data",
                    target=f"/{MODULE}:cells",
                    operations=frozenset({"create", "update", "delete"}),
                ),
                _exec("act", MODULE, "*"),
            ),
        ),
        RuleList(
            "everyone",
            frozenset({"*"}),
            (
                _exec("subscribe", "notifications", "create-subscription"),
                _exec("lock", "ietf-netconf", "lock"),
                _exec("unlock", "ietf-netconf", "unlock"),
                # Ownership narrows it: another user's session needs an admin (runtime.authorization).
                _exec("kill-own-session", "ietf-netconf", "kill-session"),
            ),
        ),
    ),
)
"""What ships for element managers: ``admin`` may do everything; ``operators`` may change cells
(``/an-agent-network:cells``) and run the an-agent-network RPCs (restart, energy-saving windows); a
member of any group may read, subscribe (alarm-notification), lock and unlock; nobody else may act
(write-default and exec-default deny). A user in no group reaches the defaults: read only, no
subscription (RFC 8341 skips the rule-lists for a user in no group)."""

_yang: YangContext | None = None
_yang_lock = threading.Lock()


def element_manager_yang() -> YangContext:
    """The libyang context of every element manager of the process: the protocol modules and the network ones."""
    global _yang
    with _yang_lock:
        if _yang is None:
            _yang = YangContext(extra_dirs=[NETWORK_MODULES_DIR], only=PROTOCOL_MODULES)
        return _yang


class ElementManager:
    """One element manager (module docstring): `start` listens, `stop` closes every session and the log."""

    def __init__(
        self,
        device: DeviceSpec,
        network: SimNetwork,
        call_at: CallAt,
        clock: Clock,
        *,
        state_dir: Path,
        host: str,
        port: int,
        host_key: Path,
        logins: dict[str, str],
        user_db: UserDb,
        users_file: Path | None = None,
    ) -> None:
        """``logins``: plain ``user -> password`` of administrators (the lab's admin); ``user_db``: the lab's
        agents (group ``operators``); ``users_file``: more users (people, outside agents) with their groups."""
        self.device = device
        config = ServerConfig(state_dir, host, port, users=dict(logins), users_file=users_file, user_db=user_db)
        self.users = config.load_user_db()
        credentials, _ = config.resolve_credentials(self.users)
        yang = element_manager_yang()
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.store = AgentStore(state_dir)
        self.operations = ElementOperations(
            device, network, call_at, clock, self.store, yang, NacmAuthorizer(ELEMENT_MANAGER_NACM, yang)
        )
        self._listener = NetconfSshServer(
            NetconfFace(self.operations, self._principal_of), host, port, load_or_create_host_key(host_key), credentials
        )

    def _principal_of(self, user: str) -> Principal:
        identity = self.users.identity(user)
        if identity is None:
            return Principal.authenticated(user)  # the lab's admin
        return Principal(user, identity.groups, identity.agents)

    @property
    def host(self) -> str:
        return self._listener.host

    @property
    def port(self) -> int:
        return self._listener.port

    def start(self) -> ElementManager:
        self._listener.start()
        log.info(
            "element manager %s (%s) listening on %s:%d", self.device.name, self.device.domain, self.host, self.port
        )
        return self

    def stop(self) -> None:
        self._listener.stop()
        self.operations.close()
        self.store.close()
