"""The typed result of a lab run, shared by the text views, the HTML report and ``lab run --json``.

`LabResult.to_json` is the ``--json`` document (its shape is documented in ``topologies/README.md``):
the typed parts below become objects with the same field names, in the same order. The rows of
``messages``, ``notes``, ``tasks`` and the KPI ``series`` are JSON rows already (built from the
journal, the tasks read back and the KPI samples) and stay so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from an_agent.lab.spec import FaultType, Role

JsonRow = dict[str, Any]


@dataclass(frozen=True)
class Check:
    """One closed-loop condition (`an_agent.lab.outcome`) and whether the run met it."""

    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class RootCause:
    """The first root-cause note matching an injected fault."""

    text: str
    decided_by: str
    diagnosed_by: str | None
    t: float
    time_to_diagnose_s: float


@dataclass(frozen=True)
class FaultOutcome:
    """What became of one injected fault; times are seconds after the start of the run."""

    type: FaultType
    target: str
    injected: float
    affected_sites: list[str]
    affected_cells: int
    root_cause_found: bool
    root_cause: RootCause | None
    other_conclusions: list[str]
    repaired: float | None
    repaired_by: str | None
    repair_kind: str | None
    restored: float | None
    time_to_restore_s: float | None


@dataclass(frozen=True)
class Operations:
    """NETCONF operations an agent (or an external client) sent and received."""

    requests_sent: int = 0
    requests_received: int = 0
    notifications_received: int = 0
    by_operation: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentSummary:
    name: str
    role: Role
    regions: list[str]
    address: str | None
    operations: Operations


@dataclass(frozen=True)
class TopologySummary:
    name: str
    description: str
    seed: int
    source: str | None
    start_time: str
    """RFC 3339."""
    sites: int
    cells: int
    links: int


@dataclass(frozen=True)
class Outcome:
    closed_loop: bool
    """Every check passed."""
    checks: list[Check]
    faults: list[FaultOutcome]
    actions: list[JsonRow]
    network_changes: dict[str, int]
    """Changes made to the network, by who made them."""
    time_to_restore_s: float | None
    """The longest time to restore of the faults (None when one was not restored)."""


@dataclass(frozen=True)
class RunInfo:
    end_reason: str | None
    """``idle`` (nothing left to do), ``deadline`` (max_duration) or ``closed``."""
    simulated_seconds: float
    wall_seconds: float
    instants: int
    netconf_requests: int
    netconf_notifications: int
    netconf_operations: int
    activity_errors: list[str]


@dataclass
class LabResult:
    """Everything a run produced (module docstring)."""

    topology: TopologySummary
    agents: list[AgentSummary]
    external_clients: dict[str, Operations]
    messages: list[JsonRow]
    notes: list[JsonRow]
    tasks: list[JsonRow]
    outcome: Outcome
    kpis: JsonRow
    baseline: JsonRow
    run: RunInfo
    report: str | None = None
    """The HTML report's path, once written (``--report``)."""
    chaos: list[JsonRow] = field(default_factory=list)
    """Faults of the lab itself (``--chaos``), each with its cost (`an_agent.lab.chaos`)."""

    def to_json(self) -> dict[str, Any]:
        """The ``lab run --json`` document (``report`` only when one was written, ``chaos`` when played)."""
        document = asdict(self)
        if self.report is None:
            del document["report"]
        if not self.chaos:
            del document["chaos"]
        return document
