"""Every threshold of schema self-evolution, in one place (defaults: DESIGN.md "Evolution defaults").

`EvolutionConfig` is immutable; `with_overrides` returns a checked copy, which is what the CLI's
replay options and an agent's configuration use. Each field's metadata carries the help text the CLI
shows, so a new threshold is automatically a new ``--option``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from an_agent.errors import ConfigError

# Chosen by bench/calibrate_similarity.py on the dev corpus and checked on tests/evolution/data
# (docs/evolution.md has the table): online centroid assignment with a centroid-merge step.
DEFAULT_ASSIGN_THRESHOLD = 0.30
DEFAULT_MERGE_THRESHOLD = 0.40
# Mean similarity to a cluster's 3 closest sampled members that a fragment also needs to join it (noise
# rejection). Calibrated on both corpora: at 0.20 every intent still triggers (at 0.25 the field corpus loses
# its antenna-tilt paraphrases); it stops one-offs that reach a centroid through one shared word only.
DEFAULT_MEMBER_THRESHOLD = 0.20
# meaning_score (conflicts.py) from which a cluster refines an existing key instead of adding one; same
# calibration: the corpora's new intents score <= 0.462, paraphrase sets of existing keys >= 0.501.
DEFAULT_CONFLICT_THRESHOLD = 0.48
# Cohesion (mean member-to-centroid similarity) a cluster needs to trigger: the corpora's intents have
# >= 0.586 when they trigger, sets of unrelated one-offs <= 0.52; it keeps a drifting catch-all cluster
# from producing a patch.
DEFAULT_MIN_COHESION = 0.55


def _f(default: Any, help_text: str, minimum: float | None = 0.0, maximum: float | None = None) -> Any:
    return field(default=default, metadata={"help": help_text, "min": minimum, "max": maximum})


@dataclass(frozen=True)
class EvolutionConfig:
    """Thresholds and periods of the Differential Semantic Pool, triggers, patches and lifecycle."""

    # Differential Semantic Pool (draft 6.2.1)
    assign_threshold: float = _f(
        DEFAULT_ASSIGN_THRESHOLD, "cosine similarity of a fragment to a cluster centroid needed to join it", -1, 1
    )
    member_threshold: float = _f(
        DEFAULT_MEMBER_THRESHOLD,
        "mean similarity to a cluster's closest members a fragment also needs to join it (noise rejection)",
        -1,
        1,
    )
    merge_threshold: float = _f(
        DEFAULT_MERGE_THRESHOLD, "cosine similarity of two cluster centroids at which they merge", -1, 1
    )
    max_clusters_per_schema: int = _f(1024, "clusters kept per scenario; the coldest are evicted beyond", 1)
    heat_increment: float = _f(10.0, "heat added to a cluster per fragment")
    half_life_hours: float = _f(24.0, "half-life of the exponential heat decay, hours", 1e-6)
    # Dual-gate trigger
    heat_threshold: float = _f(50.0, "heat a cluster needs to trigger")
    min_distinct_clients: int = _f(5, "distinct clients in the window that satisfy the second gate", 1)
    min_occurrences: int = _f(10, "fragments in the window that satisfy the second gate", 1)
    window_days: float = _f(7.0, "window of the occurrence and distinct-client counts, days", 1e-6)
    min_cohesion: float = _f(
        DEFAULT_MIN_COHESION, "mean similarity of a cluster's fragments to its centroid needed to trigger", 0, 1
    )
    personal_share: float = _f(
        0.8, "share of the window's fragments from one client that makes a per-client patch", 0, 1
    )
    # Patch synthesis
    conflict_threshold: float = _f(
        DEFAULT_CONFLICT_THRESHOLD,
        "meaning score of a cluster against an existing key that makes it refine that key",
        -1,
        1,
    )
    max_examples: int = _f(3, "mapping examples quoted in a synthesised description", 1)
    # A trigger waits for a sample big enough to type its key (each value of a closed set seen twice, not
    # one flag per value), for at most typing_wait_hours of clock time.
    typing_sample: int = _f(10, "fragments a triggered cluster holds before its patch is synthesised", 1)
    typing_wait_hours: float = _f(
        24.0, "hours after its trigger when a patch is synthesised even below typing_sample fragments"
    )
    # Long-term evaluation and lifecycle (draft 6.2.3)
    trial_days: float = _f(7.0, "experimental trial period, days", 1e-6)
    metrics_window_days: float = _f(30.0, "observation window of key metrics, days", 1e-6)
    min_payloads_for_decision: int = _f(10, "payloads observed before a trial can end in a decision", 0)
    max_trial_extensions: int = _f(2, "trial extensions when metrics are between the gates, then deprecation", 0)
    promote_usage: float = _f(0.15, "usage_frequency needed for promotion", 0, 1)
    promote_alignment: float = _f(0.80, "semantic_alignment_accuracy needed for promotion", 0, 1)
    promote_type_correctness: float = _f(0.90, "value_type_correctness needed for promotion", 0, 1)
    deprecate_usage: float = _f(0.05, "usage_frequency below which a key is deprecated", 0, 1)
    deprecate_alignment: float = _f(0.60, "semantic_alignment_accuracy below which a key is deprecated", 0, 1)
    deprecate_type_correctness: float = _f(0.70, "value_type_correctness below which a key is deprecated", 0, 1)
    grace_days: float = _f(14.0, "days a deprecated key stays in the schema before withdrawal")
    compat_days: float = _f(30.0, "days a withdrawn key is still accepted (with a logged warning)")
    max_experimental_keys: int = _f(10, "experimental keys per scenario (global patches); later triggers queue", 1)
    max_experimental_keys_per_client: int = _f(3, "experimental keys per client in per-client patches", 1)
    # Input limits of the reserved 'other' key
    max_other_chars: int = _f(500, "characters kept per 'other' fragment", 1)
    max_other_fragments: int = _f(16, "'other' fragments kept per payload", 1)

    def __post_init__(self) -> None:
        problems = []
        for f in fields(self):
            value = getattr(self, f.name)
            low, high = f.metadata.get("min"), f.metadata.get("max")
            if low is not None and value < low:
                problems.append(f"{f.name} must be >= {low} (got {value})")
            if high is not None and value > high:
                problems.append(f"{f.name} must be <= {high} (got {value})")
        if self.deprecate_usage > self.promote_usage:
            problems.append("deprecate_usage must not exceed promote_usage")
        if problems:
            raise ConfigError("invalid evolution configuration: " + "; ".join(problems))

    @property
    def half_life_s(self) -> float:
        return self.half_life_hours * 3600.0

    @property
    def window_s(self) -> float:
        return self.window_days * 86400.0

    def with_overrides(self, overrides: Mapping[str, Any]) -> EvolutionConfig:
        """A copy with some fields replaced (None values are ignored); `ConfigError` on unknown names or bad values."""
        known = {f.name: f for f in fields(self)}
        changes: dict[str, Any] = {}
        for name, value in overrides.items():
            if value is None:
                continue
            if name not in known:
                raise ConfigError(f"unknown evolution setting {name!r}")
            kind: type = type(known[name].default)
            try:
                changes[name] = kind(value)
            except (TypeError, ValueError):
                raise ConfigError(f"{name}: expected {kind.__name__}, got {value!r}") from None
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def config_fields() -> list[tuple[str, type, Any, str]]:
    """(name, type, default, help) of every setting, for building command-line options."""
    return [(f.name, type(f.default), f.default, str(f.metadata.get("help", ""))) for f in fields(EvolutionConfig)]
