"""The HTTP side of the A2A face: the card route, authentication, TLS, uvicorn in a thread.

The A2A routes themselves come from `an_agent.a2a.face` (the SDK's); this module needs no SDK import.
Every request but the card's carries HTTP Basic credentials checked against the agent's users (the
NETCONF ones) or a bearer token of one of those users (`BasicAuth`, `Logins.token_owner`); the card at
``/.well-known/agent-card.json`` is public and declares both schemes. With a certificate
(`an_agent.a2a.tls`) the face serves HTTPS only.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import json
import logging
import secrets
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from an_agent.a2a.card import CardOptions, build_card
from an_agent.a2a.observed import RequestMetrics
from an_agent.a2a.routes import JSONRPC_PATH, REST_PREFIX, sdk_routes
from an_agent.a2a.strict import BodyLimit, StrictParams
from an_agent.a2a.tls import TlsFiles
from an_agent.access.logins import LoginThrottle
from an_agent.errors import ConfigError
from an_agent.runtime.operations import Operations
from an_agent.runtime.principal import Principal
from an_agent.runtime.text_input import served_templates
from an_agent.schemas.languages import DEFAULT_LANGUAGE, localize, pick_language

CARD_PATH = "/.well-known/agent-card.json"
MAX_BODY_BYTES = 16 * 1024 * 1024
"""The largest request body taken by default (`BodyLimit`; ``an-agent serve --max-message-bytes``)."""

log = logging.getLogger(__name__)


PasswordCheck = Callable[[str, str], bool]
"""Whether a (user, password) pair is valid: the agent's one password check (hash or plain, constant time)."""


