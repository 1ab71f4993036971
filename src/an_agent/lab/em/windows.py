"""Energy-saving windows of a RAN element manager: cells in an energy-saving state for a while, then back.

A window sets each cell's energy saving through the simulator now, and puts it back to what it was when
the window closes: on the lab's clock (``call_at``: simulated time, paced or lock-step), or at once with
`EnergyWindows.close`. The windows themselves (which cells, until when) are the element manager's own
record, shown as ``/an-agent-network:energy-saving-windows``; every change they make is the simulator's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from lxml import etree

from an_agent.agents.environment import Timer
from an_agent.clock import to_rfc3339
from an_agent.errors import RpcError
from an_agent.lab.em.render import ANNET_NS, nsmap
from an_agent.lab.network import SimNetwork

_AN = f"{{{ANNET_NS}}}"
CallAt = Callable[[float, str, Callable[[], None]], Timer]


@dataclass
class Window:
    window_id: str
    cells: tuple[str, ...]
    state: str
    saving: float | None
    start: float
    end: float
    before: dict[str, tuple[str, float]] = field(default_factory=dict)
    """Each cell's state and saving before the window."""
    timer: Timer | None = None
    open: bool = True


def window_path(window_id: str) -> str:
    return f"/an-agent-network:energy-saving-windows/window[window-id='{window_id}']"


class EnergyWindows:
    """The windows of one element manager (module docstring); thread-safe."""

    def __init__(self, network: SimNetwork, now: Callable[[], float], call_at: CallAt) -> None:
        self._network = network
        self._now = now
        self._call_at = call_at
        self._lock = threading.Lock()
        self._windows: dict[str, Window] = {}

    def open(
        self, window_id: str, cells: tuple[str, ...], state: str, saving: float | None, duration: float, by: str
    ) -> Window:
        """Open a window; `RpcError` (nothing changed) when the id is taken or a cell cannot take the state."""
        with self._lock:
            current = self._windows.get(window_id)
            if current is not None and current.open:
                raise RpcError.data_exists(f"window {window_id!r} is open already", window_path(window_id))
            for cell_id in cells:
                try:
                    self._network.energy.check(cell_id, state, saving)
                except ValueError as exc:
                    raise RpcError.invalid_value(
                        f"{cell_id}: {exc}", "/an-agent-network:open-energy-saving-window/state"
                    ) from None
            now = self._now()
            window = Window(window_id, cells, state, saving, now, now + duration)
            for cell_id in cells:
                view = self._network.cell(cell_id)
                window.before[cell_id] = (view.energy_saving, view.saving_percent)
                self._network.set_energy_saving(cell_id, state, by, saving)
            window.timer = self._call_at(window.end, f"energy-saving window {window_id}", lambda: self._end(window, by))
            self._windows[window_id] = window
            return window

    def close(self, window_id: str, by: str) -> None:
        """Close an open window now: its cells go back."""
        with self._lock:
            window = self._windows.get(window_id)
            if window is None or not window.open:
                raise RpcError.data_missing(f"there is no open window {window_id!r}", window_path(window_id))
            if window.timer is not None:
                window.timer.cancel()
        self._end(window, by)

    def _end(self, window: Window, by: str) -> None:
        with self._lock:
            if not window.open:
                return
            window.open = False
            window.end = min(window.end, self._now())
        for cell_id, (state, saving) in window.before.items():
            if state != "disabled":
                self._network.set_energy_saving(cell_id, state, by, saving if state == "reduced" else None)

    def render(self) -> etree._Element:
        root = etree.Element(_AN + "energy-saving-windows", nsmap=nsmap(ANNET_NS))
        with self._lock:
            windows = sorted(self._windows.values(), key=lambda w: w.window_id)
        for window in windows:
            entry = etree.SubElement(root, _AN + "window")
            etree.SubElement(entry, _AN + "window-id").text = window.window_id
            for cell_id in window.cells:
                etree.SubElement(entry, _AN + "cell-id").text = cell_id
            etree.SubElement(entry, _AN + "state").text = window.state
            if window.saving is not None:
                etree.SubElement(entry, _AN + "saving-percent").text = f"{window.saving:.2f}"
            etree.SubElement(entry, _AN + "start").text = to_rfc3339(window.start)
            etree.SubElement(entry, _AN + "end").text = to_rfc3339(window.end)
            etree.SubElement(entry, _AN + "open").text = str(window.open).lower()
        return root
