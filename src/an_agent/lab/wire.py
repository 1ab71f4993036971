"""JSON forms of what crosses the lab's control channel: the network's views, its events, exchanges.

The lab process serves its simulated network to agent processes (`an_agent.lab.conductor`,
`an_agent.lab.remote`); the values are the frozen dataclasses of `an_agent.agents.environment`
(`SiteView`, `Alarm`, ...) and `an_agent.agents.exchange.Exchange`. `encode` turns one into plain JSON;
`decode` rebuilds it from its type's annotations (tuples from lists, nested dataclasses, optionals),
so both sides share one definition of every shape and nothing is written twice.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any

from an_agent.agents import environment as env
from an_agent.agents.exchange import Exchange
from an_agent.errors import ControlError


def encode(value: Any) -> Any:
    """``value`` as JSON: dataclasses as objects, tuples as lists, the rest as is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def decode(kind: Any, value: Any) -> Any:
    """The value of type ``kind`` (a dataclass, ``tuple[...]``, ``list[...]``, ``dict[...]``, ``X | None``)."""
    if value is None:
        return None
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(kind) if a is not type(None)]
        return decode(inner[0], value) if len(inner) == 1 else value
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        hints = _hints(kind)
        return kind(**{name: decode(hints[name], item) for name, item in value.items() if name in hints})
    if origin is tuple:
        args = typing.get_args(kind)
        item = args[0] if args else Any
        return tuple(decode(item, v) for v in value)
    if origin is list:
        (item,) = typing.get_args(kind)
        return [decode(item, v) for v in value]
    if origin is dict:
        _, item = typing.get_args(kind)
        return {k: decode(item, v) for k, v in value.items()}
    return value


NETWORK_READS: dict[str, Any] = {
    "regions": list[str],
    "region_aliases": dict[str, tuple[str, ...]],
    "site": env.SiteView,
    "sites": list[env.SiteView],
    "cell": env.CellView,
    "link": env.LinkView,
    "links": list[env.LinkView],
    "sites_behind": list[str],
    "neighbour_cells": list[str],
    "places": list[env.Place],
    "active_alarms": list[env.Alarm],
    "radio_diagnostics": env.RadioDiagnostics,
    "area_kpis": env.AreaKpis,
    "saving_cost_kw": float,
    "alarm_log": list[env.Alarm],
    "fault_location": env.FaultLocation | None,
    "fault_on_site": str | None,
}
"""The `ManagedNetwork` reads an agent may call over the channel, with the type of their result."""

NETWORK_ACTIONS: dict[str, Any] = {
    "set_cell_radio": type(None),
    "set_energy_saving": type(None),
    "reset_site": bool,
    "restore_cell_config": bool,
    "reset_port": bool,
    "dispatch_field_repair": float,
    "open_trouble_ticket": float,
    "repair_on_site": bool,
}
"""The `ManagedNetwork` actions an agent may call over the channel (they raise `ValueError` when refused)."""

NETWORK_METHODS = {**NETWORK_READS, **NETWORK_ACTIONS}


def decode_event(value: Any) -> env.NetworkEvent:
    result: env.NetworkEvent = decode(env.NetworkEvent, value)
    return result


def decode_exchange(value: Any) -> Exchange:
    result: Exchange = decode(Exchange, value)
    return result


def param_name(params: dict[str, Any], key: str = "agent") -> str:
    """The agent name ``params[key]`` of a control-channel request; `ControlError` when missing."""
    value = params.get(key)
    if not isinstance(value, str) or not value:
        raise ControlError(f"missing {key!r}")
    return value


def param_key(params: dict[str, Any]) -> tuple[str, str]:
    """The hand-off key ``params["key"]`` (``[agent, task_id]``) of a control-channel request."""
    key = params.get("key")
    if not isinstance(key, list) or len(key) != 2 or not all(isinstance(k, str) for k in key):
        raise ControlError("key must be [agent, task_id]")
    return (key[0], key[1])
