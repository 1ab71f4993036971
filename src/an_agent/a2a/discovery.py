"""An agent card as its agent serves it, fetched raw; and how every A2A client of ours verifies HTTPS and
finds its way (the proxies of the environment, `proxy_mounts`).

`fetch_card` is for tools that judge the card itself (``an-agent conformance``): the SDK's card
(`an_agent.a2a.sdk.parse_card`) drops what its protobuf has no field for, such as the
input/output-schemas extension's root ``schemas``, and refuses a card it cannot read. Here the answer
comes back whatever it is: status, content type, text, and the JSON when there is some.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

# httpx's own reading of HTTP_PROXY, HTTPS_PROXY, ALL_PROXY and NO_PROXY (either case): the one a client
# built without a transport of its own applies; ours have one (keepalive, verification), so they apply it
# themselves (`proxy_mounts`). Private to httpx, pinned in requirements.lock; tests/a2a/test_a2a_proxy.py
# fails if it changes.
from httpx._utils import get_environment_proxies

from an_agent.a2a.sdk import from_a2a_error
from an_agent.errors import ConfigError

CARD_PATH = "/.well-known/agent-card.json"
"""Where an A2A agent serves its card (A2A spec section 8.2), below its base URL."""

LOOPBACK_ROUTES = ("all://127.0.0.1", "all://[::1]", "all://localhost")
"""This host's own names, never sent to a proxy: the proxy would read them as its own host."""

T = TypeVar("T")


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
    verify = verification(trust)

    def transport(proxy: str | None = None) -> httpx.HTTPTransport:
        return httpx.HTTPTransport(verify=verify, proxy=proxy)

    mounts = proxy_mounts(transport)  # the routes `A2AAgentClient` takes
    try:
        with httpx.Client(timeout=timeout, auth=auth, transport=transport(), mounts=mounts) as http:
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


def proxy_mounts(through: Callable[[str], T]) -> dict[str, T | None]:
    """The proxies the environment names, as httpx ``mounts`` for a client with a transport of its own.

    What httpx applies to a client built without a transport (``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY``, ``NO_PROXY``, upper or lower case): ``through(proxy_url)`` builds the transport to each
    proxy (with the same verification and socket options as the client's direct one); a host that
    ``NO_PROXY`` lists maps to None, which is the client's direct transport. 127.0.0.1, ::1 and
    localhost are always direct. Empty when the environment names no proxy. `ConfigError` for a proxy
    that cannot be used (a scheme httpx does not speak; SOCKS, whose package is not installed).
    """
    found = get_environment_proxies()
    if not any(found.values()):
        return {}
    mounts: dict[str, T | None] = {}
    for pattern, proxy in found.items():
        try:
            mounts[pattern] = None if proxy is None else through(proxy)
        except (ImportError, ValueError) as exc:  # httpx's, at construction: the environment is wrong
            raise ConfigError(f"cannot use the proxy {proxy} (from the environment, for {pattern}): {exc}") from None
    mounts.update(dict.fromkeys(LOOPBACK_ROUTES))
    return mounts
