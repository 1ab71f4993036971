"""`AgentServer`: one agent served over NETCONF — the composition root.

Puts together the YANG context, the SQLite store, the operation layer with
its behaviour (`an_agent.runtime.operations.Operations`), the NETCONF face
(`an_agent.nc.face.NetconfFace`) and the SSH/NETCONF listener::

    with AgentServer(ServerConfig(state_dir=Path("state"), port=0, profile=profile)) as server:
        print(server.port)

Without a behaviour the agent runs `an_agent.agents.default.DefaultBehaviour` (the protocol's whole
task lifecycle, no network work) under the profile given; without a profile *and* behaviour it
refuses to start, since the built-in example profile describes the quick-tour agent, which only
`an_agent.lab.tour.tour_agent` assembles (``an-agent serve`` with no profile does).

Security defaults: the listener binds only the address asked for (default
127.0.0.1). With no users configured on a loopback address it accepts
``admin``/``admin`` and says so in `ServerConfig.resolve_credentials`'s notice;
on any other address it refuses to start without configured credentials.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal

import paramiko

from an_agent.access.nacm import DEFAULT_NACM, load_nacm
from an_agent.access.users import UserDb, load_users
from an_agent.clock import Clock, SystemClock
from an_agent.errors import ConfigError
from an_agent.model import AgentProfile
from an_agent.nc.directory_client import DirectoryLogin
from an_agent.nc.face import NetconfFace
from an_agent.nc.registration import DirectoryRegistration
from an_agent.nc.server import NetconfSshServer
from an_agent.nc.ssh_auth import SshCredentials, load_or_create_host_key
from an_agent.nc.sshd import SshdTransport, service_account
from an_agent.runtime.authorization import NacmAuthorizer
from an_agent.runtime.behaviour import Behaviour
from an_agent.runtime.directory import Directory, entry_of_profile
from an_agent.runtime.large_data import DataPolicy
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import ADMIN_GROUP, Principal
from an_agent.runtime.workers import INPUT_WAIT
from an_agent.schemas.embedding import Embedder
from an_agent.schemas.registry import TemplateRegistry
from an_agent.store.agent_store import AgentStore
from an_agent.yang.context import YangContext

if TYPE_CHECKING:
    from an_agent.a2a.server import A2AServer, Logins
    from an_agent.a2a.tls import TlsFiles
    from an_agent.metrics_http import MetricsServer

log = logging.getLogger(__name__)

DEFAULT_PORT = 8830
DEFAULT_USER = ("admin", "admin")


def example_profile() -> AgentProfile:
    """The built-in example profile: the quick-tour agent's (`an_agent.lab.tour`), a RAN fault agent."""
    text = resources.files("an_agent").joinpath("data/example-profile.json").read_text(encoding="utf-8")
    return AgentProfile.from_json(text, "built-in example profile")


def advertised_host(advertise: str | None, host: str) -> str:
    """The host peers reach an agent listening on ``host`` at: ``advertise`` when given, else ``host``
    unless it is a wildcard address (no peer can connect to ``0.0.0.0``): then this machine's name."""
    if advertise:
        return advertise
    try:
        wildcard = ipaddress.ip_address(host).is_unspecified
    except ValueError:
        wildcard = host == ""
    return socket.getfqdn() if wildcard else host


