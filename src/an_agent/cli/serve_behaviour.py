"""``an-agent serve`` options that put an outsider's logic behind the agent (docs/bring-your-own-agent.md).

``--behaviour PACKAGE.MODULE:CLASS`` (or an ``an_agent.behaviours`` entry-point name), ``--behaviour-command
'PROGRAM ARGS'`` (the JSON-lines protocol of docs/behaviour-command.md) and ``--a2a-upstream URL`` (a remote
A2A agent behind this agent's NETCONF face). Each needs a profile (``--profile``), except the gateway, which
reads its profile from the upstream's agent card.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from an_agent.errors import ConfigError

if TYPE_CHECKING:
    from an_agent.agents.environment import SchemaMode
    from an_agent.model import AgentProfile
    from an_agent.runtime.behaviour import Behaviour

DEFAULT_COMMAND_TIMEOUT = 300.0


def add_arguments(parser: Any) -> None:
    group = parser.add_argument_group("bring your own agent (docs/bring-your-own-agent.md)")
    own = group.add_mutually_exclusive_group()
    own.add_argument(
        "--behaviour",
        metavar="PACKAGE.MODULE:CLASS",
        help="run this behaviour (a subclass of an_agent.agents.sdk.Behaviour or LabBehaviour of an installed "
        "package, or a name in the an_agent.behaviours entry-point group) under --profile",
    )
    own.add_argument(
        "--behaviour-command",
        metavar="'PROGRAM ARGS...'",
        help="run this program per task (split like a shell would, never run by one; cwd the state directory) "
        "speaking the JSON-lines protocol of docs/behaviour-command.md on its stdin/stdout; {python} is the "
        "Python an-agent runs on, {here} the current directory",
    )
    own.add_argument(
        "--a2a-upstream",
        metavar="URL",
        help="be the NETCONF face of the A2A v1 agent at URL: profile and templates from its agent card, each "
        "task relayed to it as an A2A message, its statuses and artifact brought back",
    )
    group.add_argument(
        "--behaviour-timeout",
        type=float,
        default=DEFAULT_COMMAND_TIMEOUT,
        metavar="SECONDS",
        help=f"with --behaviour-command: the longest one task's program may run (default {DEFAULT_COMMAND_TIMEOUT:g})",
    )
    group.add_argument(
        "--a2a-upstream-trust",
        type=Path,
        metavar="PEM",
        help="with --a2a-upstream over HTTPS: verify its certificate against this file",
    )
    group.add_argument(
        "--a2a-upstream-auth",
        metavar="USER:PASSWORD|FILE",
        help="with --a2a-upstream: HTTP Basic login, or a file holding a bearer token (first line)",
    )


def wants_own_behaviour(args: argparse.Namespace) -> bool:
    return bool(args.behaviour or args.behaviour_command or args.a2a_upstream)


def own_behaviour(
    args: argparse.Namespace, profile: AgentProfile | None, schemas: SchemaMode
) -> tuple[AgentProfile, Behaviour, list[Path]]:
    """The profile, behaviour and extra template directories the options ask for (`ConfigError` when they
    do not fit together)."""
    if args.a2a_upstream:
        if profile is not None:
            raise ConfigError("--a2a-upstream reads the profile from the upstream's agent card: give no --profile")
        return gateway_agent(args, schemas)
    if profile is None:
        raise ConfigError("--behaviour and --behaviour-command need --profile FILE (what the agent says it can do)")
    if args.behaviour_command:
        from an_agent.agents.command import CommandBehaviour
        from an_agent.lab.outsiders import expand_argv

        argv = list(expand_argv(shlex.split(args.behaviour_command), Path.cwd()))
        if not argv:
            raise ConfigError("--behaviour-command is empty")
        if args.behaviour_timeout <= 0:
            raise ConfigError("--behaviour-timeout must be a positive number of seconds")
        from an_agent.lab.agent import plugin_agent

        state_dir, timeout = args.state_dir.resolve(), args.behaviour_timeout
        built = plugin_agent(
            profile, lambda env, peers: CommandBehaviour(env, peers, argv, state_dir, timeout), schemas
        )
        return profile, built, []
    from an_agent.agents.plugins import load_behaviour_class
    from an_agent.agents.sdk import LabBehaviour

    cls = load_behaviour_class(args.behaviour)
    if issubclass(cls, LabBehaviour):
        from an_agent.lab.agent import plugin_agent

        return profile, plugin_agent(profile, cls, schemas), []
    try:
        return profile, cls(), []
    except TypeError as exc:
        raise ConfigError(f"behaviour {args.behaviour}: cannot be built with no argument: {exc}") from None


def gateway_agent(args: argparse.Namespace, schemas: SchemaMode) -> tuple[AgentProfile, Behaviour, list[Path]]:
    """``--a2a-upstream``: the profile from the card, the gateway behaviour, the projected templates' directory.

    The card is read once here (an upstream that is down or declares a schema the gateway cannot serve
    stops the start with a `ConfigError` saying so); that client serves the first tasks.
    """
    from an_agent.a2a.client import A2AAgentClient
    from an_agent.agents.gateway import GatewayBehaviour, card_profile, card_templates, open_upstream, write_templates
    from an_agent.lab.agent import plugin_agent
    from an_agent.schemas.registry import TemplateRegistry

    url, trust, auth = args.a2a_upstream, args.a2a_upstream_trust, _auth(args.a2a_upstream_auth)
    client = open_upstream(url, trust, auth)
    try:
        profile = card_profile(client.card)
        templates = card_templates(client.card, url)
    except BaseException:
        client.close()
        raise
    shipped = {t.schema_id for t in TemplateRegistry.default().templates()}
    directory = write_templates(templates, args.state_dir / "upstream-templates", shipped)
    first = [client]

    def reuse_then_reconnect() -> A2AAgentClient:
        return first.pop() if first else open_upstream(url, trust, auth)

    behaviour = plugin_agent(
        profile, lambda env, peers: GatewayBehaviour(env, peers, reuse_then_reconnect, url), schemas
    )
    served = [directory] if any(directory.glob("*.json")) else []  # the card's schemas may all be shipped ones
    return profile, behaviour, served


def _auth(value: str | None) -> tuple[str, str] | str | None:
    """``user:password`` -> Basic login; a file name -> its first line as a bearer token."""
    if value is None:
        return None
    path = Path(value)
    if path.is_file():
        from an_agent.lab.services import read_token

        return read_token(path, "--a2a-upstream-auth")
    user, sep, password = value.partition(":")
    if not sep or not user:
        raise ConfigError("--a2a-upstream-auth expects USER:PASSWORD or a file holding a bearer token")
    return (user, password)
