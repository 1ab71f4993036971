"""Issue 31 round 9: a code glued to a short word ("cat5e", "CAT6a", "class3b") is one value whatever its
spelling ("Cat 5e", "CAT-5e", "cat.6", "Category 6A"), written with its word; a classifier word (category,
class) names nothing alone, so the key is named by what the fragments say it classifies (cable category).
Probe lines written for these tests (not taken from the corpora)."""

from __future__ import annotations

from test_evolution_synthesis import induce

from an_agent.evolution.carriers import carries_value
from an_agent.evolution.codes import find_codes
from an_agent.evolution.value_words import STOP_WORDS
from fake_embedder import FakeEmbedder

CABLES = [
    "the patch cable in the hall is cat5e",
    "Cat 6A cable to the switch upstairs",
    "a CAT-5e cable, grey, about 10 m",
    "we use cat6 cables everywhere",
    "Category 6A cabling in the meeting room",
    "Cat.6 cable from the ONT",
    "old cat 5 cable behind the TV",
]
LASERS = [
    "the OTDR source is a class3b laser",
    "Class 3R laser pointer on the bench",
    "class 4 laser in the lab, goggles needed",
    "the splicer's laser is Class 3B",
    "CLASS-3R laser module",
    "laser class3r only",
]


def test_a_code_glued_to_its_word_is_one_value_in_every_spelling() -> None:
    cables = find_codes(CABLES, STOP_WORDS)
    assert cables is not None and cables.enum == ("cat5", "cat5e", "cat6", "cat6a")
    assert cables.values == ("cat5e", "cat6a", "cat5e", "cat6", "cat6a", "cat6", "cat5")
    assert cables.frame == "category" and cables.of == "cable"
    lasers = find_codes(LASERS, STOP_WORDS)
    assert lasers is not None and lasers.enum == ("class3b", "class3r", "class4")
    assert lasers.frame == "class" and lasers.of == "laser"


def test_a_glued_code_key_is_named_by_what_its_word_classifies() -> None:
    induced = induce(CABLES, FakeEmbedder())
    key = induced.key
    assert key.key_name == "cable_category" and key.constraints.enum == ("cat5", "cat5e", "cat6", "cat6a")
    # After the patch a fragment joins when it names a value in any spelling ("Category 6A", "CAT-5e").
    for text in ("Category 6A patch lead", "the CAT-5e run", "cat6 please"):
        assert carries_value(induced.spec, text, 0.0), text
    assert not carries_value(induced.spec, "the cat chewed the cable", 0.0)


def test_codes_written_apart_from_their_word_keep_their_spelling() -> None:
    # No fragment glues the word to the code: the code alone, as before ("Cat 4", "Cat-M1": UE categories).
    modems = ["modem is Cat 4", "a Cat-M1 tracker", "Cat 1 module", "cat 4 router", "on Cat M1 only"]
    found = find_codes(modems, STOP_WORDS)
    assert found is not None and found.enum == ("1", "M1", "4") and found.of is None


def test_model_names_and_units_are_no_glued_codes() -> None:
    routers = [
        "router is a Huawei B535",
        "ZTE MF286D in the kitchen",
        "Zyxel NR7101 on the roof",
        "its a huawei b818",
        "Fritzbox 7530 from the shop",
        "Netgear Nighthawk M6 hotspot",
    ]
    assert find_codes(routers, STOP_WORDS) is None
    assert find_codes(["band 5m away", "tier 2h late", "band 10m long", "tier 3h", "band 5m"], STOP_WORDS) is None


def test_a_glued_word_that_names_the_slot_itself_stays_the_frame() -> None:
    # "QCI1", "qci8" glued, but QCI is what the key is (qci: 1), not a class of something: the codes alone.
    bearers = ["QCI 9 users", "protect QCI1 bearers", "qci8 traffic", "QCI-1 only", "bearers of QCI 9", "qci 5"]
    found = find_codes(bearers, STOP_WORDS)
    assert found is not None and found.enum == ("1", "5", "8", "9") and found.of is None