class BasicAuth:
    """ASGI middleware: HTTP Basic against the agent's users (the NETCONF ones), or a bearer token of one of
    them (``token_owner``, None: no tokens); the card path stays public.

    Passwords are checked by ``check_password`` (the same check as SSH logins: scrypt hashes from the
    users file or plain ones). A hash check costs ~50 ms, and an HTTP client sends the credentials with
    every request, so a pair that passed is remembered as a keyed digest (never the password) for
    `remember_for` seconds. Failures are logged with user and source, and answered after the delay of
    the agent's `LoginThrottle` (shared with the SSH face).
    """

    remember_for = 300.0

    def __init__(
        self,
        app: ASGIApp,
        check_password: PasswordCheck,
        public: Collection[str],
        throttle: LoginThrottle,
        token_owner: Callable[[str], str | None] | None = None,
    ) -> None:
        self.app = app
        self.check_password = check_password
        self.token_owner = token_owner
        self.public = frozenset(public)
        self.throttle = throttle
        self._key = secrets.token_bytes(32)  # per process: digests are useless outside it
        self._verified: OrderedDict[tuple[str, bytes], float] = OrderedDict()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in self.public:
            await self.app(scope, receive, send)
            return
        user = await self._user(dict(scope["headers"]).get(b"authorization", b""), _source(scope))
        if user is None:
            challenges = ['Basic realm="an-agent"'] + (['Bearer realm="an-agent"'] if self.token_owner else [])
            response = Response(
                "authentication required", status_code=401, headers={"WWW-Authenticate": ", ".join(challenges)}
            )
            await response(scope, receive, send)
            return
        scope["user"] = _User(user)
        await self.app(scope, receive, send)

    async def _user(self, header: bytes, source: str) -> str | None:
        scheme, _, value = header.decode("latin-1").partition(" ")
        if scheme.lower() == "bearer" and self.token_owner is not None and value.strip():
            owner = self.token_owner(value.strip())  # a SHA-256 and a lookup: no thread needed
            if owner is not None:
                return owner
            delay = self.throttle.failed(source, "http")
            log.warning("failed A2A login with a bearer token from %s; answered after %.2f s", source, delay)
            await asyncio.sleep(delay)
            return None
        if scheme.lower() != "basic":
            return None
        try:
            name, sep, password = base64.b64decode(value.strip(), validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            name, sep, password = "", "", ""
        if sep:
            if self._remembered(name, password):
                return name
            # The hash check runs in a thread: the event loop serves other requests meanwhile.
            valid: bool = await asyncio.to_thread(self.check_password, name, password)
            if valid:
                self._remember(name, password)
                return name
        delay = self.throttle.failed(source, "http")
        log.warning("failed A2A login for user %r from %s (HTTP Basic); answered after %.2f s", name, source, delay)
        await asyncio.sleep(delay)
        return None

    def _digest(self, name: str, password: str) -> tuple[str, bytes]:
        return name, hmac.digest(self._key, f"{name}\0{password}".encode(), "sha256")

    def _remembered(self, name: str, password: str) -> bool:
        key = self._digest(name, password)
        until = self._verified.get(key)
        if until is None or until < time.monotonic():
            self._verified.pop(key, None)
            return False
        return True

    def _remember(self, name: str, password: str) -> None:
        self._verified[self._digest(name, password)] = time.monotonic() + self.remember_for
        while len(self._verified) > 1024:  # bounded: a flood of valid users cannot grow memory
            self._verified.popitem(last=False)


@dataclass(frozen=True)
class Logins:
    """Who may use the A2A face, and as whom: the same users, check and throttle as the NETCONF face."""

    check_password: PasswordCheck
    principal_of: Callable[[str], Principal]
    """The principal (groups, agents it may speak for) of an authenticated user: NACM applies to it."""
    throttle: LoginThrottle
    token_owner: Callable[[str], str | None] | None = None
    """The user a bearer token belongs to (users file ``tokens``); None: the face takes no tokens."""


def _source(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "?"


@dataclass(frozen=True)
class _User:
    """What Starlette's ``request.user`` holds (the SDK reads ``is_authenticated`` and ``display_name``)."""

    display_name: str
    is_authenticated: bool = True


class LiveCard:
    """The card of an agent as its templates are now: rebuilt when they changed (a patch), else reused."""

    def __init__(self, operations: Operations) -> None:
        self.operations = operations
        self._lock = threading.Lock()
        self._built: dict[str, tuple[tuple[str, ...], CardOptions, dict[str, Any]]] = {}

    def declared(self) -> frozenset[str]:
        """The schema_ids the agent serves now (what a data part may name)."""
        return frozenset(t.schema_id for t in served_templates(self.operations.schemas))

    def card(self, options: CardOptions, language: str = DEFAULT_LANGUAGE) -> dict[str, Any]:
        """The card for ``options`` and the templates served now, their descriptions in ``language`` (a
        shipped one, `an_agent.schemas.languages`); ~1 ms to build, so built on change, per language."""
        templates = served_templates(self.operations.schemas)
        version = tuple(json.dumps(t.to_dict(), sort_keys=True) for t in templates)
        with self._lock:
            built = self._built.get(language)
            if built is not None and built[0] == version and built[1] == options:
                return built[2]
        card = build_card(self.operations.profile, [localize(t, language) for t in templates], options)
        with self._lock:
            self._built[language] = (version, options, card)
        return card


class A2AServer:
    """The A2A face of one agent on ``host:port`` (uvicorn in a thread of its own)."""

    @classmethod
    def for_agent(
        cls,
        operations: Operations,
        logins: Logins,
        host: str,
        port: int,
        netconf_port: int,
        tls: TlsFiles | None = None,
        advertise: str | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> A2AServer:
        """The face of ``operations`` with its card: the profile, the served templates, both faces' URLs.

        The card's URLs name ``advertise`` (where clients reach the agent) when given, else ``host``.

        ``tls`` serves HTTPS with that certificate (None: plain HTTP, for a lab's loopback links). The card
        and the declared schemas follow the templates: a schema patch published while the agent runs
        (schema-update) shows in the next card served, with no restart (`LiveCard`).
        """
        live = LiveCard(operations)
        scheme = "https" if tls is not None else "http"
        public = _url_host(advertise or host)

        def card(bound: int) -> Callable[[str], dict[str, Any]]:
            options = CardOptions(
                jsonrpc_url=f"{scheme}://{public}:{bound}{JSONRPC_PATH}",
                http_json_url=f"{scheme}://{public}:{bound}{REST_PREFIX}",
                netconf_url=f"ssh://{public}:{netconf_port}",
                basic_auth=True,
                bearer_auth=logins.token_owner is not None,
            )
            return lambda language: live.card(options, language)

        return cls(
            operations,
            card,
            live.declared,
            logins,
            host,
            port,
            tls=tls,
            advertise=advertise,
            max_body_bytes=max_body_bytes,
        )

    def __init__(
        self,
        operations: Operations,
        card: Callable[[int], Callable[[str], dict[str, Any]]],
        declared_schemas: Callable[[], Collection[str]],
        logins: Logins,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: TlsFiles | None = None,
        advertise: str | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self._socket = socket.create_server((host, port), family=family)  # only the address asked for
        except OSError as exc:
            raise ConfigError(f"cannot listen on {host}:{port} for the A2A face: {exc.strerror}") from None
        # Accepted connections inherit it: without, each small reply waits ~40 ms for a delayed ACK.
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        self.certificate: Path | None = tls.cert if tls is not None else None
        """The certificate served (what a client trusts), None over plain HTTP."""
        self.url = f"{'https' if tls is not None else 'http'}://{_url_host(advertise or host)}:{self.port}"
        """The base URL of the face as clients reach it (``advertise``, else ``host``; the card is at
        ``url + CARD_PATH``)."""
        self.card = card(self.port)
        routes = [
            Route(CARD_PATH, self._card, methods=["GET"]),  # first: the REST routes mount /{tenant}
            *sdk_routes(operations, declared_schemas, logins.principal_of),
        ]
        app = RequestMetrics(
            BasicAuth(  # the body bound inside: an unauthenticated request is refused before its body is read
                BodyLimit(StrictParams(Starlette(routes=routes), JSONRPC_PATH), max_body_bytes),
                logins.check_password,
                {CARD_PATH},
                logins.throttle,
                logins.token_owner,
            ),
            JSONRPC_PATH,
            CARD_PATH,
        )
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=2,
            ssl_certfile=str(tls.cert) if tls is not None else None,
            ssl_keyfile=str(tls.key) if tls is not None else None,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"a2a-{self.port}", daemon=True)

    async def _card(self, request: Request) -> JSONResponse:
        """The public card, its schema descriptions in the language the client prefers (Accept-Language)."""
        language = pick_language(request.headers.get("accept-language"))
        return JSONResponse(self.card(language), headers={"Content-Language": language, "Vary": "Accept-Language"})

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._socket]))

    def start(self) -> None:
        self._thread.start()
        for _ in range(1000):  # uvicorn sets `started` once it serves on our socket
            if self._server.started:
                return
            if not self._thread.is_alive():
                raise RuntimeError("the A2A server did not start")
            threading.Event().wait(0.01)

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host
