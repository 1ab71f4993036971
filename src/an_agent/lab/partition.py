"""Network partitions as lab chaos: ``--chaos partition:A,B@SECONDS+DURATION`` (``--netns`` labs only).

At ``SECONDS`` simulated seconds after the scenario starts, all traffic between agents ``A`` and ``B`` is
dropped (`LabNetwork.partition`); ``DURATION`` simulated seconds later it flows again (`LabNetwork.heal`).
Every other pair, and the lab's control channel, are untouched. The lab's clock only moves on when no
agent is busy, so a request caught by a partition holds the clock until it fails or gets through; what
a partition costs shows in the run's timeline and time to restore, next to the same run without it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from an_agent.errors import ConfigError
from an_agent.lab.journal import Journal
from an_agent.lab.kernel import SimKernel
from an_agent.lab.lockstep import LabKernel
from an_agent.lab.netns import LabNetwork

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

    def schedule(
        self,
        timers: _Timers,
        start: float,
        net: LabNetwork,
        on_change: Callable[[Partition, str, float], None] = lambda *_: None,
    ) -> None:
        """Partition at ``start + at`` and heal at ``start + at + duration`` on ``timers`` (the lab's kernel).

        ``on_change(self, "partitioned" | "healed", when)`` is called after each change (journal, result).
        """
        begin, end = start + self.at, start + self.at + self.duration

        def cut() -> None:
            net.partition(self.a, self.b)
            on_change(self, "partitioned", begin)

        def heal() -> None:
            net.heal(self.a, self.b)
            on_change(self, "healed", end)

        timers.call_at(begin, f"chaos:{self.spec}", cut)
        timers.call_at(end, f"chaos:{self.spec}", heal)

    def to_json(self) -> dict[str, Any]:
        return {"kind": KIND, "agents": [self.a, self.b], "at": self.at, "duration": self.duration}


def note_partitions(journal: Journal, kernel: SimKernel) -> Callable[[Partition, str, float], None]:
    """The ``on_change`` of `Partition.schedule` in a lab: the kernel's cut/heal, and a journal note (agent
    ``chaos``, kinds ``partition`` / ``partition_healed``)."""

    def note(fault: Partition, what: str, when: float) -> None:
        if isinstance(kernel, LabKernel):  # a task's end between the two does not hold time while cut
            (kernel.cut if what == "partitioned" else kernel.heal)(fault.a, fault.b)
        if what == "partitioned":
            kind, text = "partition", f"traffic between {fault.a} and {fault.b} dropped for {fault.duration:g} s"
        else:
            kind, text = "partition_healed", f"{fault.a} and {fault.b} reach each other again"
        journal.note("chaos", kind, text, spec=fault.spec)

    return note
