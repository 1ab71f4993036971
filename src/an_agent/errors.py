"""The one exception hierarchy of an-agent.

Every failure a caller can act on is one of these; foreign exceptions
(paramiko, ncclient, netconf, libyang, sqlite3) are translated to them at the
module boundary that calls the foreign library, never further up.

::

    AnAgentError
    ├── ConfigError          bad profile / topology / CLI input (a person fixes a file or flag)
    ├── YangError            a YANG module does not load or a tool (pyang, yanglint) fails
    ├── StoreError           the SQLite state directory cannot be opened or written
    │   └── StateFull        no space left where the state is stored (nothing changed; goes on once freed)
    ├── RpcError             an RFC 6241 <rpc-error>: raised by the server, received by the client
    │   └── (built with the classmethods below: invalid_value, missing_element, ...)
    ├── TransportError       the NETCONF session could not be used
    │   ├── ConnectError     TCP/SSH connection refused, host key, handshake failure
    │   ├── AuthError        SSH authentication rejected
    │   ├── RequestTimeout   no reply within the timeout
    │   └── SessionsClosed   an agent's sessions to a peer were closed (it stops): nothing is sent any more
    ├── SchemaError          a structured payload or a schema template is invalid (schemas issue)
    │   └── SchemaAccessDenied   the actor may not make this schema decision (not a schema administrator)
    ├── ControlError         the lab's control channel refused a request (lab/control.py)
    ├── LabNetworkError      the lab's network namespaces cannot be made or removed (lab/netns.py)
    └── LabStartError        a lab's agents cannot be brought up: one exits, or bring-up stops progressing

`RpcError` carries the whole RFC 6241 error (type, tag, severity, app-tag,
path, message, info) so that nothing is lost between server and client: the
server raises it, nc/wire.py serialises it, nc/client.py rebuilds it. It is
complete at construction and immutable afterwards (derive a changed copy with
`dataclasses.replace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Literal

ErrorType = Literal["transport", "rpc", "protocol", "application"]


class AnAgentError(Exception):
    """Base of every error an-agent raises on purpose."""


class ConfigError(AnAgentError):
    """A profile, topology, or command-line value is wrong; the message says which and how."""


class YangError(AnAgentError):
    """A YANG module set failed to load or a YANG tool reported errors."""


class StoreError(AnAgentError):
    """The state directory or its SQLite database cannot be used."""


class StateFull(StoreError):
    """No space left where the state is stored: the write was refused whole (nothing changed, nothing
    corrupted); the agent goes on once space is freed. NETCONF answers it with ``resource-denied``."""


class TransportError(AnAgentError):
    """The NETCONF session cannot carry requests (closed, broken, never opened)."""


class ConnectError(TransportError):
    """The TCP or SSH connection to an agent could not be established."""


class AuthError(TransportError):
    """The agent rejected the credentials."""


class RequestTimeout(TransportError):
    """The agent did not reply within the timeout."""


class SessionsClosed(TransportError):
    """An agent's sessions to a peer were closed (the agent or its lab stops): the request was not sent, and
    sending it again cannot help (`an_agent.nc.retry.retryable` says no); a new agent opens new sessions."""


class SchemaError(AnAgentError):
    """A structured payload or schema template is invalid.

    ``problems`` lists one human-readable line per offending key.
    """

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = list(problems or [])


class SchemaAccessDenied(SchemaError):
    """A schema decision (approve, reject, withdraw) by an actor the update policy does not authorise."""


class ControlError(AnAgentError):
    """A request on the lab's control channel was refused: unknown method, bad params, handler error."""


class LabStartError(AnAgentError):
    """A lab's agent processes cannot be brought up: its template process fails, an agent exits before it
    serves, or bring-up makes no progress for a while; the message names the agents, what each was waiting
    for and for how long (lab/bringup.py)."""


class LabNetworkError(AnAgentError):
    """The lab's network namespaces, links or bridge cannot be made or removed.

    Raised when the process is not root, when ``ip`` (iproute2) is missing, or when ``ip`` fails; the
    message quotes the command and what ``ip`` said.
    """


