"""HTTPS for a lab's A2A links: a certificate per agent, and the bundle of them every agent trusts.

Before its agents start, the lab makes each A2A-serving agent's certificate in the agent's own state
directory (`an_agent.a2a.tls.load_or_create_certificate`: self-signed EC P-256 naming the address the agent
listens on, ``a2a-cert.pem``/``a2a-key.pem``, 0600 in a 0700 directory) and writes every certificate into
one file, ``STATE/a2a-trust.pem`` (0600): the only anchors an agent's A2A client trusts. The agent's
server finds its certificate where it would have generated one (it serves it as is); a peer verifies the
chain and the host name against the bundle, never unverified. A lab over several hosts (``hosts:``)
keeps plain HTTP: each host would only know its own agents' certificates.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from an_agent._files import write_private
from an_agent.a2a.tls import load_or_create_certificate

TRUST_FILE = "a2a-trust.pem"


def lab_a2a_certificates(state_dir: Path, agents: Iterable[tuple[Path, str]]) -> Path:
    """Each ``(agent state directory, listening host)`` gets its certificate; returns the trust bundle."""
    pems = [load_or_create_certificate(agent_dir, host).cert.read_bytes() for agent_dir, host in agents]
    path = state_dir / TRUST_FILE
    write_private(path, b"".join(pems))
    return path


def a2a_url(host: str, port: int, trust: Path | None) -> str:
    """An agent's A2A URL: ``https://`` when the lab made certificates (``trust``), else ``http://``."""
    return f"{'https' if trust is not None else 'http'}://{host}:{port}"
