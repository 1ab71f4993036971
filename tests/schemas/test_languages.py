"""Template descriptions in several languages (draft-zhou 5, ``preferred-language``): matching, fallback,
and constraints that never depend on the language served."""

from __future__ import annotations

import pytest

from an_agent.schemas.languages import languages, localize, pick_language
from an_agent.schemas.registry import TemplateRegistry


@pytest.mark.parametrize(
    ("asked", "served"),
    [
        (None, "en"),
        ("", "en"),
        ("zh", "zh"),
        ("zh-CN", "zh"),
        ("ZH-Hans-CN", "zh"),
        ("fr", "en"),  # not shipped: English
        ("fr-CH, fr;q=0.9, zh;q=0.8, en;q=0.5", "zh"),
        ("en-GB,zh;q=0.9", "en"),
        ("zh;q=0, de", "en"),  # q=0 means "not this one"
    ],
)
def test_pick_language(asked: str | None, served: str) -> None:
    assert pick_language(asked) == served


def test_every_shipped_key_has_a_translation_and_keeps_its_english_constraints() -> None:
    assert languages() == ("en", "zh")
    for template in TemplateRegistry.default().templates():
        chinese = localize(template, "zh")
        assert [k.key_name for k in chinese.keys] == [k.key_name for k in template.keys]
        for english, translated in zip(template.keys, chinese.keys, strict=True):
            assert translated.semantic_description != english.semantic_description, (template.schema_id, english)
            assert any("\u4e00" <= ch <= "\u9fff" for ch in translated.semantic_description)
            assert translated.constraints == english.constraints  # validation is the same in every language
        assert localize(template, "en") is template
