"""Issue 31 round 8: a standard's designation (ITU-T's G.652.D, G.655, H.264, Y.1731; also written G652D,
"G.652 D") is a code family (`evolution/codes.py`, the family of its letter), named by what its clauses
say before it when no single word stands right before it."""

from __future__ import annotations

import pytest

from an_agent.evolution.codes import codes_in, find_codes
from an_agent.evolution.value_words import STOP_WORDS


@pytest.mark.parametrize(
    ("text", "codes"),
    [
        ("Fibre type on this span: G.652.D.", {"G.652.D"}),
        ("segment is G652D (single mode)", {"G.652.D"}),
        ("patch fibre also G.652 D standard", {"G.652.D"}),
        ("bend-insensitive G.657.A2 fibre", {"G.657.A2"}),
        ("ITU-T G.655, please", {"G.655"}),
        ("the probe runs Y.1731 delay measurement", {"Y.1731"}),
        ("version 1.652 of the tool", set()),  # no letter: a version number
        ("A.123.4 is a section number", set()),  # a part number of digits: no code
        ("part G652 in stock", set()),  # no dot, no part: could be any part number
        ("see g.655", set()),  # designations are written in capitals
    ],
)
def test_a_standards_designation_is_a_code(text: str, codes: set[str]) -> None:
    assert {c for c in codes_in(text) if "." in c} == codes


def test_designations_said_after_a_phrase_are_a_set_named_by_that_phrase() -> None:
    texts = [
        "the camera uploads its video as H.264, the customer says it stutters",
        "video encoding of the stream is H.265, picture freezes every minute",
        "their NVR records in H.264 and the upload is too slow",
        "video codec on the recorder: H.264",
        "the uploaded video is in H.265 format and lags",
        "customer switched the video to H.266, now it breaks up",
        "video stream in H.265 stops after a few seconds",
    ]
    found = find_codes(texts, STOP_WORDS)
    assert found is not None
    assert found.enum == ("H.264", "H.265", "H.266")
    assert found.frame == "video"


def test_a_designation_next_to_its_frame_word_keeps_that_word() -> None:
    texts = ["fibre G.652.D", "fibre G.655 here", "fibre G.652.D again", "fibre G.657.A1", "fibre G.655"]
    found = find_codes(texts, STOP_WORDS)
    assert found is not None and found.frame == "fibre"
    assert found.enum == ("G.652.D", "G.655", "G.657.A1")
