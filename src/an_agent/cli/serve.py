"""``an-agent serve``: run one agent as a NETCONF server until interrupted (its options: `an_agent.cli.serve_args`)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from an_agent.cli import observe, serve_args, serve_behaviour
from an_agent.cli.serve_args import parse_users
from an_agent.errors import ConfigError

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


def register(subparsers: Any) -> None:
    """Add ``an-agent serve`` (its options: `an_agent.cli.serve_args`)."""
    serve_args.add_parser(subparsers).set_defaults(handler=run)


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
