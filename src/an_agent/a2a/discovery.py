"""An agent card as its agent serves it, fetched raw; and how every A2A client of ours verifies HTTPS and
finds its way (the proxies of the environment, `proxy_mounts`).

`fetch_card` is for tools that judge the card itself (``an-agent conformance``): the SDK's card
(`an_agent.a2a.sdk.parse_card`) drops what its protobuf has no field for, such as the
input/output-schemas extension's root ``schemas``, and refuses a card it cannot read. Here the answer
comes back whatever it is: status, content type, text, and the JSON when there is some.
"""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

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

T = TypeVar("T", httpx.BaseTransport, httpx.AsyncBaseTransport)
Transport: TypeAlias = httpx.BaseTransport | httpx.AsyncBaseTransport
Network: TypeAlias = ipaddress.IPv4Network | ipaddress.IPv6Network


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

    direct = transport()
    mounts = proxy_mounts(direct, transport)  # the routes `A2AAgentClient` takes
    try:
        with httpx.Client(timeout=timeout, auth=auth, transport=direct, mounts=mounts) as http:
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


def proxy_mounts(direct: T, through: Callable[[str], T]) -> dict[str, T | None]:
    """The proxies the environment names, as httpx ``mounts`` for a client whose own transport is ``direct``.

    What httpx applies to a client built without a transport (``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY``, ``NO_PROXY``, upper or lower case, every entry form httpx reads): ``through(proxy_url)``
    builds the transport to each proxy (with the same verification and socket options as ``direct``); a
    host that ``NO_PROXY`` lists maps to None, which is the client's direct transport. This host's own
    names (`is_this_host`: 127.0.0.0/8, ``::1``, ``localhost``) and the address ranges ``NO_PROXY`` lists
    (``10.0.0.0/8``, ``fd00::/8``, as curl reads them; httpx takes the first for its one address 10.0.0.0
    and fails on the second) always go through ``direct``, whatever the proxy patterns say. Empty when
    the environment names no proxy. `ConfigError` for a proxy that cannot be used (a scheme httpx does
    not speak; SOCKS, whose package is not installed).
    """
    found = get_environment_proxies()
    if not any(found.values()):
        return {}
    ranges = {pattern: _range(pattern) for pattern, proxy in found.items() if proxy is None}
    direct_ranges = tuple(network for network in ranges.values() if network is not None)
    mounts: dict[str, T | None] = {}
    for pattern, proxy in found.items():
        if ranges.get(pattern) is not None:
            continue  # a NO_PROXY range: every route takes it direct (`_Bypass`)
        try:
            mounts[pattern] = None if proxy is None else _Bypass(through(proxy), direct, direct_ranges)
        except (ImportError, ValueError) as exc:  # httpx's, at construction: the environment is wrong
            raise ConfigError(f"cannot use the proxy {proxy} (from the environment, for {pattern}): {exc}") from None
    return mounts


def is_this_host(host: str) -> bool:
    """Whether a URL's ``host`` names this host, by its spelling alone (nothing is looked up): an address
    of 127.0.0.0/8 (also IPv4-mapped, ``::ffff:127.0.0.2``), ``::1`` (with or without brackets), or
    ``localhost`` in any case, with or without the trailing dot. A proxy would read these as its own host.
    """
    name = host.strip("[]").removesuffix(".").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def _range(pattern: str) -> Network | None:
    """The address range of a ``NO_PROXY`` entry as httpx's pattern holds it (``all://10.0.0.0/8``,
    ``all://[fd00::/8]``); None for any other entry (a name, a domain, one address)."""
    entry = pattern.removeprefix("all://").strip("[]")
    if "/" not in entry:
        return None
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return None


class _Bypass(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """A route through a proxy (``proxied``) that takes this host's own names and the ``ranges`` of
    ``NO_PROXY`` to the client's ``direct`` transport instead: httpx's URL patterns cannot say 127.0.0.0/8, a
    name in any case or an address range, and an ``all://`` proxy pattern would take them first. Sync or
    asyncio, as the two transports it is given."""

    def __init__(self, proxied: Transport, direct: Transport, ranges: tuple[Network, ...]) -> None:
        self._proxied = proxied
        self._direct = direct
        self._ranges = ranges

    def _route(self, request: httpx.Request) -> Transport:
        host = request.url.host
        return self._direct if is_this_host(host) or self._in_ranges(host) else self._proxied

    def _in_ranges(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            return False  # a name: NO_PROXY's names are httpx's patterns
        return any(address in network for network in self._ranges)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        route = self._route(request)
        assert isinstance(route, httpx.BaseTransport)
        return route.handle_request(request)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        route = self._route(request)
        assert isinstance(route, httpx.AsyncBaseTransport)
        return await route.handle_async_request(request)

    def close(self) -> None:  # the direct transport is the client's own: the client closes it
        assert isinstance(self._proxied, httpx.BaseTransport)
        self._proxied.close()

    async def aclose(self) -> None:
        assert isinstance(self._proxied, httpx.AsyncBaseTransport)
        await self._proxied.aclose()
