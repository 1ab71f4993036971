"""``an-agent conformance``: check a running agent, any implementation, through its public faces."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from an_agent.cli._common import print_json
from an_agent.errors import ConfigError

EPILOG = """\
sections (--only): netconf (NETCONF and YANG basics: RFC 6241, 6022, 7950, 8525), wang (draft-wang-nmrg-
magent-im data model and interaction), zhou (draft-zhou-structured-data-schema-interaction), a2a (A2A v1
card and the input/output-schemas extension). Without --allow-writes only reads are made; with it the
kit creates tasks (ids conformance-<random>-...), and the cleanup section deletes them at the end.

exit codes: 0 every MUST check passed (SHOULD failures and skips allowed), 1 a MUST check failed (an
unreachable or silent face fails its checks), 2 usage error.

examples:
  an-agent conformance --netconf 127.0.0.1:8830 --a2a http://127.0.0.1:8080 --user admin --password admin
  an-agent conformance --netconf lab-agent:830 --user lab --key ~/.ssh/id_ed25519 --only netconf,wang \\
      --allow-writes --junit conformance.xml --html conformance.html
"""


def register(subparsers: Any) -> None:
    from an_agent.conformance.checks import SELECTABLE

    parser = subparsers.add_parser(
        "conformance",
        help="check a running agent (any implementation) against the drafts and RFCs",
        description="Check a running agent, ours or anyone's, through the faces a peer uses: NETCONF and\n"
        "A2A. Each check names its source document and section, its level (MUST or SHOULD), and passes,\n"
        "fails or is skipped with the reason (what was sent, what came back, what was expected).\n"
        "The list of checks: docs/conformance.md.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--netconf", metavar="HOST:PORT", help="the agent's NETCONF face (SSH)")
    parser.add_argument("--a2a", metavar="URL", help="the agent's A2A base URL (its card is at URL/.well-known/...)")
    parser.add_argument(
        "--user", default=os.environ.get("AN_AGENT_USER", "admin"), help="user for both faces (default: admin)"
    )
    login = parser.add_mutually_exclusive_group()
    login.add_argument(
        "--password",
        default=None,
        help="password (SSH, and HTTP Basic on A2A; default: $AN_AGENT_PASSWORD, else admin)",
    )
    login.add_argument("--key", type=Path, metavar="FILE", help="SSH private key for NETCONF instead of a password")
    parser.add_argument("--a2a-trust", type=Path, metavar="PEM", help="certificate or CA to verify the A2A HTTPS with")
    parser.add_argument(
        "--allow-writes", action="store_true", help="also run the checks that create tasks (deleted at the end)"
    )
    parser.add_argument(
        "--only",
        metavar="SECTION,...",
        type=lambda text: _sections(text, SELECTABLE),
        help=f"run only these sections ({', '.join(SELECTABLE)}; default: all)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        default=30.0,
        help="seconds any one step may take (connect, request, wait for a notification or a task's end); "
        "a face silent that long fails its remaining checks (default: 30)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of text")
    parser.add_argument("--junit", type=Path, metavar="FILE", help="also write a JUnit XML report (for CI)")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML report")
    parser.set_defaults(handler=run)


def _sections(text: str, known: tuple[str, ...]) -> frozenset[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown section {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}"
        )
    return frozenset(names)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError("the timeout must be between 0 and 3600 seconds")
    return value


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--netconf wants HOST:PORT, not {text!r}")
    return host.strip("[]"), int(port)


def _write(path: Path, data: bytes) -> None:
    """Write a report file readable by its owner only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(path, 0o600)


def run(args: argparse.Namespace) -> int:
    from an_agent.conformance import SELECTABLE, Options, Target
    from an_agent.conformance import run as run_checks

    if not args.netconf and not args.a2a:
        raise ConfigError("give the agent's --netconf HOST:PORT, its --a2a URL, or both")
    if args.key is not None and not args.key.is_file():
        raise ConfigError(f"--key {args.key}: no such file")
    if args.a2a_trust is not None and not args.a2a_trust.is_file():
        raise ConfigError(f"--a2a-trust {args.a2a_trust}: no such file")
    password = None if args.key else (args.password or os.environ.get("AN_AGENT_PASSWORD", "admin"))
    target = Target(
        netconf=_address(args.netconf) if args.netconf else None,
        a2a=args.a2a.rstrip("/") if args.a2a else None,
        user=args.user,
        password=password,
        key=args.key,
        a2a_trust=args.a2a_trust,
    )
    options = Options(sections=args.only or frozenset(SELECTABLE), allow_writes=args.allow_writes, timeout=args.timeout)
    report = run_checks(target, options)
    try:
        if args.junit:
            _write(args.junit, report.to_junit())
        if args.html:
            _write(args.html, report.to_html().encode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot write the report: {exc}") from None
    if args.json:
        print_json(report.to_dict())
    else:
        sys.stdout.write(report.to_text())
    return 1 if report.must_failed else 0