def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is a loopback address."""
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return False
    return bool(infos) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)


@dataclass
class ServerConfig:
    """How to run one agent. ``port=0`` picks a free port (see `AgentServer.port`)."""

    state_dir: Path
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    users: dict[str, str] = field(default_factory=dict)
    authorized_keys: Path | None = None
    users_file: Path | None = None
    """The users file (`an_agent.access.users`): hashed passwords, groups, agent names, per-user keys."""
    user_db: UserDb | None = None
    """Users given in code besides the users file (a lab's agents: `an_agent.access.users.agent_users`)."""
    nacm_file: Path | None = None
    """NACM rules (RFC 7951 JSON of ietf-netconf-acm); default `an_agent.access.nacm.DEFAULT_NACM`."""
    profile: AgentProfile | None = None
    behaviour: Behaviour | None = None
    clock: Clock = field(default_factory=SystemClock)
    max_message_bytes: int = 16 * 1024 * 1024
    hello_timeout: float = 600.0
    """Seconds a connection has to complete SSH and the NETCONF <hello> (as netconfd's --hello-timeout)."""
    idle_timeout: float = 3600.0
    """Seconds without a message or notification before a session is closed; 0 disables (netconfd's)."""
    durable: bool = False
    notification_retention: float = 7 * 24 * 3600.0
    """Seconds logged notifications are kept, on the wall clock (0 keeps them forever)."""
    task_workers: int = 8
    """How many tasks the behaviour may execute at once (more wait for a free worker)."""
    task_sync_wait: float = 30.0
    input_timeout: float | None = INPUT_WAIT
    """Real seconds a task asked for in words waits for each missing value before it fails (None: for ever)."""
    """How long the reply to an edit creating a ``task-async false`` task waits for its end (seconds)."""
    data_url_allow: list[str] = field(default_factory=list)
    """URL prefixes data-params may be fetched from besides ``file://<state_dir>/`` (e.g. ``https://files.lab/``)."""
    schemas: Literal["evolve", "validate", "off"] = "evolve"
    """Structured payloads: validate them and learn from ``other`` (evolve), only validate, or ignore them."""
    embedder: Embedder | None = None
    """The embedding model for ``evolve`` (default: the bundled MiniLM, shared by the process, loaded on first use)."""
    schema_admins: list[str] | None = None
    """NETCONF users who may approve, reject and withdraw schema changes (default: the configured users)."""
    schema_approval: Literal["auto", "manual"] = "auto"
    templates: list[Path] = field(default_factory=list)
    """Directories of operators' own templates (``*.json``), served beside the shipped ones; checked at start."""
    a2a_port: int | None = None
    """Also serve the A2A v1 face (JSON-RPC, same users and tasks) on this port (0: a free one); None: NETCONF only."""
    a2a_tls: bool = False
    """Serve the A2A face over HTTPS: with `a2a_cert`/`a2a_key`, else a certificate generated on first start
    in the state directory (`an_agent.a2a.tls`). ``an-agent serve`` turns it on; off here because a lab's
    agents reach each other's A2A faces by plain URLs on loopback (no agent holds its peers' certificates)."""
    a2a_cert: Path | None = None
    """The A2A face's certificate (PEM, with `a2a_key`) instead of the generated one."""
    a2a_key: Path | None = None
    directory: bool = False
    """Play the directory role: serve ``an-agent-directory`` (registrations kept in the state directory)."""
    register_with: DirectoryLogin | None = None
    """Register this agent's profile with that directory on start (and in the background until the directory
    answers), deregister it on stop (`an_agent.nc.registration`)."""
    advertise: str | None = None
    """The host name or address peers and clients reach this agent at: in the A2A card's URLs and the
    directory registration. None: the listening host (`host`), or this machine's name when that is a
    wildcard address (``0.0.0.0``, ``::``), which no peer can connect to."""
    sshd_port: int | None = None
    """Also serve NETCONF through a private OpenSSH sshd on this port (0: a free one; key login only); None: off."""
    """auto: evolution publishes non-security patches as experimental; manual: every patch waits for an admin."""
    metrics_port: int | None = None
    """Serve Prometheus metrics at ``/metrics`` on this port (0: a free one) and record them; None: neither."""
    metrics_host: str = "127.0.0.1"
    """Where ``/metrics`` listens: open on loopback, else with the A2A face's users and TLS
    (`an_agent.metrics_http`)."""

    def load_user_db(self) -> UserDb:
        """The users file's users and `user_db`'s; `ConfigError` for a bad file or a name given twice."""
        from_file = load_users(self.users_file) if self.users_file is not None else UserDb()
        return from_file.merged(self.user_db or UserDb(), f"{self.users_file} and the built-in users")

    def resolve_credentials(self, user_db: UserDb | None = None) -> tuple[SshCredentials, str | None]:
        """The credentials to serve with, and a notice for the operator when defaults were applied.

        ``user_db`` is `load_user_db`'s result when the caller has it already.
        Raises `ConfigError` when a non-loopback address has no credentials.
        """
        keys = SshCredentials.load_authorized_keys(self.authorized_keys) if self.authorized_keys else []
        users = dict(self.users)
        user_keys: dict[str, list[paramiko.PKey]] = {}
        for user in (self.load_user_db() if user_db is None else user_db).users.values():
            if user.password is not None:
                users[user.name] = user.password
            where = f"{self.users_file}: user {user.name!r} authorized-keys"
            user_keys[user.name] = [SshCredentials.parse_key(line, where) for line in user.authorized_keys]
        notice = None
        if not users and not keys and not any(user_keys.values()):
            if not is_loopback(self.host):
                raise ConfigError(
                    f"refusing to listen on {self.host} without credentials: "
                    "give --user NAME:PASSWORD or --authorized-keys FILE (admin/admin is only used on loopback)"
                )
            users = {DEFAULT_USER[0]: DEFAULT_USER[1]}
            notice = f"no users configured: accepting {DEFAULT_USER[0]}/{DEFAULT_USER[1]} (loopback only)"
        return SshCredentials(users=users, authorized_keys=keys, user_keys=user_keys), notice


class AgentServer:
    """An agent process's server side: start, serve, stop. Usable as a context manager."""

    def __init__(self, config: ServerConfig, yang: YangContext | None = None) -> None:
        self.config = config
        self.users = config.load_user_db()
        self.credentials, self.notice = config.resolve_credentials(self.users)
        directory = Directory(config.state_dir, config.clock.now) if config.directory else None
        if config.behaviour is not None:
            behaviour: Behaviour = config.behaviour
        elif directory is not None:
            from an_agent.agents.directory import DirectoryBehaviour  # the directory answers queries as tasks too

            behaviour = DirectoryBehaviour(directory)
        else:
            from an_agent.agents.default import DefaultBehaviour

            behaviour = DefaultBehaviour()
        if config.templates and config.schemas == "off":
            raise ConfigError("templates were given but --schemas off serves none")
        # Read before any state is opened: a bad operator template stops the start, listing every problem.
        registry = TemplateRegistry.default(config.templates) if config.schemas != "off" else None
        if config.profile is None and config.behaviour is None and directory is None:
            raise ConfigError(
                "no profile and no behaviour: give a profile (it runs the default behaviour), or serve the "
                "quick-tour agent (an_agent.lab.tour.tour_agent; 'an-agent serve' with no --profile)"
            )
        self.profile = config.profile or example_profile()
        nacm = load_nacm(config.nacm_file) if config.nacm_file is not None else DEFAULT_NACM
        yang = yang or YangContext.default()
        self.store = AgentStore(config.state_dir, durable=config.durable)
        self.operations = Operations(
            self.profile,
            behaviour,
            self.store,
            config.clock,
            yang,
            task_workers=config.task_workers,
            authorizer=NacmAuthorizer(nacm, yang),
            sync_wait=config.task_sync_wait,
            input_wait=config.input_timeout,
            data_policy=DataPolicy(allow=tuple(config.data_url_allow)),
        )
        self.operations.bus.set_retention(config.notification_retention)
        if directory is not None:
            self.operations.attach_directory(directory)
        if config.schemas != "off":
            from an_agent.runtime.schemas import SchemaService

            self.operations.attach_schemas(
                SchemaService.open(
                    config.state_dir,
                    config.clock,
                    self.operations.publish_notification,
                    embedder=config.embedder,
                    learn=config.schemas == "evolve",
                    admins=config.schema_admins if config.schema_admins is not None else self._schema_admins(),
                    automatic=config.schema_approval == "auto",
                    registry=registry,
                )
            )
        self._listener = NetconfSshServer(
            NetconfFace(self.operations, self.principal_of),
            config.host,
            config.port,
            load_or_create_host_key(config.state_dir / "ssh_host_rsa_key"),
            self.credentials,
            max_message_bytes=config.max_message_bytes,
            hello_timeout=config.hello_timeout,
            idle_timeout=config.idle_timeout,
        )
        self.sshd: SshdTransport | None = None
        if config.sshd_port is not None:
            self.sshd = SshdTransport(
                self._listener, config.state_dir, config.host, config.sshd_port, self._keys_by_user()
            )
        self._started = False
        self._warm_up: threading.Thread | None = None
        self.a2a: A2AServer | None = None
        self.metrics: MetricsServer | None = None
        """``/metrics`` (`ServerConfig.metrics_port`), None when not served."""
        self.registration: DirectoryRegistration | None = None
        """This agent's registration with `ServerConfig.register_with` (None: no directory, or not started)."""

    def principal_of(self, user: str) -> Principal:
        """The principal of an authenticated user: from the users file, else (``--user``, keys) an admin."""
        identity = self.users.identity(user)
        if identity is None:
            return Principal.authenticated(user)
        return Principal(user, identity.groups, identity.agents)

    def _a2a_tls(self) -> TlsFiles | None:
        """The A2A face's certificate: the given one, else the generated one (`ServerConfig.a2a_tls`)."""
        from an_agent.a2a.tls import given_certificate, load_or_create_certificate

        config = self.config
        if (config.a2a_cert is None) != (config.a2a_key is None):
            raise ConfigError("give the A2A certificate and its key together (--a2a-cert and --a2a-key)")
        if config.a2a_cert is not None and config.a2a_key is not None:
            return given_certificate(config.a2a_cert, config.a2a_key)
        return load_or_create_certificate(config.state_dir, self.advertised_host) if config.a2a_tls else None

    def _logins(self) -> Logins:
        """The A2A face's logins: the same users, password check, principals and throttle as NETCONF."""
        from an_agent.a2a.server import Logins

        return Logins(
            self.credentials.check_password,
            self.principal_of,
            self._listener.login_throttle,
            token_owner=self.users.token_owner if any(u.tokens for u in self.users.users.values()) else None,
        )

    def _metrics_server(self) -> MetricsServer:
        """``/metrics`` with this agent's probes (read at scrape time); off loopback with users and TLS."""
        from an_agent.a2a.tls import load_or_create_certificate
        from an_agent.metrics_http import MetricsServer, watch_agent

        config = self.config
        watch_agent(self.operations, self.session_count)
        loopback = is_loopback(config.metrics_host)
        tls = None
        if not loopback:
            tls = self._a2a_tls() or load_or_create_certificate(config.state_dir, self.advertised_host)
        logins = None if loopback else self._logins()
        return MetricsServer(config.metrics_host, config.metrics_port or 0, loopback, logins, tls)

    def _keys_by_user(self) -> dict[str, list[str]]:
        """Public key lines per user for the sshd path; ``--authorized-keys`` keys log in as the agent's account."""
        keys = {
            user: [f"{k.get_name()} {k.get_base64()}" for k in pkeys]
            for user, pkeys in self.credentials.user_keys.items()
        }
        if self.credentials.authorized_keys:
            keys.setdefault(service_account(), []).extend(
                f"{k.get_name()} {k.get_base64()}" for k in self.credentials.authorized_keys
            )
        return {user: lines for user, lines in keys.items() if lines}

    def _schema_admins(self) -> list[str]:
        """Users who may decide schema patches: ``--user`` logins and users-file members of admin/schema-admin."""
        quick = [name for name in self.credentials.users if name not in self.users.users]
        grouped = [u.name for u in self.users.users.values() if u.groups & {ADMIN_GROUP, "schema-admin"}]
        return quick + grouped

    @property
    def host(self) -> str:
        return self.config.host

    @property
    def port(self) -> int:
        """The port actually listened on (useful with ``port=0``)."""
        return self._listener.port

    def start(self) -> AgentServer:
        self._listener.start()
        if self.sshd is not None:
            try:
                self.sshd.start()
            except BaseException:
                self._listener.stop()
                raise
        self.operations.start()
        if self.config.a2a_port is not None:
            from an_agent.a2a.server import A2AServer  # a2a-sdk and uvicorn only when the face is wanted

            self.a2a = A2AServer.for_agent(
                self.operations,
                self._logins(),
                self.host,
                self.config.a2a_port,
                netconf_port=self.port,
                advertise=self.advertised_host,
                tls=self._a2a_tls(),
                max_body_bytes=self.config.max_message_bytes,
            )
            self.a2a.start()
            # Text arrives over A2A: load what mapping it needs now, in the background (seconds), not on
            # the first client's message (the TCK measured 4.5 s for it).
            self._warm_up = threading.Thread(
                target=self.operations.warm_text_mapping, name="text mapping warm-up", daemon=True
            )
            self._warm_up.start()
        if self.config.metrics_port is not None:
            self.metrics = self._metrics_server().start()
        self._started = True
        self._register()
        log.info("agent %s listening on %s:%d", self.profile.name, self.host, self.port)
        return self

    def stop(self) -> None:
        """Close every session and the listener, finish in-flight state writes, close the store."""
        if not self._started:
            self.store.close()
            return
        self._started = False
        if self._warm_up is not None:
            # A process must not end while torch loads on another thread: its C++ runtime aborts then
            # ("terminate called without an active exception", exit 134). The load ends in seconds.
            self._warm_up.join(timeout=120)
        self._deregister()
        if self.metrics is not None:
            self.metrics.stop()
        if self.a2a is not None:
            self.a2a.stop()
        if self.sshd is not None:
            self.sshd.stop()
        self._listener.stop()
        self.operations.close()
        self.store.close()

    @property
    def advertised_host(self) -> str:
        """Where peers reach this agent (`ServerConfig.advertise`)."""
        return advertised_host(self.config.advertise, self.host)

    def _register(self) -> None:
        """Register with `ServerConfig.register_with`: now, or in the background until the directory answers."""
        login = self.config.register_with
        if login is None:
            return
        a2a_url = self.a2a.url if self.a2a is not None else None
        self.registration = DirectoryRegistration(
            login, entry_of_profile(self.profile, self.advertised_host, self.port, a2a_url)
        )
        self.registration.start()

    def _deregister(self) -> None:
        if self.registration is not None:
            self.registration.stop()

    def session_count(self) -> int:
        return self._listener.session_count()

    def __enter__(self) -> AgentServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
