"""`an-agent conformance` as a command: usage errors exit 2 with a message, an unreachable agent exits 1,
a conformant face exits 0."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from an_agent.cli import main
from an_agent.model import AgentProfile
from an_agent.server import AgentServer, ServerConfig
from fake_embedder import FakeEmbedder
from support import TEST_PROFILE


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "give the agent's --netconf HOST:PORT, its --a2a URL, or both"),
        (["--netconf", "no-port"], "--netconf wants HOST:PORT, not 'no-port'"),
        (["--netconf", "127.0.0.1:830", "--key", "/nonexistent/key"], "--key /nonexistent/key: no such file"),
        (["--a2a", "https://x", "--a2a-trust", "/nonexistent.pem"], "--a2a-trust /nonexistent.pem: no such file"),
    ],
)
def test_usage_errors_exit_2_with_a_message(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--only", "netconf,bogus"], ["--timeout", "0"], ["--password", "x", "--key", "k"]])
def test_bad_options_are_refused_by_the_parser(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["conformance", "--netconf", "127.0.0.1:830", *argv])
    assert exit_.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_an_unreachable_agent_fails_its_checks_with_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    port = _closed_port()
    code = main(["conformance", "--netconf", f"127.0.0.1:{port}", "--only", "netconf", "--timeout", "2"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"cannot open a NETCONF session to 127.0.0.1:{port}" in out
    assert "FAIL  MUST    netconf.hello-base" in out
    assert "not conformant" in out.splitlines()[-1]
    assert "draft-wang" not in out  # --only netconf


def test_a_conformant_a2a_face_over_https_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = AgentProfile.from_dict(TEST_PROFILE)
    # FakeEmbedder: the A2A face's text-mapping warm-up would load torch in a thread (test_conformance_roles.py).
    config = ServerConfig(
        tmp_path / "state", port=0, profile=profile, a2a_port=0, a2a_tls=True, embedder=FakeEmbedder()
    )
    with AgentServer(config) as server:
        assert server.a2a is not None and server.a2a.url.startswith("https://")
        argv = ["conformance", "--a2a", server.a2a.url, "--a2a-trust", str(tmp_path / "state" / "a2a-cert.pem")]
        code = main([*argv, "--only", "a2a", "--timeout", "10"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS  MUST    a2a.card " in out and out.splitlines()[-1].endswith(": conformant")
    assert "SKIP  MUST    a2a.ext-task" in out and "run with --allow-writes" in out
