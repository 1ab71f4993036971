"""Long-term evaluation of patch keys (draft 6.2.3): metrics and the state machine.

States of a new key introduced by a patch::

    proposed ──approve──> experimental ──promote──> stable
                              │   ^ extend            │
                              │   └──┘                │ (re-evaluated every metrics window)
                              └──deprecate──> deprecated <──┘
                                                  │ grace period
                                                  v
                                              withdrawn ── compatibility window ──> retired

``proposed`` keys wait for an authorised user (`an_agent.evolution.policy`). Experimental, stable
and deprecated keys are published (deprecated ones with ``"deprecated": true``); withdrawn keys are no
longer published but still accepted, with a logged warning, until they are retired. Keys of a patch
that only refines existing descriptions (``modified_keys``) have the state ``active``.

At the end of a trial: promote when usage, alignment and type correctness all reach their promotion
thresholds; deprecate when any is below its deprecation threshold or when fewer than
``min_payloads_for_decision`` payloads were seen after ``max_trial_extensions`` extensions; otherwise
extend the trial. Stable keys are re-evaluated every ``metrics_window_days`` against the
deprecation thresholds (the draft asks for continuous evaluation of every patch key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from an_agent.evolution.config import EvolutionConfig

KeyState = Literal["proposed", "experimental", "stable", "deprecated", "withdrawn", "retired", "rejected", "active"]
PUBLISHED_STATES: tuple[KeyState, ...] = ("experimental", "stable", "deprecated", "active")
Decision = Literal["promote", "deprecate", "extend", "keep"]


@dataclass(frozen=True)
class KeyMetrics:
    """Counts over the observation window and the draft's four ratios derived from them."""

    seen: int
    present: int
    type_ok: int
    aligned: int
    delivered: int
    adopted: int

    @property
    def usage_frequency(self) -> float:
        return self.present / self.seen if self.seen else 0.0

    @property
    def semantic_alignment_accuracy(self) -> float:
        return self.aligned / self.present if self.present else 0.0

    @property
    def value_type_correctness(self) -> float:
        return self.type_ok / self.present if self.present else 0.0

    @property
    def client_adoption_rate(self) -> float:
        return self.adopted / self.delivered if self.delivered else 0.0

    def to_dict(self) -> dict[str, float | int]:
        return {
            "payloads": self.seen,
            "usage_frequency": round(self.usage_frequency, 4),
            "semantic_alignment_accuracy": round(self.semantic_alignment_accuracy, 4),
            "value_type_correctness": round(self.value_type_correctness, 4),
            "client_adoption_rate": round(self.client_adoption_rate, 4),
        }


def below_deprecation(m: KeyMetrics, c: EvolutionConfig) -> bool:
    return (
        m.usage_frequency < c.deprecate_usage
        or m.semantic_alignment_accuracy < c.deprecate_alignment
        or m.value_type_correctness < c.deprecate_type_correctness
    )


def meets_promotion(m: KeyMetrics, c: EvolutionConfig) -> bool:
    return (
        m.usage_frequency >= c.promote_usage
        and m.semantic_alignment_accuracy >= c.promote_alignment
        and m.value_type_correctness >= c.promote_type_correctness
    )


def decide(state: KeyState, m: KeyMetrics, extensions: int, c: EvolutionConfig) -> Decision:
    """The lifecycle decision due for a key in ``state`` with metrics ``m`` (module docstring)."""
    if state == "experimental":
        if m.seen < c.min_payloads_for_decision:
            return "extend" if extensions < c.max_trial_extensions else "deprecate"
        if meets_promotion(m, c):
            return "promote"
        if below_deprecation(m, c):
            return "deprecate"
        return "extend" if extensions < c.max_trial_extensions else "deprecate"
    if state == "stable":
        return "deprecate" if m.seen >= c.min_payloads_for_decision and below_deprecation(m, c) else "keep"
    return "keep"
