"""Who a request is about is not what it says: a cluster's core, judged again without its participants.

Nearly every request of a scenario names its participant: "the customer is deaf", "the customer wants a
refund", "the customer changed his phone number". To the embedding model the participant is a word like
any other, so a one-off about the customer is close to a cluster of customer requests through that word
alone (issue 31 round 4: of the 36 one-offs and other intents' lines that the cores kept on twelve
corpora, about a quarter shared no more with the cluster than "the customer" or "the caller").

The core's outlier test (`cohesion.core_of`) is therefore run a second time on the core's fragments with
their participant words taken out (`PARTICIPANTS`, the same list that keeps participants out of key
names), and a fragment that names a participant and is an outlier in that view is set aside too
(`apart_from_participants`). Fragments that name no participant are judged by the first view only:
taking nothing out of them says nothing new. The second view costs one embedding call per patch (the
core's fragments, most without a participant, cached), never one per ingested fragment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from an_agent.evolution.boilerplate import content_text
from an_agent.evolution.cohesion import Core, outliers_of, set_aside
from an_agent.evolution.value_words import word_set
from an_agent.schemas.embedding import Embedder, Vectors

# Who a request is about or from: the participant of nearly every request of a scenario ("the customer is
# deaf", "the other operator on this tower"), never what the request asks for.
PARTICIPANTS = word_set(
    """customer customers customer's caller callers caller's subscriber subscribers subscriber's user users
    user's client clients client's complainant complainant's operator operators operator's person people
    someone somebody he she him her his hers they"""
)
_WORD = re.compile(r"\S+")
_EDGES = ".,;:!?()\"'"
_MIN_CORE = 4  # fewer fragments have no outliers (`cohesion.core_of`)


def without_participants(text: str) -> str:
    """``text`` (its content, `boilerplate.content_text`) without its participant words; itself if only those."""
    content = content_text(text)
    kept = " ".join(w for w in _WORD.findall(content) if w.lower().strip(_EDGES) not in PARTICIPANTS)
    return kept or content


def apart_from_participants(core: Core, texts: Sequence[str], vectors: Vectors, embedder: Embedder) -> Core:
    """``core`` without the fragments that belong to it only through a participant (module docstring).

    ``texts``/``vectors``: the fragments synthesis examines (``core`` indexes into them).
    """
    members = list(core.members)
    if len(members) < _MIN_CORE:
        return core
    stripped = [without_participants(texts[i]) for i in members]
    named = {i for i, s in zip(members, stripped, strict=True) if s != content_text(texts[i])}
    if not named:
        return core
    apart = {members[j] for j in outliers_of(embedder.embed(stripped))} & named
    return set_aside(core, vectors, apart) if apart else core
