"""`ElementOperations`: one element manager's operation layer, the `Served` its NETCONF face calls.

Reads render the simulator now (`an_agent.lab.em.render`) and go through the NACM read view like an
agent's; edits change cells (`an_agent.lab.em.edits`); the RPCs of ``an-agent-network`` restart an
element and open or close energy-saving windows, each authorized as ``exec``. Every alarm the simulator
raises or clears in this manager's domain and regions is logged as an RFC 8632 ``alarm-notification``
in the durable notification log (event time: the lab's clock), so subscribers get it live and a
``startTime`` replays it. Sessions, the running lock and subscriptions are the same code as an agent's
(`an_agent.runtime.served.SessionsAndEvents`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from lxml import etree

from an_agent.agents.environment import NetworkEvent
from an_agent.clock import Clock, to_rfc3339
from an_agent.errors import RpcError
from an_agent.lab.devices import DeviceDomain, DeviceSpec
from an_agent.lab.em.edits import check_and_apply, parse_edit
from an_agent.lab.em.render import ANNET_NS, Renderer, nsmap
from an_agent.lab.em.windows import CallAt, EnergyWindows
from an_agent.lab.network import SimNetwork
from an_agent.runtime.access import Authorizer
from an_agent.runtime.datastore import Datastore
from an_agent.runtime.notifications import NotificationBus
from an_agent.runtime.principal import Principal
from an_agent.runtime.requests import EditConfig, ReadScope
from an_agent.runtime.served import SessionsAndEvents
from an_agent.runtime.sessions import SessionTable
from an_agent.store.agent_store import AgentStore
from an_agent.yang.context import YangContext
from an_agent.yang.info import ModuleInfo

_AN = f"{{{ANNET_NS}}}"
MODULE = "an-agent-network"


class ElementOperations(SessionsAndEvents):
    """The element manager ``device`` over ``network`` (module docstring)."""

    def __init__(
        self,
        device: DeviceSpec,
        network: SimNetwork,
        call_at: CallAt,
        clock: Clock,
        store: AgentStore,
        yang: YangContext,
        authorizer: Authorizer,
    ) -> None:
        self.device = device
        self.network = network
        self.clock = clock
        self.store = store
        self.yang = yang
        self.authorizer = authorizer
        self.sessions = SessionTable()
        self.bus = NotificationBus(store, clock)
        self.render = Renderer(network, device)
        self.windows = EnergyWindows(network, clock.now, call_at)
        self._namespaces = {m.namespace for m in yang.modules()}
        self._versions = itertools.count()
        self.log_created = store.log_created(clock.now())
        network.subscribe(self._on_event)

    def close(self) -> None:
        self.bus.close()

    def modules(self) -> list[ModuleInfo]:
        return self.yang.modules()

    # ---- notifications ---------------------------------------------------------------------------------
    def _on_event(self, event: NetworkEvent) -> None:
        if self.render.my_alarm(event.alarm):
            self.publish_notification(self.render.alarm_notification(event.alarm))

    # ---- reads -----------------------------------------------------------------------------------------
    def read(
        self,
        principal: Principal,
        scope: ReadScope | None = None,
        config_only: bool = False,
        extra: Iterable[etree._Element] = (),
    ) -> list[etree._Element]:
        scope = scope or ReadScope()
        top = [e for e in self.render.top_level(config_only) if scope.wants(e)]
        if not config_only and self.device.domain == DeviceDomain.RAN:
            windows = self.windows.render()
            if scope.wants(windows):
                top.append(windows)
        top.extend(e for e in extra if scope.wants(e))
        return self.authorizer.read_view(principal, top)

    def data_version(self) -> int:
        # The simulator changes without telling (KPIs, timers): every read is built afresh.
        return next(self._versions)

    def keys_of(self, element: etree._Element) -> tuple[str, ...]:
        info = self.yang.schema_node(Datastore.schema_path(element))
        return tuple(info.keys) if info is not None and info.kind == "list" else ()

    # ---- writes ----------------------------------------------------------------------------------------
    def edit_config(self, principal: Principal, session_id: int, request: EditConfig) -> None:
        """Change cells (power, tilt, admin state, energy saving): all or nothing (`an_agent.lab.em.edits`)."""
        with self.sessions.editing(session_id):
            changes = parse_edit(request.config, request.default_operation, self.yang, self._namespaces)
            if not changes:
                return
            if self.device.domain != DeviceDomain.RAN:
                raise RpcError("application", "operation-not-supported", f"{self.device.name} manages no cells")
            mine = set(self.render.cell_ids())
            check_and_apply(changes, self.network, mine, principal, self.authorizer, self.device.name)

    # ---- RPCs ------------------------------------------------------------------------------------------
    def invoke(self, principal: Principal, operation: etree._Element) -> list[etree._Element] | None:
        q = etree.QName(operation)
        handler = _RPCS.get((q.namespace or "", q.localname))
        if handler is None:
            raise RpcError.operation_not_supported(f"RPC {q.localname} of module {q.namespace} is not implemented")
        self._exec(principal, f"{MODULE}:{q.localname}")
        return handler(self, principal, operation)

    def _restart(self, principal: Principal, operation: etree._Element) -> list[etree._Element]:
        element_id = (operation.findtext(_AN + "element-id") or "").strip()
        path = f"/{MODULE}:restart-element/element-id"
        restart: Callable[[str, str], bool]
        if self.device.domain == DeviceDomain.TRANSPORT:
            mine = {k.link_id for k in self.network.links(self.render.regions)}
            what, restart = "link", self.network.reset_port
        else:
            mine = {s.site_id for s in self.network.sites(self.render.regions)}
            what, restart = "site", self.network.reset_site
        if element_id not in mine:
            raise RpcError.data_missing(
                f"{self.device.name} manages no {what} {element_id!r} (a {self.device.domain} element manager "
                f"restarts {what}s: {', '.join(sorted(mine)[:8])}{', ...' if len(mine) > 8 else ''})",
                path,
            )
        cleared = restart(element_id, principal.name)
        return _output([("fault-cleared", str(cleared).lower())])

    def _open_window(self, principal: Principal, operation: etree._Element) -> list[etree._Element]:
        self._ran_only("open-energy-saving-window")
        cells = tuple((e.text or "").strip() for e in operation.iterchildren(_AN + "cell-id"))
        mine = set(self.render.cell_ids())
        unknown = [c for c in cells if c not in mine]
        if unknown:
            raise RpcError.data_missing(
                f"{self.device.name} manages no cell {unknown[0]!r}", f"/{MODULE}:open-energy-saving-window/cell-id"
            )
        saving = operation.findtext(_AN + "saving-percent")
        window = self.windows.open(
            (operation.findtext(_AN + "window-id") or "").strip(),
            cells,
            (operation.findtext(_AN + "state") or "").strip(),
            None if saving is None else float(saving),
            float(operation.findtext(_AN + "duration") or 0),
            principal.name,
        )
        return _output([("end", to_rfc3339(window.end))])

    def _close_window(self, principal: Principal, operation: etree._Element) -> None:
        self._ran_only("close-energy-saving-window")
        self.windows.close((operation.findtext(_AN + "window-id") or "").strip(), principal.name)

    def _ran_only(self, rpc: str) -> None:
        if self.device.domain != DeviceDomain.RAN:
            raise RpcError(
                "application", "operation-not-supported", f"{rpc}: {self.device.name} manages no cells (transport)"
            )


def _output(leaves: list[tuple[str, str]]) -> list[etree._Element]:
    """RPC output leaves of an-agent-network, each declaring its namespace."""
    out = []
    for name, text in leaves:
        leaf = etree.Element(_AN + name, nsmap=nsmap(ANNET_NS))
        leaf.text = text
        out.append(leaf)
    return out


_Rpc = Callable[[ElementOperations, Principal, etree._Element], list[etree._Element] | None]
_RPCS: dict[tuple[str, str], _Rpc] = {
    (ANNET_NS, "restart-element"): ElementOperations._restart,
    (ANNET_NS, "open-energy-saving-window"): ElementOperations._open_window,
    (ANNET_NS, "close-energy-saving-window"): ElementOperations._close_window,
}
