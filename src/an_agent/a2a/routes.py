"""The A2A face's routes: the SDK's JSON-RPC and HTTP+JSON routes on our request handler, and its call context.

`sdk_routes` puts `an_agent.a2a.face.OperationsRequestHandler` behind the
a2a-sdk's route factories (JSON-RPC at `JSONRPC_PATH`, HTTP+JSON under
`REST_PREFIX` and at the root); `_ContextBuilder` checks the ``A2A-Version``
of each request (header or query parameter). Apart from the handler because
it is HTTP wiring, not the meaning of any request; `an_agent.a2a.server`
mounts these routes beside the card route.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from an_agent.a2a.card import A2A_PROTOCOL_VERSION
from an_agent.a2a.face import OperationsRequestHandler, PrincipalOf
from an_agent.a2a.sdk import (
    VERSION_HEADER,
    DefaultServerCallContextBuilder,
    ServerCallContext,
    VersionNotSupportedError,
    create_jsonrpc_routes,
    create_rest_routes,
)
from an_agent.runtime.operations import Operations

JSONRPC_PATH = "/"
REST_PREFIX = "/rest"
"""Where the card puts the HTTP+JSON binding; `sdk_routes` serves its routes at the root as well."""


def sdk_routes(
    operations: Operations,
    declared_schemas: Callable[[], Collection[str]],
    principal_of: PrincipalOf,
) -> list[BaseRoute]:
    """The SDK's JSON-RPC (at `JSONRPC_PATH`) and HTTP+JSON (under `REST_PREFIX`) routes on `Operations`.

    The HTTP+JSON routes are served at the root too (``POST /message:send``, ``GET /tasks/{id}`` ...; not
    the SDK's ``/{tenant}`` variants): a client that joins the binding's paths to the card's URL with a
    leading slash, such as the A2A TCK's (``urljoin(url, "/message:send")``), drops ``/rest``. None of
    these paths is JSON-RPC's (``POST /``) or the card's; clients that follow the card are unaffected.
    """
    handler = OperationsRequestHandler(operations, declared_schemas, principal_of)
    context = _ContextBuilder()
    root = [route for route in create_rest_routes(handler, context_builder=context) if isinstance(route, Route)]
    return [
        *create_jsonrpc_routes(handler, JSONRPC_PATH, context_builder=context),
        *root,  # before the /{tenant} mount below, which would take any two-segment path
        *create_rest_routes(handler, path_prefix=REST_PREFIX, context_builder=context),
    ]


class _ContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, also taking ``A2A-Version`` as a query parameter when no header gives it (spec
    3.6.1: clients MAY send it so), and refusing a version whose Major.Minor is not the card's (3.6.2: the
    SDK takes any 1.x; a patch number is not considered). No version is left to the SDK: 0.3, refused."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        headers = context.state.get("headers")
        if not isinstance(headers, dict):
            return context
        version = headers.get(VERSION_HEADER.lower()) or request.query_params.get(VERSION_HEADER)
        if version:
            if version.strip().split(".")[:2] != A2A_PROTOCOL_VERSION.split("."):
                raise VersionNotSupportedError(
                    message=f"A2A version {version!r} is not supported: this agent speaks {A2A_PROTOCOL_VERSION}"
                )
            headers[VERSION_HEADER.lower()] = version
        return context
