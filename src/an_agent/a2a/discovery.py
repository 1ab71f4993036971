"""An agent card as its agent serves it, fetched raw; and how every A2A client of ours verifies HTTPS.

`fetch_card` is for tools that judge the card itself (``an-agent conformance``): the SDK's card
(`an_agent.a2a.sdk.parse_card`) drops what its protobuf has no field for, such as the
input/output-schemas extension's root ``schemas``, and refuses a card it cannot read. Here the answer
comes back whatever it is: status, content type, text, and the JSON when there is some.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from an_agent.a2a.sdk import from_a2a_error
from an_agent.errors import ConfigError

CARD_PATH = "/.well-known/agent-card.json"
"""Where an A2A agent serves its card (A2A spec section 8.2), below its base URL."""


@dataclass(frozen=True)
class CardDocument:
    """What an agent serves at its well-known card path, as received (`fetch_card`)."""

    url: str
    status: int
    content_type: str
    text: str
    document: Any
    """The parsed JSON (any JSON value), or None when the body is not JSON."""


def fetch_card(
    url: str,
    *,
    timeout: float = 30.0,
    trust: Path | None = None,
    username: str | None = None,
    password: str | None = None,
) -> CardDocument:
    """GET ``<url>/.well-known/agent-card.json`` and return the answer as it is, whatever its status.

    No SDK involved: for tools that judge the card itself (the SDK's card drops what its protobuf has no
    field for, such as the input/output-schemas extension's ``schemas``). HTTPS is verified as in
    `A2AAgentClient`. Raises `ConnectError` (unreachable, TLS failure) or `RequestTimeout`.
    """
    address = url.rstrip("/") + CARD_PATH
    auth = (username, password or "") if username else None
    try:
        with httpx.Client(verify=verification(trust), timeout=timeout, auth=auth) as http:
            reply = http.get(address)
    except Exception as exc:  # httpx's, translated at the one boundary
        raise from_a2a_error(exc) from None
    try:
        document: Any = reply.json()
    except ValueError:
        document = None
    return CardDocument(address, reply.status_code, reply.headers.get("content-type", ""), reply.text, document)


def verification(trust: Path | None) -> ssl.SSLContext | bool:
    """How HTTPS peers are verified: against ``trust`` only when given, else the system's CAs (always verified).

    `ConfigError` when ``trust`` cannot be read.
    """
    if trust is None:
        return True
    try:
        return ssl.create_default_context(cafile=str(trust))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot trust {trust}: {exc}") from None
