"""The command line of ``an-agent serve``: its description, its options, and their checks.

Apart from `an_agent.cli.serve`, which turns the parsed options into a
running agent, because the options are a contract of their own (documented
by ``--help`` and the generated CLI reference) and are read without starting
anything: number, duration and ``--user`` parsing are plain functions of text.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from an_agent.cli import observe, serve_behaviour
from an_agent.errors import ConfigError
from an_agent.runtime.workers import INPUT_WAIT

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


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``serve`` to ``subparsers`` with every option it takes; returns its parser (the caller sets its handler)."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
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
    return parser


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
