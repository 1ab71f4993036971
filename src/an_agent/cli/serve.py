"""``an-agent serve``: run one agent as a NETCONF server until interrupted."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from an_agent.cli import observe, serve_behaviour
from an_agent.errors import ConfigError
from an_agent.runtime.workers import INPUT_WAIT

FULL_DISK_POLL_S = 1.0
"""How often an agent whose state directory is full at start looks again for space."""
EXIT_LAB_LOST = 3
"""The exit status of a lab agent whose lab was lost (as `an_agent.cli.EXIT_UNREACHABLE`: the lab cannot be
reached); the lab's watchdog starts it again."""

if TYPE_CHECKING:
    from an_agent.agents.environment import SchemaMode
    from an_agent.lab.remote import LabMember
    from an_agent.lab.spec import SchemaApproval
    from an_agent.nc.directory_client import DirectoryLogin
    from an_agent.runtime.behaviour import Behaviour

T = TypeVar("T")

_DESCRIPTION = """\
Serve one autonomous-network agent over NETCONF (SSH, base 1.0 and 1.1).

The agent's profile (/irtf-agent:agent) comes from --profile FILE (RFC 7951
JSON or YAML of the same shape; the agent then runs the default behaviour:
the task lifecycle without network work), from --topology FILE --agent NAME
(the role's behaviour), or, with neither, it is the quick-tour agent: a RAN
fault agent on a built-in simulated network of six base stations with three
faults (SITE-02 software hang, SITE-05 power failure, CELL-0401 tilt off
plan) that diagnoses them, recommends the recovery and recovers what may be
done remotely (tasks 'Diagnose ...', 'Repair ...', 'Verify ...' with a
fault_diagnosis_v1 payload or a prompt naming the sites/cells). Tasks, context, data-params and
the notification log persist in SQLite under --state-dir, as does the SSH host
key (generated on first start).

Authentication: --users FILE (hashed passwords, groups, agent names and keys
per user; see 'an-agent users --help'), --user NAME:PASSWORD (repeatable; or
--user NAME with the password in $AN_AGENT_PASSWORD, so it is not visible in
the process list) and/or --authorized-keys FILE. With none, on a loopback
address, admin/admin is accepted (and said); on any other address the server
refuses to start.
"""


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run an agent as a NETCONF server",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument(
        "--advertise",
        metavar="HOST",
        help="the host name or address peers and clients reach this agent at, put in the A2A card's URLs and "
        "the directory registration (default: --host; with --topology, the agent's address there; on a "
        "wildcard --host such as 0.0.0.0, this machine's name)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("AN_AGENT_PORT", "8830")),
        help="TCP port (default: $AN_AGENT_PORT, as the client commands, else 8830; 0 picks a free one)",
    )
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=Path("state"),
        help="directory for the database and host key (default: ./state)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--profile", type=Path, metavar="FILE", help="agent profile file (.json, .yaml)")
    source.add_argument("--topology", type=Path, metavar="FILE", help="lab topology file (needs --agent)")
    parser.add_argument("--agent", metavar="NAME", help="which agent of --topology to serve")
    parser.add_argument(
        "--lab-control",
        metavar="HOST:PORT",
        help="with --topology: join the running lab whose control channel is there (its clock, network and "
        "scenario; 'an-agent lab run/up' start their agents this way) instead of playing an idle copy alone",
    )
    parser.add_argument(
        "--lab-secret-file",
        type=Path,
        metavar="FILE",
        help="the lab's control secret (a 0600 file written by the lab; needed with --lab-control)",
    )
    parser.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME[:PASSWORD]",
        help="accept this login (repeatable); NAME alone takes the password from $AN_AGENT_PASSWORD",
    )
    parser.add_argument("--users", type=Path, metavar="FILE", help="users file (YAML; see 'an-agent users --help')")
    parser.add_argument(
        "--nacm",
        type=Path,
        metavar="FILE",
        help="NACM rules, RFC 7951 JSON of ietf-netconf-acm (default: admin all; operators tasks; "
        "schema-admin patch decisions; write-default deny)",
    )
    parser.add_argument("--authorized-keys", type=Path, metavar="FILE", help="OpenSSH authorized_keys for key login")
    parser.add_argument(
        "--max-message-bytes",
        type=_positive_int,
        default=16 * 1024 * 1024,
        metavar="N",
        help="largest NETCONF message or A2A request body accepted; a bigger one is discarded with a too-big "
        "rpc-error (NETCONF) or refused with HTTP 413 (A2A) (default: 16 MiB)",
    )
    parser.add_argument(
        "--hello-timeout",
        type=_seconds,
        default=600.0,
        metavar="SECONDS",
        help="close a connection that has not finished SSH and the NETCONF hello in this time (default: 600)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=_seconds,
        default=3600.0,
        metavar="SECONDS",
        help="close a session that sent no message and received no notification in this time, unless it or "
        "another session of its user holds a notification subscription; 0 never (default: 3600)",
    )
    parser.add_argument(
        "--input-timeout",
        type=_seconds,
        default=INPUT_WAIT,
        metavar="SECONDS",
        help="a task asked for in words that waits for a missing value (input-required) fails when no answer "
        f"comes in this time, giving back its place; 0 waits for ever (default: {INPUT_WAIT:g})",
    )
    parser.add_argument(
        "--notification-retention",
        type=_duration,
        default=7 * 24 * 3600.0,
        metavar="DURATION",
        help="keep logged notifications (for replay) this long on the wall clock: seconds or a number with "
        "s/m/h/d, 0 forever (default: 7d)",
    )
    parser.add_argument("--durable", action="store_true", help="fsync every commit (survives power loss, slower)")
    parser.add_argument(
        "--schemas",
        choices=["evolve", "validate", "off"],
        default=None,
        help="structured payloads: validate them and learn from 'other' (evolve), only validate, or serve no "
        "scenario schemas (off). Default: evolve; with --topology, the agent's 'schemas' in the topology "
        "(default validate), exactly as under 'an-agent lab run'",
    )
    parser.add_argument(
        "--schema-admin",
        action="append",
        metavar="NAME",
        help="user allowed to approve/reject/withdraw schema changes (repeatable; default: every --user)",
    )
    parser.add_argument(
        "--schema-approval",
        choices=["auto", "manual"],
        default=None,
        help="auto: new keys are published as experimental by evolution itself; manual: each patch waits for "
        "a schema admin (approve-schema-patch). Default: auto; with --topology, the agent's schema_approval",
    )
    parser.add_argument(
        "--templates",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="also serve an operator's schema templates (*.json in DIR; repeatable); every file is checked at "
        "start and each problem reported as FILE: KEY: problem",
    )
    parser.add_argument(
        "--a2a-port",
        type=int,
        metavar="PORT",
        help="also serve the A2A v1 face (JSON-RPC, agent card at /.well-known/agent-card.json, HTTP Basic with "
        "the same users, or their bearer tokens) on this port of --host (0 picks a free one); HTTPS unless "
        "--a2a-tls off",
    )
    parser.add_argument(
        "--a2a-tls",
        choices=["on", "off"],
        help="HTTPS for the A2A face (default on; off with --topology, whose peers use plain lab URLs): with "
        "--a2a-cert/--a2a-key, else a self-signed certificate made on first start in the state directory "
        "(a2a-cert.pem, mode 0600; clients trust that file, e.g. 'task --a2a-trust')",
    )
    discovery = parser.add_argument_group("discovery (module an-agent-directory)")
    discovery.add_argument(
        "--directory-role",
        action="store_true",
        help="play the directory role: serve the registry of agent profiles (register/deregister/find-agents "
        "RPCs, /directory state) and answer agent_query_v1 tasks on both faces",
    )
    discovery.add_argument(
        "--register-with",
        metavar="HOST:PORT",
        help="register this agent with the directory agent at HOST:PORT on start, deregister on stop",
    )
    discovery.add_argument(
        "--register-login",
        metavar="USER:PASSWORD",
        default=os.environ.get("AN_AGENT_DIRECTORY_LOGIN", "admin:admin"),
        help="the login on the directory (a user who may speak for this agent's name; default admin:admin "
        "or $AN_AGENT_DIRECTORY_LOGIN); a broker also uses it on the peers it finds",
    )
    discovery.add_argument(
        "--broker",
        metavar="SKILL",
        help="serve a broker: each task goes to a peer found in the --register-with directory (by the task's "
        "payload schema, else by SKILL); no agent fits -> the task fails saying so",
    )
    parser.add_argument("--a2a-cert", type=Path, metavar="PEM", help="the A2A face's certificate (with --a2a-key)")
    parser.add_argument("--a2a-key", type=Path, metavar="PEM", help="the private key of --a2a-cert")
    parser.add_argument(
        "--sshd-port",
        type=int,
        metavar="PORT",
        help="also serve NETCONF through a private OpenSSH sshd on this port of --host (0 picks a free one): "
        "SSH in C, a process per connection, faster with many sessions; public-key login only (users-file "
        "authorized-keys), every user mapped onto the account the agent runs as; needs /usr/sbin/sshd",
    )
    serve_behaviour.add_arguments(parser)
    observe.add_arguments(parser)
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output (-vv for debug)")
    parser.set_defaults(handler=run)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of bytes, got {text!r}") from None
    if value < 1024:
        raise argparse.ArgumentTypeError(f"must be at least 1024 bytes, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def _duration(text: str) -> float:
    unit = _UNITS.get(text[-1:].lower()) if text else None
    number = text[:-1] if unit is not None else text
    try:
        value = float(number) * (unit or 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a duration like 3600, 90m, 12h or 7d, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text!r}")
    return value


PASSWORD_ENV = "AN_AGENT_PASSWORD"


def parse_users(values: list[str], environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """``--user`` values as a name -> password map; ``NAME`` alone takes ``$AN_AGENT_PASSWORD``."""
    users: dict[str, str] = {}
    for value in values:
        name, sep, password = value.partition(":")
        if not sep and name:
            password = environ.get(PASSWORD_ENV, "")
            if not password:
                raise ConfigError(f"--user {name} without a password needs ${PASSWORD_ENV} set")
        if not name or not password:
            raise ConfigError(f"--user expects NAME:PASSWORD or NAME (with ${PASSWORD_ENV}), got {value!r}")
        users[name] = password
    return users


def run(args: argparse.Namespace) -> int:
    with observe.spans(args.otlp):  # --otlp: spans to a collector while the agent serves, the rest sent at the end
        return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    from an_agent.lab.upstream import served_templates
    from an_agent.logs import configure, name_agent
    from an_agent.model import AgentProfile
    from an_agent.server import ServerConfig

    configure(args.log_format, logging.WARNING - 10 * min(args.verbose, 2), args.agent)
    profile = None
    behaviour: Behaviour | None = None
    schemas: SchemaMode = args.schemas or "evolve"
    a2a_port, templates = args.a2a_port, list(args.templates)
    approval: SchemaApproval = args.schema_approval or "auto"
    member: LabMember | None = None
    lab_settings: dict[str, Any] = {}
    advertise: str | None = args.advertise
    directory_role: bool = args.directory_role
    topology_registration: DirectoryLogin | None = None  # a topology agent's directory, when it has one
    if (args.lab_control is None) != (args.lab_secret_file is None):
        raise ConfigError("--lab-control and --lab-secret-file go together")
    if args.lab_control is not None and (args.topology is None or not args.agent):
        raise ConfigError("--lab-control needs --topology FILE --agent NAME (which agent of the lab this is)")
    if serve_behaviour.wants_own_behaviour(args):
        if args.topology is not None:
            raise ConfigError("in a topology, name the agent's behaviour, command or a2a_upstream there")
        loaded = AgentProfile.load(args.profile) if args.profile is not None else None
        profile, behaviour, upstream_templates = serve_behaviour.own_behaviour(args, loaded, schemas)
        templates += upstream_templates
    elif args.profile is not None:
        profile = AgentProfile.load(args.profile)
    elif args.lab_control is not None:
        from an_agent.lab.incarnation import next_incarnation
        from an_agent.lab.remote import join_lab

        incarnation = _when_there_is_space(lambda: next_incarnation(args.state_dir))  # before any task id
        member = join_lab(
            args.topology, args.agent, args.lab_control, args.lab_secret_file, args.schemas, args.state_dir,
            incarnation,
        )  # fmt: skip
        profile, behaviour, schemas = member.profile, member.behaviour, member.schemas
        lab_settings = {
            "clock": member.kernel.clock,
            "task_workers": member.task_workers,
            "user_db": member.user_db,
            "users": member.users,
        }
        from an_agent.lab.topology import load_topology

        spec = load_topology(args.topology).agent(args.agent)
        a2a_port = spec.a2a_port if a2a_port is None else a2a_port
        templates = templates or served_templates(spec, args.state_dir)
        approval = args.schema_approval or spec.schema_approval
    elif args.topology is not None:
        if not args.agent:
            raise ConfigError("--topology needs --agent NAME (which agent of the topology to serve)")
        from an_agent.lab.agent import build_profile, load_agent, topology_directory_login
        from an_agent.lab.topology import load_topology

        topology = load_topology(args.topology)
        spec = topology.agent(args.agent)  # its A2A face and templates, unless given here
        if spec.role == "directory":  # the registry of the topology's agents: no behaviour of its own
            profile, directory_role = build_profile(spec), True
        else:
            lab_profile, lab_behaviour = load_agent(args.topology, args.agent, schemas=args.schemas)
            profile, behaviour = lab_profile, lab_behaviour
            schemas = lab_behaviour.env.schemas  # the behaviour and the server must agree on it
            topology_registration = topology_directory_login(topology, args.agent)
        advertise = advertise or spec.address
        a2a_port = spec.a2a_port if a2a_port is None else a2a_port
        templates = templates or served_templates(spec, args.state_dir)
        approval = args.schema_approval or spec.schema_approval
    elif args.agent:
        raise ConfigError("--agent is only meaningful with --topology FILE")
    elif not (args.directory_role or args.broker):  # those play their own behaviour
        from an_agent.lab.tour import tour_agent

        tour = tour_agent(schemas)
        profile, behaviour = tour.profile, tour.behaviour

    register_with = topology_registration
    if args.register_with:
        from an_agent.cli.agents import parse_address
        from an_agent.nc.directory_client import DirectoryLogin

        host, port = parse_address(args.register_with)
        user, sep, password = args.register_login.partition(":")
        if not sep or not user:
            raise ConfigError("--register-login expects USER:PASSWORD")
        register_with = DirectoryLogin(host, port, user, password)
    if args.broker:
        if register_with is None or behaviour is not None:
            raise ConfigError("--broker needs --register-with HOST:PORT (its directory) and no --topology")
        from an_agent.agents.discovery import BrokerBehaviour, Discovery

        behaviour = BrokerBehaviour(
            Discovery(register_with), (register_with.username, register_with.password or ""), skill=args.broker
        )
    config = ServerConfig(
        state_dir=args.state_dir,
        host=args.host,
        advertise=advertise,
        port=args.port,
        users=parse_users(args.user) or lab_settings.get("users", {}),
        authorized_keys=args.authorized_keys,
        users_file=args.users,
        nacm_file=args.nacm,
        profile=profile,
        behaviour=behaviour,
        durable=args.durable,
        schemas=schemas,
        max_message_bytes=args.max_message_bytes,
        hello_timeout=args.hello_timeout,
        idle_timeout=args.idle_timeout,
        input_timeout=args.input_timeout or None,
        notification_retention=args.notification_retention,
        schema_admins=args.schema_admin,
        schema_approval=approval,
        templates=templates,
        a2a_port=a2a_port,
        # A lab member serves the certificate the lab made (an_agent.lab.certs) unless the lab runs without;
        # a lone topology agent has plain URLs (it holds no peer's certificate).
        a2a_tls=(args.a2a_tls or _topology_tls(args.topology, member)) == "on",
        a2a_cert=args.a2a_cert,
        a2a_key=args.a2a_key,
        sshd_port=args.sshd_port,
        metrics_port=args.metrics_port,
        metrics_host=args.metrics_host,
        # a lab's directory agent plays the role; the others register with it (as themselves)
        directory=directory_role or (member is not None and member.behaviour is None),
        register_with=register_with or (member.register_with if member is not None else None),
    )
    if member is not None:
        config = replace(
            config,
            clock=lab_settings["clock"],
            task_workers=lab_settings["task_workers"],
            user_db=lab_settings["user_db"],
        )
    from an_agent.server import AgentServer

    server = _when_there_is_space(lambda: AgentServer(config))
    if args.agent is None:  # a topology agent is named by the topology
        name_agent(server.profile.name)
    if member is not None and member.behaviour is None and server.operations.directory is not None:
        from an_agent.lab.inprocess import journal_directory

        journal_directory(server.operations.directory.registry, member.name, member.journal)
    if server.notice:
        _say(f"an-agent: {server.notice}")
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    if member is not None:
        member.ready(
            server.port,
            server.a2a.port if server.a2a is not None else None,
            server.metrics.port if server.metrics is not None else None,
        )
        lab = member

        def stop_when_the_lab_closes() -> None:
            lab.closed.wait()
            if lab.lost:  # stop as if killed (`LabMember.lost`): a graceful stop would end the tasks in progress
                _say(
                    f"an-agent: {lab.name} lost its lab's control channel: stopping at once; its tasks in "
                    "progress resume when the lab starts it again on this state directory"
                )
                os._exit(EXIT_LAB_LOST)
            stop.set()

        if member.behaviour is not None:  # the directory waits for the lab's SIGTERM: the others deregister first
            threading.Thread(target=stop_when_the_lab_closes, name="lab-closed", daemon=True).start()
    a2a = ""
    if server.a2a is not None:
        a2a = f", A2A on {server.a2a.url}/"
        if server.a2a.certificate is not None:
            from an_agent.a2a.tls import fingerprint

            a2a += f" (certificate {server.a2a.certificate}, SHA-256 {fingerprint(server.a2a.certificate)})"
    # No " on " before the sshd address: scripts read the NETCONF port from the first "on HOST:PORT".
    sshd = f", NETCONF by sshd at {server.host}:{server.sshd.port}" if server.sshd is not None else ""
    sshd += f", metrics at {server.metrics.url}" if server.metrics is not None else ""
    _say(
        f"an-agent: serving {server.profile.name} on {server.host}:{server.port}{a2a}{sshd} "
        f"(state in {args.state_dir}); Ctrl-C to stop"
    )
    try:
        while not stop.wait(0.2):  # in slices: a signal between checks is handled within 0.2 s
            pass
    finally:
        if member is not None:
            member.kernel.close()  # activities waiting on the lab's time end before the server stops
        server.stop()
        if member is not None:
            member.close()
        _say("an-agent: stopped")
    return 0


def _topology_tls(topology: Path | None, member: LabMember | None) -> str:
    """The A2A face's TLS default: on alone, as the lab says for a lab member, off for ``--topology`` alone."""
    if member is not None:
        return "on" if member.a2a_trust is not None else "off"
    return "off" if topology is not None else "on"


def _when_there_is_space(start: Callable[[], T]) -> T:
    """``start()``; while the state directory is full (`StateFull`: nothing changed) it says so once and
    waits for space, as its running self waits to store a status (a lab agent restarted on a full disk
    died instead, again and again: found by lab soak), then tries again. Ctrl-C stops."""
    from an_agent.errors import StateFull

    said = False
    while True:
        try:
            return start()
        except StateFull as exc:
            if not said:
                _say(f"an-agent: {exc}; waiting for space")
                said = True
            time.sleep(FULL_DISK_POLL_S)


def _say(line: str) -> None:
    """A status line on stderr. A lab agent's stderr is its log in its state directory: when that disk is
    full the line is lost, and the agent goes on (found by lab soak: agents restarted on a full disk died
    writing "serving", with code 1 and no word anywhere)."""
    with contextlib.suppress(OSError):
        print(line, file=sys.stderr, flush=True)
