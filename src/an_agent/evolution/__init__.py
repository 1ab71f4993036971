"""Schema self-evolution (draft-zhou section 6.2): semantic pool, triggers, patches, lifecycle, replay.

A server builds one `EvolutionEngine` (over an `EvolutionStore` in its state directory, the
`MiniLMEmbedder`, its clock and an `UpdatePolicy`) and calls it per structured payload; see
docs/evolution.md. Importing this package does not load torch (the embedder loads it on first use).
"""

from an_agent.evolution.config import EvolutionConfig
from an_agent.evolution.embedder import MiniLMEmbedder, model_path
from an_agent.evolution.engine import Acceptance, AlignmentJudge, ClusterInfo, EvolutionEngine
from an_agent.evolution.events import EvolutionEvent
from an_agent.evolution.lifecycle import KeyMetrics
from an_agent.evolution.policy import EVOLUTION_ACTOR, DefaultUpdatePolicy, SchemaChange, UpdatePolicy
from an_agent.evolution.replay import ReplayReport, replay

__all__ = [
    "EVOLUTION_ACTOR",
    "Acceptance",
    "AlignmentJudge",
    "ClusterInfo",
    "DefaultUpdatePolicy",
    "EvolutionConfig",
    "EvolutionEngine",
    "EvolutionEvent",
    "KeyMetrics",
    "MiniLMEmbedder",
    "ReplayReport",
    "SchemaChange",
    "UpdatePolicy",
    "model_path",
    "replay",
]
