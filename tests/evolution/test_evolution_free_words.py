"""Round 9 of issue 31: a cluster that restates a key of free words (a place, as written) modifies it.

`conflicts._same_words_idea`: below the conflict threshold, the template's clearly closest idea is a key
of free words (no allowed values, no format) and the cluster's values are of the kind of its example
values. The fragments here are written for this test (not a corpus's lines).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from an_agent.evolution.conflicts import _free_words, find_conflict
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.synthesis import ExistingKey, induce_key
from an_agent.schemas.registry import TemplateRegistry

NOW = datetime(2027, 3, 1, 12, 0, tzinfo=UTC).timestamp()

PLACES = [  # where the problem happens, each customer in words of their own
    "it only happens at my flat on Leith Walk, Edinburgh",
    "Customer reports the fault at their warehouse in Park Royal industrial estate.",
    "problem is at home in Rathmines, near the canal bridge",
    "no signal on the A38 between Bodmin and Liskeard",
    "Summary: the customer's shop is on Ormeau Road, south Belfast.",
    "the dead spot is on Queen Street outside the cathedral",
    "happens in our office on Harcourt Street, 3rd floor",
    "at the caravan park on the coast road past Tramore",
]
ROUTERS = [  # the customer's router, as written: a name, no place
    "my router is a Huawei B818 and it drops every evening",
    "Customer's router model is a Zyxel NR5103.",
    "we use a Netgear Nighthawk M5 at the office",
    "the box is a TP-Link Archer AX55, the white one",
    "Summary: customer uses a ZTE MC801A outdoor unit.",
    "router is the Fritzbox 6850 5G from the shop",
    "got a Huawei 5G CPE Pro 2 last year",
    "its a Zyxel LTE3301 plus",
]


def _conflict_with(minilm: MiniLMEmbedder, texts: list[str]) -> str | None:
    vectors = minilm.embed(texts)
    induced = induce_key(texts, vectors, minilm, now=NOW)
    existing = [ExistingKey(k, "base") for k in TemplateRegistry.default().get("complaint_ticket_v1").keys]
    conflict = find_conflict(induced, vectors, existing, minilm, 0.48, texts)
    return conflict.existing.key.key_name if conflict else None


def test_free_words_keys_are_strings_without_values_or_format() -> None:
    keys = {k.key_name: k for k in TemplateRegistry.default().get("complaint_ticket_v1").keys}
    assert _free_words(keys["location"]) and _free_words(keys["region"])
    # allowed values, a date-time format, an identifier format: not free words
    assert not _free_words(keys["complaint_category"])
    assert not _free_words(keys["occurred_at"])
    assert not _free_words(keys["ticket_id"])


@pytest.mark.slow
def test_places_restated_in_a_customers_words_modify_location(minilm: MiniLMEmbedder) -> None:
    assert _conflict_with(minilm, PLACES) == "location"


@pytest.mark.slow
def test_names_of_another_kind_do_not_modify_a_key_of_free_words(minilm: MiniLMEmbedder) -> None:
    assert _conflict_with(minilm, ROUTERS) is None
