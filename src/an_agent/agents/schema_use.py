"""A lab agent as a schema client: it negotiates the peer's template before sending, and uses evolved keys.

Before a structured payload goes to a peer (FEASIBILITY proposal, then taskAssign), the requester asks
the peer for the scenario's template with ``get-schema-template``, stating the versions it supports (the
versions of the scenario among its shipped templates), and builds the payload for the version agreed
(`an_agent.agents.peers.Peer.schema`; recorded in the timeline as ``get-schema-template``).

When the template the peer serves this requester carries *experimental* keys (schema evolution, draft-zhou
6.2: a patch learned from what clients kept putting in ``other``), the requester moves what its ``other``
text says about them into those keys (`adopt_evolved_keys`): the offline NL mapping
(`an_agent.schemas.mapping.map_text`) against the experimental keys only, with the embedding model, the
same mapping the agent's own A2A face uses for text. ``other`` is dropped only when all of it mapped;
otherwise it stays whole beside the keys (the mapping may take part of a clause; nothing is lost).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from an_agent.agents import payloads
from an_agent.schemas.embedding import Embedder
from an_agent.schemas.mapping import map_text
from an_agent.schemas.template import OTHER_KEY, Template


def supported_versions(schema_id: str) -> list[str]:
    """The schema_ids of ``schema_id``'s scenario this agent can build payloads for (its shipped templates)."""
    return [t.schema_id for t in payloads.templates().versions(schema_id)]


@dataclass(frozen=True)
class Adoption:
    """What `adopt_evolved_keys` did: the new payload, and the experimental keys it filled."""

    payload: dict[str, Any]
    keys: tuple[str, ...] = ()


def adopt_evolved_keys(
    template: Template, payload: dict[str, Any], embedder: Callable[[], Embedder], now: float
) -> Adoption:
    """Move ``payload``'s ``other`` content into ``template``'s experimental keys where the mapping is confident.

    ``embedder`` is called only when there is something to map (experimental keys the payload lacks, and
    ``other`` text). Keys the payload gives already are left as they are.
    """
    experimental = [k for k in template.keys if k.experimental and k.key_name not in payload]
    other = payload.get(OTHER_KEY)
    text = " ".join(other) if isinstance(other, list) else other if isinstance(other, str) else ""
    if not experimental or not text.strip():
        return Adoption(payload)
    other_key = template.key(OTHER_KEY)
    keys = tuple(experimental) + ((other_key,) if other_key is not None else ())
    mapped = map_text(Template(template.schema_id, template.scenario, keys), text, embedder(), now=now)
    filled = {k: v for k, v in mapped.payload.items() if k != OTHER_KEY and v is not None}
    if not filled:
        return Adoption(payload)
    out = {k: v for k, v in payload.items() if k != OTHER_KEY}
    out.update(filled)
    if mapped.other:
        # The mapping works by clauses and may take part of one: 'other' stays whole, so nothing is lost.
        out[OTHER_KEY] = other
    return Adoption(out, tuple(sorted(filled)))
