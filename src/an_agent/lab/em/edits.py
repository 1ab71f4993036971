"""``<edit-config>`` of an element manager: cells' power, tilt, admin state and energy saving -> the simulator.

An edit is checked whole before anything changes (all or nothing): libyang first (names, types, ranges,
config-false nodes), then NACM (write access to each cell entry), then each cell against the simulator's
own limits (`SimNetwork.check_cell_radio`, `Energy.check`): a value beyond a limit is an ``invalid-value``
rpc-error whose error-path names the leaf. Only then are the changes applied, by the simulator's actions.
Cells are the network's: an edit may change them, never create or delete one; the topology and the
alarms are read only.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from lxml import etree

from an_agent.errors import RpcError
from an_agent.lab.em.render import ANNET_NS
from an_agent.lab.network import SimNetwork
from an_agent.runtime.access import Access, Authorizer, Touched
from an_agent.runtime.edit import NC_OPERATION, elements
from an_agent.runtime.principal import Principal
from an_agent.yang.context import YangContext

_AN = f"{{{ANNET_NS}}}"
CELLS_PATH = "/an-agent-network:cells"


def cell_path(cell_id: str, leaf: str = "") -> str:
    return f"{CELLS_PATH}/cell[cell-id='{cell_id}']" + (f"/{leaf}" if leaf else "")


@dataclass
class CellChange:
    """What an edit asks of one cell (None: leave as it is)."""

    cell_id: str
    power: float | None = None
    tilt: float | None = None
    locked: bool | None = None
    es_state: str | None = None
    saving: float | None = None


def parse_edit(config: etree._Element, default_operation: str, yang: YangContext, served: set[str]) -> list[CellChange]:
    """The cell changes of an ``<edit-config>``'s ``<config>``; `RpcError` for anything else it holds."""
    plain = copy.deepcopy(config)
    for node in plain.iter():
        if NC_OPERATION in node.attrib:
            del node.attrib[NC_OPERATION]
    changes: list[CellChange] = []
    for top in elements(config):
        q = etree.QName(top)
        if q.namespace not in served:
            raise RpcError.unknown_namespace(
                q.localname, q.namespace or "", f"this element manager serves no module with namespace {q.namespace}"
            )
        if (q.namespace, q.localname) != (ANNET_NS, "cells"):
            raise _not_supported(
                f"<{q.localname}> is read only here: the element manager shows the network's "
                "topology and alarms as the network has them; only /cells/cell can be edited",
                f"/{q.localname}",
            )
        _refuse_structural(top, default_operation, CELLS_PATH)
        for entry in elements(top):
            cell_id = (entry.findtext(_AN + "cell-id") or "").strip()
            _refuse_structural(entry, default_operation, cell_path(cell_id))
            for leaf in entry.iter():
                if leaf is not entry and leaf.get(NC_OPERATION) in ("delete", "remove", "create", "replace"):
                    raise _not_supported(
                        f"operation {leaf.get(NC_OPERATION)!r} on a cell's leaf: set its new value (merge)",
                        cell_path(cell_id, etree.QName(leaf).localname),
                    )
            changes.append(_change(entry, cell_id))
    yang.validate_config(etree.tostring(plain, encoding="unicode"))
    return changes


def _refuse_structural(node: etree._Element, default_operation: str, path: str) -> None:
    operation = node.get(NC_OPERATION, default_operation)
    if operation in ("create", "delete", "remove", "replace"):
        raise _not_supported(
            f"operation {operation!r} on {path}: cells are the network's, an edit may only change them (merge)", path
        )


def _not_supported(message: str, path: str | None = None) -> RpcError:
    return RpcError("application", "operation-not-supported", message, path)


def _change(entry: etree._Element, cell_id: str) -> CellChange:
    def number(text: str | None) -> float | None:
        try:
            return None if text is None else float(text)
        except ValueError:
            return None  # libyang names the bad value

    admin = entry.findtext(_AN + "admin-state")
    return CellChange(
        cell_id,
        power=number(entry.findtext(_AN + "tx-power")),
        tilt=number(entry.findtext(_AN + "tilt")),
        locked=None if admin is None else admin.strip() == "locked",
        es_state=(entry.findtext(f"{_AN}energy-saving/{_AN}state") or "").strip() or None,
        saving=number(entry.findtext(f"{_AN}energy-saving/{_AN}saving-percent")),
    )


def check_and_apply(
    changes: list[CellChange],
    network: SimNetwork,
    mine: set[str],
    principal: Principal,
    authorizer: Authorizer,
    device: str,
) -> None:
    """Check every change (NACM, existence, limits), then apply them all; nothing changes on an error.

    NACM first: a user who may not write learns nothing about which cells exist."""
    authorizer.authorize(Access(principal, "update", tuple(Touched("update", cell_path(c.cell_id)) for c in changes)))
    for change in changes:
        if change.cell_id not in mine:
            raise RpcError.data_missing(
                f"there is no cell {change.cell_id!r} in what {device} manages: cells are the network's, "
                "an edit cannot create one",
                cell_path(change.cell_id),
            )
    by = principal.name
    for change in changes:
        _check(change, network, by)
    for change in changes:
        cell = network.cell(change.cell_id)
        if change.power is not None or change.tilt is not None:
            power = cell.power_dbm if change.power is None else change.power
            tilt = cell.tilt_deg if change.tilt is None else change.tilt
            network.set_cell_radio(change.cell_id, power, tilt, by)
        if change.es_state is not None and change.es_state != "disabled":
            network.set_energy_saving(change.cell_id, change.es_state, by, change.saving)
        if change.locked is not None:
            network.set_cell_locked(change.cell_id, change.locked, by)


def _check(change: CellChange, network: SimNetwork, by: str) -> None:
    cell = network.cell(change.cell_id)
    if change.power is not None or change.tilt is not None:
        power = cell.power_dbm if change.power is None else change.power
        tilt = cell.tilt_deg if change.tilt is None else change.tilt
        try:
            network.check_cell_radio(change.cell_id, power, tilt, by)
        except ValueError as exc:
            leaf = "tx-power" if power > cell.max_power_dbm + 1e-9 else "tilt"
            raise RpcError.invalid_value(
                f"{exc} (its limits: /cells/cell/limits)", path=cell_path(change.cell_id, leaf)
            ) from None
    state = change.es_state
    if state is None and change.saving is not None:
        state = cell.energy_saving
        if state != "reduced":
            raise RpcError.invalid_value(
                f"{change.cell_id}: saving-percent is set with state reduced (the planned saving applies "
                f"while enabled); the cell's state is {state}",
                path=cell_path(change.cell_id, "energy-saving/saving-percent"),
            )
        change.es_state = state
    if state is None:
        return
    if state == "disabled":
        if cell.energy_saving != "disabled":
            raise RpcError.invalid_value(
                f"{change.cell_id}: energy saving cannot be set to disabled (suspend it instead)",
                path=cell_path(change.cell_id, "energy-saving/state"),
            )
        return
    try:
        network.energy.check(change.cell_id, state, change.saving)
    except ValueError as exc:
        raise RpcError.invalid_value(
            f"{change.cell_id}: {exc}", path=cell_path(change.cell_id, "energy-saving/state")
        ) from None
