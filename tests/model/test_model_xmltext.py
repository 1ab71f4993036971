"""Client text XML 1.0 cannot hold goes through the data tree unchanged (model/xmltext.py)."""

from __future__ import annotations

import random

from lxml import etree

from an_agent.model import Task
from an_agent.model.xmltext import from_xml_text, to_xml_text


def test_every_character_survives_the_round_trip_through_xml() -> None:
    alphabet = [chr(c) for c in range(0x20)] + [chr(c) for c in range(0x2400, 0x2428)] + list("ab ␀é中")
    rng = random.Random(7)
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        written = to_xml_text(text)
        element = etree.Element("content")
        element.text = written  # lxml refuses what XML 1.0 cannot hold: this raises if any is left
        assert from_xml_text(etree.fromstring(etree.tostring(element)).text or "") == text


def test_ordinary_text_is_unchanged_and_controls_become_their_pictures() -> None:
    assert to_xml_text("SITE-02 is down\n\tsince 10:00") == "SITE-02 is down\n\tsince 10:00"
    assert to_xml_text("a\bb\fc\x00") == "a\u2408b\u240cc\u2400"
    assert to_xml_text("\u2408 literal") == "\u2420\u2408 literal"


def test_a_task_with_control_characters_round_trips_through_its_xml() -> None:
    content = "## target object\nSITE-02\n## task description\nbell \x07, form feed \f, picture \u240c"
    parsed = Task.from_xml(etree.fromstring(etree.tostring(Task("t1", content=content).to_xml())))
    assert parsed.content == content
