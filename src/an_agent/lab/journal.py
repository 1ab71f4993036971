"""The lab's record of a run: agents' notes (decisions, actions) and every NETCONF exchange between agents.

Agents write notes through the `Journal` protocol of `an_agent.agents.environment`; the exchanges come
from the `Peers` of each agent (`an_agent.agents.peers.Exchange`), i.e. from the NETCONF client calls
actually made. Both are stamped with simulated time and a process-wide order number (`next_order`: the
order they happened in, to break ties at the same instant).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from an_agent.agents.peers import Exchange, next_order


@dataclass(frozen=True)
class Note:
    seq: int
    time: float
    agent: str
    kind: str
    text: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "agent": self.agent,
            "kind": self.kind,
            "text": self.text,
            "details": self.details,
            "order": self.seq,
        }


class Journal:
    """Thread-safe; ``on_note`` / ``on_exchange`` see each entry as it is recorded (progress display)."""

    def __init__(
        self,
        now: Callable[[], float],
        on_note: Callable[[Note], None] | None = None,
        on_exchange: Callable[[Exchange], None] | None = None,
    ) -> None:
        self._now = now
        self._lock = threading.Lock()
        self._notes: list[Note] = []
        self._exchanges: list[Exchange] = []
        self.on_note = on_note
        self.on_exchange = on_exchange

    def note(self, agent: str, kind: str, text: str, **details: Any) -> None:
        note = Note(next_order(), self._now(), agent, kind, text, details)
        with self._lock:
            self._notes.append(note)
        if self.on_note is not None:
            self.on_note(note)

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)
        if self.on_exchange is not None:
            self.on_exchange(exchange)

    def notes(self) -> list[Note]:
        with self._lock:
            return sorted(self._notes, key=lambda n: (n.time, n.seq))

    def exchanges(self) -> list[Exchange]:
        with self._lock:
            return sorted(self._exchanges, key=lambda e: (e.time, e.order))

    def operation_counts(self) -> dict[str, dict[str, Any]]:
        """Per agent: requests it sent (by operation) and notifications it received (NETCONF or A2A)."""
        counts: dict[str, dict[str, Any]] = {}
        for exchange in self.exchanges():
            if exchange.is_notification:
                entry = counts.setdefault(exchange.receiver, _empty())
                entry["notifications_received"] += 1
            else:
                entry = counts.setdefault(exchange.sender, _empty())
                entry["requests_sent"] += 1
                entry["by_operation"][exchange.operation] += 1
                counts.setdefault(exchange.receiver, _empty())["requests_received"] += 1
        for entry in counts.values():
            entry["by_operation"] = dict(sorted(entry["by_operation"].items()))
        return counts


def _empty() -> dict[str, Any]:
    return {"requests_sent": 0, "requests_received": 0, "notifications_received": 0, "by_operation": Counter()}
