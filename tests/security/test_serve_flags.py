"""`an-agent serve` accepts the hardening flags the issue names and passes them on."""

from __future__ import annotations

import pytest

from an_agent.cli import build_parser


def test_serve_accepts_transport_limits() -> None:
    args = build_parser().parse_args(
        ["serve", "--max-message-bytes", "65536", "--hello-timeout", "5", "--idle-timeout", "0"]
    )
    assert (args.max_message_bytes, args.hello_timeout, args.idle_timeout) == (65536, 5.0, 0.0)


@pytest.mark.parametrize(
    "flag,value", [("--max-message-bytes", "12"), ("--hello-timeout", "-1"), ("--idle-timeout", "x")]
)
def test_serve_refuses_bad_limits(flag: str, value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(["serve", flag, value])
    assert exit_info.value.code == 2
    assert flag in capsys.readouterr().err


def test_notification_retention_takes_units() -> None:
    for text, seconds in (("7d", 604800.0), ("12h", 43200.0), ("90m", 5400.0), ("30", 30.0), ("0", 0.0)):
        assert build_parser().parse_args(["serve", "--notification-retention", text]).notification_retention == seconds
