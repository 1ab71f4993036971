"""The one authorization hook of the operation layer (`an_agent.runtime.authorization` fills it with NACM).

Every operation asks `Authorizer.authorize` before it changes or executes
anything, with an `Access` naming the principal, the kind of access, the data
nodes touched and (for an RPC) its name. Every read goes through
`Authorizer.read_view`, which may prune the reply tree per principal, and every
notification a subscriber would receive through `Authorizer.may_receive`.

`PermitAll` is the default of a bare `Operations` (unit tests, embedding):
every authenticated user may do everything. A denying authorizer raises
``RpcError.access_denied`` with the path.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from lxml import etree

from an_agent.access.nacm import Nacm, NacmState
from an_agent.model import Task
from an_agent.runtime.principal import Principal

AccessKind = Literal["read", "create", "update", "delete", "exec"]


@dataclass(frozen=True)
class Touched:
    """One data node an operation creates, updates or deletes.

    ``path`` is its instance identifier (``/irtf-agent:tasks/task[task-id='t1']``);
    ``element`` the node after the change (before it, for a delete; None for
    a new task, which is authorized from its parsed ``task`` before the edit
    is applied). For a task entry, ``task`` is the parsed task (with
    ``task-sendFrom``; None for a delete) and ``owner`` the user who created
    it (None for a task being created).
    """

    kind: AccessKind
    path: str
    element: etree._Element | None = None
    task: Task | None = None
    owner: str | None = None


@dataclass(frozen=True)
class Access:
    """What an operation is about to do, for `Authorizer.authorize`.

    ``kind`` is the operation's overall kind (``exec`` for an RPC, with
    ``rpc`` its ``module:name``); ``touched`` lists every data node it changes,
    each with its own kind (an ``<edit-config>`` may create one node and
    delete another).
    """

    principal: Principal
    kind: AccessKind
    touched: tuple[Touched, ...] = ()
    rpc: str | None = None
    owner: str | None = None
    """For an RPC that acts on something a user owns (``kill-session``: the user of the session to kill)."""


class Authorizer(Protocol):
    """Decides what a principal may do; raise `an_agent.errors.RpcError` (access-denied) to refuse."""

    def authorize(self, access: Access) -> None:
        """Refuse ``access`` by raising; return to permit it."""
        ...

    def read_view(self, principal: Principal, elements: Sequence[etree._Element]) -> list[etree._Element]:
        """The top-level data elements ``principal`` may read (pruned copies or the same elements)."""
        ...

    def may_receive(self, principal: Principal, event: etree._Element) -> bool:
        """Whether a notification with content ``event`` may be sent to ``principal``."""
        ...

    def nacm_state(self) -> NacmState:
        """The ``/nacm`` a ``<get>`` reports: the rules in force and the denial counters."""
        ...


class PermitAll:
    """The default authorizer: every authenticated principal may do and read everything."""

    def authorize(self, access: Access) -> None:
        return None

    def read_view(self, principal: Principal, elements: Sequence[etree._Element]) -> list[etree._Element]:
        return list(elements)

    def may_receive(self, principal: Principal, event: etree._Element) -> bool:
        return True

    def nacm_state(self) -> NacmState:
        return NacmState(Nacm(enable_nacm=False))  # NACM is off: nothing is ever denied
