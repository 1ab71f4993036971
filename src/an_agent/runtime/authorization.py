"""`NacmAuthorizer`: the operation layer's `Authorizer` backed by NACM (RFC 8341) and task ownership.

On top of the NACM decision for every node an operation touches:

- a task belongs to the user who created it: only that user or an admin may
  change, cancel or delete it (``access-denied`` otherwise);
- ``task-sendFrom`` must be one of the principal's agent names (when the
  principal has any; an admin may send as anyone), so evolution's
  distinct-client counts cannot be faked;
- an RPC acting on something another user owns (``kill-session`` of another
  user's session) needs an admin; of one's own, NACM's exec permit suffices.

Every denial is counted, as RFC 8341 asks (``/nacm/denied-operations``,
``denied-data-writes``, ``denied-notifications``; see `nacm_state`).

Denials are ``access-denied`` with the path and never say whether a node
the user may not read exists. Reads are pruned per principal
(`Nacm.prune`); notifications are checked by module and name.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace

from lxml import etree

from an_agent.access.nacm import Nacm, NacmState, Notification, Rpc
from an_agent.errors import RpcError
from an_agent.runtime.access import Access, Touched
from an_agent.runtime.principal import Principal
from an_agent.yang.context import YangContext


class NacmAuthorizer:
    """Decides with ``nacm``; ``yang`` maps namespaces to modules and finds list keys for paths."""

    def __init__(self, nacm: Nacm, yang: YangContext) -> None:
        self.nacm = nacm
        self._yang = yang
        self._module_of = {info.namespace: info.name for info in yang.modules()}
        self._counted = threading.Lock()
        self._state = NacmState(nacm)

    # -- Authorizer -------------------------------------------------------------------------------
    def authorize(self, access: Access) -> None:
        principal = access.principal
        if access.rpc is not None:
            decision = self.nacm.decide(principal.name, principal.groups, "exec", Rpc.parse(access.rpc))
            if not decision:
                self._count("denied_operations")
                raise RpcError.access_denied(
                    f"user {principal.name!r} may not execute {access.rpc} (NACM {decision.rule})"
                )
            if access.owner is not None and access.owner != principal.name and not principal.is_admin:
                self._count("denied_operations")
                raise RpcError.access_denied(
                    f"{access.rpc} acts on what {access.owner!r} owns: only that user or an admin may do it"
                )
        try:
            for touched in access.touched:
                self._authorize_node(principal, touched)
        except RpcError:
            self._count("denied_data_writes")
            raise

    def read_view(self, principal: Principal, elements: Sequence[etree._Element]) -> list[etree._Element]:
        if principal.is_admin and self.nacm.decide(principal.name, principal.groups, "read", "/").permitted:
            return list(elements)  # the admin rule permits everything: nothing to prune
        return self.nacm.prune(principal.name, principal.groups, elements, self.path_of)

    def may_receive(self, principal: Principal, event: etree._Element) -> bool:
        q = etree.QName(event)
        module = self._module_of.get(q.namespace or "", "")
        decision = self.nacm.decide(principal.name, principal.groups, "read", Notification(module, q.localname))
        if not decision:
            self._count("denied_notifications")
        return decision.permitted

    def nacm_state(self) -> NacmState:
        with self._counted:
            return self._state

    def _count(self, counter: str) -> None:
        with self._counted:
            self._state = replace(self._state, **{counter: getattr(self._state, counter) + 1})

    # -- internals ----------------------------------------------------------------------------------
    def _authorize_node(self, principal: Principal, touched: Touched) -> None:
        decision = self.nacm.decide(principal.name, principal.groups, touched.kind, touched.path)
        if not decision:
            raise RpcError.access_denied(
                f"user {principal.name!r} may not {touched.kind} {touched.path} (NACM {decision.rule})", touched.path
            )
        owner = touched.owner
        foreign = owner is not None and owner != principal.name and not principal.is_admin
        if touched.kind in ("update", "delete") and foreign:
            raise RpcError.access_denied(
                f"task {touched.path} belongs to {owner!r}: only its owner or an admin may "
                f"{'change or cancel' if touched.kind == 'update' else 'delete'} it",
                touched.path,
            )
        task = touched.task
        sender = task.send_from if task is not None and touched.kind in ("create", "update") else None
        if sender is not None and not principal.may_speak_for(sender):
            allowed = ", ".join(sorted(principal.agent_names))
            raise RpcError.access_denied(
                f"user {principal.name!r} may not send as agent {sender!r} (allowed: {allowed})",
                f"{touched.path}/task-sendFrom",
            )

    def path_of(self, element: etree._Element) -> str:
        """The instance identifier of a data element (module names where the module changes, list keys)."""
        chain: list[etree._Element] = []
        node: etree._Element | None = element
        while node is not None:
            chain.append(node)
            node = node.getparent()
        steps: list[str] = []
        schema_path: list[tuple[str, str]] = []
        parent_module = ""
        for item in reversed(chain):
            q = etree.QName(item)
            module = self._module_of.get(q.namespace or "", q.namespace or "")
            schema_path.append((q.namespace or "", q.localname))
            step = q.localname if module == parent_module else f"{module}:{q.localname}"
            info = self._yang.schema_node(tuple(schema_path))
            for key in info.keys if info is not None else ():
                value = item.findtext(f"{{{q.namespace}}}{key}") if q.namespace else item.findtext(key)
                step += f"[{key}='{value or ''}']"
            steps.append(step)
            parent_module = module
        return "/" + "/".join(steps)
