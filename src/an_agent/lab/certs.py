"""HTTPS for a lab's A2A links: a certificate per agent, and the bundle of them every agent trusts.

Before its agents start, the lab makes each A2A-serving agent's certificate in the agent's own state
directory (`an_agent.a2a.tls.load_or_create_certificate`: self-signed EC P-256 naming the address the agent
listens on, ``a2a-cert.pem``/``a2a-key.pem``, 0600 in a 0700 directory) and writes every certificate into
one file, ``STATE/a2a-trust.pem`` (0600): the only anchors an agent's A2A client trusts. The agent's
server finds its certificate where it would have generated one (it serves it as is); a peer verifies the
chain and the host name against the bundle, never unverified.

A lab over several hosts (``hosts:``): the first host makes the certificates of every host's A2A agents
(those of other hosts in ``STATE/remote-a2a/<agent>``, naming the address their host gives them), and
each agent gets what it needs in the control channel's ``hello`` (`hello_files`; TLS 1.3, pinned by the
lab's secret): the bundle, and for an agent of another host its own certificate and key, which
`write_hello_files` puts in its state directory (0600) before it serves.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from an_agent._files import write_private
from an_agent.a2a.tls import CERT_FILE, KEY_FILE, load_or_create_certificate

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


def hello_files(trust: Path | None, own: Path | None) -> dict[str, str]:
    """What ``hello`` gives an agent (module docstring): the bundle's text, and the certificate and key in
    ``own`` (an agent of another host's directory here; None for an agent of this host, which has its own)."""
    if trust is None:
        return {}
    files = {"a2a_trust_pem": trust.read_text(encoding="ascii")}
    if own is not None:
        files["a2a_cert_pem"] = (own / CERT_FILE).read_text(encoding="ascii")
        files["a2a_key_pem"] = (own / KEY_FILE).read_text(encoding="ascii")
    return files


def write_hello_files(hello: dict[str, object], state_dir: Path) -> Path | None:
    """Write what `hello_files` gave into an agent's ``state_dir`` (0600 files, a 0700 directory): the bundle
    as ``a2a-trust.pem`` (returned; None when the lab runs plain HTTP) and, when given, the agent's own
    certificate and key where its A2A server looks for them."""
    bundle = hello.get("a2a_trust_pem")
    if not isinstance(bundle, str):
        return None
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    for key, name in (("a2a_cert_pem", CERT_FILE), ("a2a_key_pem", KEY_FILE)):
        value = hello.get(key)
        if isinstance(value, str):
            write_private(state_dir / name, value.encode("ascii"))
    path = state_dir / TRUST_FILE
    write_private(path, bundle.encode("ascii"))
    return path
