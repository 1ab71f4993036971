"""Network partitions as lab chaos: ``--chaos partition:A,B@SECONDS+DURATION`` (``--netns`` labs only).

At ``SECONDS`` simulated seconds after the scenario starts, all traffic between agents ``A`` and ``B`` is
dropped (`LabNetwork.partition`); ``DURATION`` simulated seconds later it flows again (`LabNetwork.heal`).
Every other pair, and the lab's control channel, are untouched. The lab's clock only moves on when no
agent is busy, so a request caught by a partition holds the clock until it fails or gets through; what
a partition costs shows in the run's timeline and time to restore, next to the same run without it.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from an_agent.errors import ConfigError
from an_agent.lab.journal import Journal
from an_agent.lab.kernel import SimKernel
from an_agent.lab.lockstep import LabKernel

KIND = "partition"
_SPEC = re.compile(
    r"^(?P<a>[a-z][a-z0-9-]*),(?P<b>[a-z][a-z0-9-]*)@(?P<at>[0-9]+(?:\.[0-9]+)?)\+(?P<d>[0-9]+(?:\.[0-9]+)?)$"
)


class _Timers(Protocol):
    def call_at(self, when: float, label: str, fn: Callable[[], None]) -> object: ...


@dataclass(frozen=True)
class Partition:
    """Agents ``a`` and ``b`` cut off from each other from ``at`` for ``duration`` simulated seconds."""

    a: str
    b: str
    at: float
    duration: float

    @classmethod
    def parse(cls, text: str) -> Partition:
        """``A,B@SECONDS+DURATION`` (what follows ``partition:``); `ConfigError` saying what is wrong."""
        match = _SPEC.match(text.strip())
        if match is None:
            raise ConfigError(
                f"--chaos {KIND}:{text}: expected {KIND}:AGENT,AGENT@SECONDS+DURATION (simulated seconds), "
                f"e.g. {KIND}:ran-fault,ip-fault@600+300"
            )
        fault = cls(match["a"], match["b"], float(match["at"]), float(match["d"]))
        if fault.a == fault.b:
            raise ConfigError(f"--chaos {KIND}:{text}: an agent cannot be partitioned from itself")
        if fault.duration <= 0:
            raise ConfigError(f"--chaos {KIND}:{text}: the duration must be more than 0 seconds")
        return fault

    def check(self, agents: set[str]) -> None:
        """`ConfigError` when ``a`` or ``b`` is not an agent of the lab."""
        unknown = [n for n in (self.a, self.b) if n not in agents]
        if unknown:
            raise ConfigError(f"--chaos {self.spec}: no agent {', '.join(unknown)} in the topology")

    @property
    def spec(self) -> str:
        return f"{KIND}:{self.a},{self.b}@{self.at:g}+{self.duration:g}"

    def schedule(self, timers: _Timers, start: float, cuts: Cuts) -> None:
        """Cut ``a`` and ``b`` apart at ``start + at`` and heal at ``start + at + duration`` on ``timers``
        (the lab's kernel), through ``cuts`` (which counts overlapping partitions of one pair)."""
        begin, end = start + self.at, start + self.at + self.duration
        timers.call_at(begin, f"chaos:{self.spec}", lambda: cuts.cut(self))
        timers.call_at(end, f"chaos:{self.spec}", lambda: cuts.heal(self))

    def to_json(self) -> dict[str, Any]:
        return {"kind": KIND, "agents": [self.a, self.b], "at": self.at, "duration": self.duration}


class _Routes(Protocol):
    def partition(self, a: str, b: str) -> None: ...
    def heal(self, a: str, b: str) -> None: ...


class Cuts:
    """The lab's partitions, counted per pair of agents: the network's routes (`LabNetwork`), the kernel's
    view (`LabKernel.cut`: a task's end between the two does not hold time while cut) and a journal note
    (agent ``chaos``, kinds ``partition`` / ``partition_healed``) for each fault.

    Partitions of one pair may overlap (a soak's ``partition`` of A and B inside an ``isolate`` of A): the
    pair is cut by the first and reaches again only at the last heal (found by lab soak: the first heal
    ended both, and the inner fault's heal then undid nothing).
    """

    def __init__(self, net: _Routes, journal: Journal, kernel: SimKernel) -> None:
        self._net = net
        self._journal = journal
        self._kernel = kernel
        self._held: Counter[frozenset[str]] = Counter()
        self._lock = threading.Lock()

    def cut(self, fault: Partition) -> None:
        """Start ``fault``: its pair's traffic dropped from now (already, when another fault cuts it)."""
        pair = frozenset((fault.a, fault.b))
        with self._lock:
            self._held[pair] += 1
            first = self._held[pair] == 1
            if first:
                self._net.partition(fault.a, fault.b)
                if isinstance(self._kernel, LabKernel):
                    self._kernel.cut(fault.a, fault.b)
        self._journal.note(
            "chaos",
            KIND,
            f"traffic between {fault.a} and {fault.b} dropped for {fault.duration:g} s"
            + ("" if first else " (cut already by another fault)"),
            spec=fault.spec,
        )

    def heal(self, fault: Partition) -> None:
        """End ``fault``: its pair reaches again unless another fault still cuts it."""
        pair = frozenset((fault.a, fault.b))
        with self._lock:
            if self._held[pair] <= 0:
                return
            self._held[pair] -= 1
            last = self._held[pair] == 0
            if last:
                del self._held[pair]
                self._net.heal(fault.a, fault.b)
                if isinstance(self._kernel, LabKernel):
                    self._kernel.heal(fault.a, fault.b)
        text = "reach each other again" if last else "still cut apart by another fault"
        self._journal.note("chaos", "partition_healed", f"{fault.a} and {fault.b} {text}", spec=fault.spec)
