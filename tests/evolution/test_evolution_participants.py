"""Issue 31 round 4: a cluster's core judged again without its participants (`evolution/participants.py`)."""

from __future__ import annotations

import pytest

from an_agent.evolution.cohesion import core_of
from an_agent.evolution.embedder import MiniLMEmbedder
from an_agent.evolution.participants import apart_from_participants, without_participants

# What synthesis examined for the held-out noise corpus's compensation cluster: eight requests for money
# back, and three lines about "the customer" that say something else.
COMPENSATION = [
    "the customer demands a credit on the next invoice",
    "the customer changed his phone number",  # a one-off
    "the fleet customer wants compensation for the lost connectivity",
    "the customer asks to be reimbursed for the failed navigation subscription",
    "a refund for the parking ticket is handled by the city",  # a one-off
    "the transport company asks for a rebate for the downtime",
    "a discount was requested because the car had no service for a week",
    "call the customer back after 6 pm",  # a weak intent (call-back time)
    "the owner wants the monthly connectivity fee waived",
    "the customer threatens to cancel unless he is refunded",
]
ONE_OFFS = {1, 4, 7}


def test_participant_words_are_taken_out() -> None:
    assert without_participants("Dear team, the customer changed his phone number. Regards, Ana") == (
        "the changed phone number"
    )
    assert without_participants("the customer's phone") == "the phone"
    assert without_participants("customer") == "customer"  # nothing else: the text itself


def _share(indexes: tuple[int, ...]) -> float:
    return sum(1 for i in indexes if i in ONE_OFFS) / len(indexes)


@pytest.mark.slow
def test_a_one_off_about_the_customer_leaves_the_core(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed(COMPENSATION)
    first = core_of(vectors)
    assert 1 in first.members  # "the customer changed his phone number": as close as the requests are
    core = apart_from_participants(first, COMPENSATION, vectors, minilm)
    assert 1 not in core.members and 1 in core.outliers
    assert _share(core.members) < _share(first.members)
    # The cost: a request whose participant carried much of it may leave too (at most one here).
    assert len(set(first.members) - set(core.members) - ONE_OFFS) <= 1


@pytest.mark.slow
def test_fragments_without_a_participant_are_judged_once(minilm: MiniLMEmbedder) -> None:
    texts = [
        "remote door unlocking through the app keeps failing",
        "climate control cannot be switched on from the app",
        "remote start from the smartphone fails every morning",
        "the companion app shows the car as offline",
        "the phone app cannot unlock the car remotely",
        "the car was at the dealer for new tyres",
        "remote preheating from the app does not reach the vehicle",
    ]
    assert all(without_participants(t) == t for t in texts)
    vectors = minilm.embed(texts)
    first = core_of(vectors)
    assert apart_from_participants(first, texts, vectors, minilm) is first
