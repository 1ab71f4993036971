"""The A2A face's TLS certificate: generated on first start like the SSH host key, or given.

`load_or_create_certificate` keeps a self-signed certificate and its private key in the state directory
(``a2a-cert.pem``, ``a2a-key.pem``, both mode 0600 in a 0700 directory). The certificate names the
listening host (IP address or DNS name) plus ``localhost``/``127.0.0.1``/``::1`` as subject alternative
names, so a client that trusts this one file (``--a2a-trust FILE``, `A2AAgentClient`'s ``trust``) can
verify the hostname: nothing is accepted unverified. A stored certificate that does not name the host any
more, or that expires within a week, is replaced. A given pair (``--a2a-cert/--a2a-key``) is only checked
for readability; renewing it is the operator's.

`fingerprint` is the SHA-256 of a certificate (DER), the value a person compares out of band.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from an_agent._files import write_private
from an_agent.errors import ConfigError

CERT_FILE = "a2a-cert.pem"
KEY_FILE = "a2a-key.pem"
_VALID_DAYS = 825  # what browsers accept for a server certificate
_RENEW_BEFORE = datetime.timedelta(days=7)
_LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class TlsFiles:
    """A certificate (PEM) and its private key (PEM) on disk."""

    cert: Path
    key: Path


def given_certificate(cert: Path, key: Path) -> TlsFiles:
    """An operator's certificate and key; `ConfigError` when either cannot be read as PEM."""
    try:
        x509.load_pem_x509_certificate(cert.read_bytes())
        serialization.load_pem_private_key(key.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise ConfigError(f"cannot use the A2A certificate {cert} with key {key}: {exc}") from None
    return TlsFiles(cert, key)


def load_or_create_certificate(state_dir: Path, host: str) -> TlsFiles:
    """The agent's own certificate for ``host`` in ``state_dir``, made (EC P-256, self-signed) when missing,
    unreadable, not naming ``host`` or about to expire (module docstring)."""
    files = TlsFiles(state_dir / CERT_FILE, state_dir / KEY_FILE)
    if _usable(files, host):
        return files
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    return create_certificate(files, host)


def create_certificate(files: TlsFiles, host: str) -> TlsFiles:
    """A new self-signed certificate for ``host`` (EC P-256, module docstring) written to ``files`` (0600)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name(
        [x509.NameAttribute(NameOID.COMMON_NAME, host), x509.NameAttribute(NameOID.ORGANIZATION_NAME, "an-agent")]
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=_VALID_DAYS))
        .add_extension(
            x509.SubjectAlternativeName([_general_name(n) for n in dict.fromkeys((host, *_LOCAL_NAMES))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)  # its own trust anchor
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, False, False, False), critical=True
        )  # digitalSignature (TLS), keyCertSign (it anchors itself)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    write_private(
        files.key,
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
    )
    write_private(files.cert, cert.public_bytes(serialization.Encoding.PEM))
    return files


def fingerprint(cert: Path) -> str:
    """SHA-256 of the certificate in ``cert`` (DER), as colon-separated hex."""
    der = x509.load_pem_x509_certificate(cert.read_bytes()).fingerprint(hashes.SHA256())
    return ":".join(f"{b:02X}" for b in der)


def _usable(files: TlsFiles, host: str) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(files.cert.read_bytes())
        serialization.load_pem_private_key(files.key.read_bytes(), password=None)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, TypeError, x509.ExtensionNotFound):
        return False
    if cert.not_valid_after_utc - _RENEW_BEFORE < datetime.datetime.now(datetime.UTC):
        return False
    return _general_name(host) in names


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)