@dataclass
class RpcError(AnAgentError):
    """One RFC 6241 ``<rpc-error>``.

    Raised inside the server by any layer that rejects a request; nc/wire.py
    turns it into the wire element. Raised by nc/client.py when an agent
    answers with ``<rpc-error>``, with every field the agent sent.

    ``path`` is an instance-identifier (XPath) of the offending node, in the
    ``/prefix:node`` form libyang produces, or None when no node is at fault.
    ``info`` maps ``<error-info>`` child names (e.g. ``bad-element``,
    ``session-id``) to their text.
    """

    error_type: ErrorType
    error_tag: str
    message: str
    path: str | None = None
    info: dict[str, str] = field(default_factory=dict)
    severity: Literal["error", "warning"] = "error"
    app_tag: str | None = None

    def __post_init__(self) -> None:
        super().__init__(self.message)
        object.__setattr__(self, "_complete", True)

    def __setattr__(self, name: str, value: Any) -> None:
        # Built complete: a field changed after construction is a bug (the
        # exception machinery's own attributes, __traceback__ etc., stay writable).
        if getattr(self, "_complete", False) and name in _RPC_ERROR_FIELDS:
            raise AttributeError(f"RpcError.{name} is fixed at construction; use dataclasses.replace")
        object.__setattr__(self, name, value)

    def __str__(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"{self.error_tag} ({self.error_type}){where}: {self.message}"

    # Constructors for the tags we use, so callers never misspell a tag or
    # pair it with the wrong error-type (RFC 6241 appendix A). ``info`` adds
    # <error-info> children, ``app_tag`` sets <error-app-tag>.
    @classmethod
    def invalid_value(
        cls,
        message: str,
        path: str | None = None,
        error_type: ErrorType = "application",
        *,
        info: dict[str, str] | None = None,
        app_tag: str | None = None,
    ) -> RpcError:
        return cls(error_type, "invalid-value", message, path, dict(info or {}), app_tag=app_tag)

    @classmethod
    def missing_element(
        cls, element: str, message: str, path: str | None = None, error_type: ErrorType = "protocol"
    ) -> RpcError:
        return cls(error_type, "missing-element", message, path, {"bad-element": element})

    @classmethod
    def unknown_element(
        cls, element: str, message: str, path: str | None = None, error_type: ErrorType = "application"
    ) -> RpcError:
        return cls(error_type, "unknown-element", message, path, {"bad-element": element})

    @classmethod
    def bad_element(
        cls,
        element: str,
        message: str,
        path: str | None = None,
        error_type: ErrorType = "protocol",
        *,
        app_tag: str | None = None,
    ) -> RpcError:
        return cls(error_type, "bad-element", message, path, {"bad-element": element}, app_tag=app_tag)

    @classmethod
    def missing_attribute(
        cls, attribute: str, element: str, message: str, error_type: ErrorType = "protocol"
    ) -> RpcError:
        return cls(error_type, "missing-attribute", message, None, {"bad-attribute": attribute, "bad-element": element})

    @classmethod
    def bad_attribute(cls, attribute: str, element: str, message: str, error_type: ErrorType = "protocol") -> RpcError:
        return cls(error_type, "bad-attribute", message, None, {"bad-attribute": attribute, "bad-element": element})

    @classmethod
    def unknown_namespace(cls, element: str, namespace: str, message: str) -> RpcError:
        return cls("protocol", "unknown-namespace", message, None, {"bad-element": element, "bad-namespace": namespace})

    @classmethod
    def operation_not_supported(cls, message: str, error_type: ErrorType = "protocol") -> RpcError:
        return cls(error_type, "operation-not-supported", message)

    @classmethod
    def operation_failed(
        cls,
        message: str,
        path: str | None = None,
        error_type: ErrorType = "application",
        *,
        info: dict[str, str] | None = None,
        app_tag: str | None = None,
    ) -> RpcError:
        return cls(error_type, "operation-failed", message, path, dict(info or {}), app_tag=app_tag)

    @classmethod
    def data_exists(cls, message: str, path: str | None = None) -> RpcError:
        return cls("application", "data-exists", message, path)

    @classmethod
    def data_missing(
        cls, message: str, path: str | None = None, *, info: dict[str, str] | None = None, app_tag: str | None = None
    ) -> RpcError:
        return cls("application", "data-missing", message, path, dict(info or {}), app_tag=app_tag)

    @classmethod
    def malformed_message(cls, message: str) -> RpcError:
        return cls("rpc", "malformed-message", message)

    @classmethod
    def lock_denied(cls, session_id: int, message: str) -> RpcError:
        return cls("protocol", "lock-denied", message, None, {"session-id": str(session_id)})

    @classmethod
    def in_use(cls, message: str, error_type: ErrorType = "protocol", *, session_id: int | None = None) -> RpcError:
        return cls(error_type, "in-use", message, None, {} if session_id is None else {"session-id": str(session_id)})

    @classmethod
    def access_denied(cls, message: str, path: str | None = None) -> RpcError:
        return cls("application", "access-denied", message, path)

    @classmethod
    def resource_denied(cls, message: str, error_type: ErrorType = "application") -> RpcError:
        return cls(error_type, "resource-denied", message)

    @classmethod
    def too_big(cls, message: str) -> RpcError:
        return cls("rpc", "too-big", message)


_RPC_ERROR_FIELDS = frozenset(f.name for f in fields(RpcError))
