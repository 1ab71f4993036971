"""Lab A2A links over HTTPS (`an_agent.lab.certs`): a certificate per agent made by the lab, verified
against the lab's bundle only; ``--a2a-tls off`` keeps plain HTTP."""

from __future__ import annotations

import stat
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from labsupport import TOPOLOGIES, run

from an_agent.a2a.client import A2AAgentClient
from an_agent.errors import AnAgentError
from an_agent.lab.runner import Lab
from an_agent.lab.topology import load_topology

SHIPPED = TOPOLOGIES / "cross-domain-fault.yaml"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_lab_a2a_faces_serve_https_verified_against_the_lab_certificates(state_dir: Path) -> None:
    with Lab(load_topology(SHIPPED), state_dir, in_process=True) as lab:
        lab.start()
        url = lab.a2a_url_of("ip-fault")
        assert url is not None and url.startswith("https://127.0.0.1:")
        assert lab.a2a_trust == state_dir / "a2a-trust.pem" and _mode(lab.a2a_trust) == 0o600
        assert _mode(lab.agent_dir("ip-fault") / "a2a-key.pem") == 0o600
        user, password = lab.login_of("service-fault")
        with A2AAgentClient.connect(url, user, password, trust=lab.a2a_trust) as client:
            assert client.card["name"] == "ip-fault"
        # not trusted by the system's CAs: refused, never accepted unverified
        with pytest.raises(AnAgentError):
            A2AAgentClient.connect(url, user, password)
        # and plain HTTP is not served on that port
        plain = url.replace("https://", "http://") + "/.well-known/agent-card.json"
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            urllib.request.urlopen(plain, timeout=10).read()


def test_the_a2a_exchange_of_a_lab_run_goes_over_https(state_dir: Path) -> None:
    result = run(SHIPPED, state_dir, in_process=True)
    assert result["outcome"]["closed_loop"]
    link = [m for m in result["messages"] if (m["from"], m["to"]) == ("service-fault", "ip-fault")]
    assert [m["ok"] for m in link if m["operation"] in ("GET agent-card", "SendStreamingMessage", "GetTask")] == [
        True,
        True,
        True,
    ]
    assert (state_dir / "a2a-trust.pem").exists()


def test_a2a_tls_off_keeps_plain_http(state_dir: Path) -> None:
    with Lab(load_topology(SHIPPED), state_dir, in_process=True, a2a_tls=False) as lab:
        lab.start()
        url = lab.a2a_url_of("ip-fault")
        assert url is not None and url.startswith("http://")
        assert lab.a2a_trust is None and not (state_dir / "a2a-trust.pem").exists()
        with urllib.request.urlopen(url + "/.well-known/agent-card.json", timeout=10) as answer:
            assert b'"ip-fault"' in answer.read()


@pytest.mark.slow
def test_agent_processes_serve_and_verify_https(state_dir: Path) -> None:
    result = run(SHIPPED, state_dir)
    assert result["outcome"]["closed_loop"]
    log = (state_dir / "agents" / "ip-fault" / "agent.log").read_text(encoding="utf-8")
    assert "A2A on https://127.0.0.1:" in log
    assert any(
        m["operation"] == "SendStreamingMessage" and m["ok"] and m["to"] == "ip-fault" for m in result["messages"]
    )
