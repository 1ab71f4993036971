"""The ``an-agent`` command line.

Each command group lives in its own module of this package and exposes
``register(subparsers)``; `main` wires them together. Output conventions for
every command: a human table by default, ``--json`` for scripts (one JSON
document on stdout), messages for people on stderr (each refusal says what to
do next), no colour, exit code 0 on success, 1 when the request was refused
(e.g. an <rpc-error>), 2 for usage or input errors, 3 when the agent could not
be reached, 130 after Ctrl-C and 141 when the reader of stdout went away
(``an-agent ... | head``), as a shell reports a process ended by SIGINT or
SIGPIPE. `console_main` (the installed ``an-agent``) ends by those signals
themselves, so a calling script stops too.

Start-up imports only what parsing needs: shell completion and ``--help`` must
never load the embedding model (torch); handlers import their heavy parts.
"""

from __future__ import annotations

import argparse
import faulthandler
import importlib
import os
import select
import signal
import sys
from collections.abc import Sequence
from typing import NoReturn

from an_agent.errors import (
    AnAgentError,
    AuthError,
    ConfigError,
    ConnectError,
    RequestTimeout,
    RpcError,
    SchemaError,
    TransportError,
)

# Command-group modules, in the order their commands appear in --help.
_GROUPS = (
    "serve",
    "users",
    "profile",
    "task",
    "agents",
    "yang",
    "schema",
    "lab",
    "trace",
    "copilot",
    "conformance",
    "completion",
)

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
EXIT_INTERRUPTED = 128 + signal.SIGINT  # 130
EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE  # 141

_DEEPEST = "_an_agent_deepest_parser"


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors come from the command they concern and name its --help.

    argparse reports an unknown option of ``an-agent task assign`` as the top-level parser's error,
    with the top-level usage; each parser here notes itself as the deepest one that parsed, and the
    top level reports leftovers through that one.
    """

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if not hasattr(parsed, _DEEPEST):  # a subcommand's parser finishes before its parents
            setattr(parsed, _DEEPEST, self)
        return parsed, extras

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        deepest: argparse.ArgumentParser = vars(parsed).pop(_DEEPEST, self)
        if extras:
            deepest.error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\nRun '{self.prog} --help' for what it takes.\n")


def version() -> str:
    """The installed distribution's version (package metadata), as ``--version`` prints it."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("an-agent")
    except PackageNotFoundError:  # running from a source tree that was never installed
        from an_agent import __version__

        return f"{__version__} (not installed)"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="an-agent",
        description="Autonomous-network agents that serve draft-wang-nmrg-magent-im over NETCONF and A2A "
        "and talk to each other as NETCONF (or A2A) clients. Run 'an-agent COMMAND --help' for a command.",
    )
    parser.add_argument("--version", action="version", version=f"an-agent {version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in _GROUPS:
        try:
            module = importlib.import_module(f"an_agent.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"an_agent.cli.{name}":
                continue  # that command group is not part of this build
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Run the CLI; returns the process exit code (130 after Ctrl-C, 141 when stdout's reader left).

    ``parser``: one `build_parser` made before (the lab's template process builds it once for its agents).
    """
    args = argparse.Namespace()
    try:
        args = (parser or build_parser()).parse_args(argv)
        code: int = args.handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # a socket, not our output: a bug to see, not a reader that left
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except AnAgentError as exc:
        return _report(exc, args)


def console_main() -> NoReturn:
    """The ``an-agent`` program: `main`, then end by SIGINT or SIGPIPE itself when that is what ended it.

    A shell (or ``make``, or ``xargs``) tells "interrupted" from "failed" by how a child ended, not by
    its exit code: re-raising the signal with its default action is what well-behaved tools do.
    """
    # A lab or agent that seems hung can be asked where it is without stopping it: `kill -USR2 PID`
    # prints the stack of every thread to its stderr (its log for an agent of a lab).
    faulthandler.register(signal.SIGUSR2, all_threads=True)
    code = main()
    for signum, exit_code in ((signal.SIGINT, EXIT_INTERRUPTED), (signal.SIGPIPE, EXIT_BROKEN_PIPE)):
        if code == exit_code:
            sys.stderr.flush()
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
    sys.exit(code)


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader closed it (poll reports POLLERR on its write end)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no descriptor (captured), or no poll on this system
        return False


def _silence_stdout() -> None:
    # Python flushes stdout once more at exit, which would fail again and print a warning.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a file descriptor (tests capture it)
        pass


def _report(exc: AnAgentError, args: argparse.Namespace) -> int:
    """Print the error for a person, with what to do next; the exit code for its kind."""
    if isinstance(exc, RpcError):
        print(f"an-agent: the agent refused the request: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    print(f"an-agent: {exc}", file=sys.stderr)
    if isinstance(exc, SchemaError):
        for problem in exc.problems:
            print(f"  - {problem}", file=sys.stderr)
    hint = _hint(exc, args)
    if hint:
        print(f"an-agent: {hint}", file=sys.stderr)
    if isinstance(exc, TransportError):
        return EXIT_UNREACHABLE
    if isinstance(exc, ConfigError):
        return EXIT_USAGE
    return EXIT_REFUSED


def _hint(exc: AnAgentError, args: argparse.Namespace) -> str:
    """What a person can do next about ``exc`` from a client command, or '' when the message says it all."""
    if getattr(args, "command", None) in ("serve", "lab") or not hasattr(args, "host"):
        return ""
    a2a = getattr(args, "a2a", None)
    where = a2a or f"{args.host}:{args.port}"
    if isinstance(exc, AuthError):
        return "check --user and --password or --key (defaults from AN_AGENT_USER, AN_AGENT_PASSWORD)"
    if isinstance(exc, ConnectError):
        if a2a:
            return (
                f"is an agent serving A2A at {where}? ('an-agent serve --a2a-port PORT'; "
                "--a2a-trust for its certificate)"
            )
        return (
            f"is an agent serving NETCONF at {where}? Start one with 'an-agent serve', or point at it with "
            "--host/--port (or AN_AGENT_HOST/AN_AGENT_PORT)"
        )
    if isinstance(exc, RequestTimeout):
        return "the agent is slow to answer: try a longer --timeout"
    return ""


if __name__ == "__main__":
    console_main()
