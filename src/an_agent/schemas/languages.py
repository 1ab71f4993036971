"""Template descriptions in several languages (draft-zhou 5: ``preferred-language`` of a template request).

The templates themselves stay in the draft's format, in English: their ``semantic_description`` is what
the value constraints are parsed from (`an_agent.schemas.template`) and what the embeddings of schema
evolution compare. Other languages are display text kept beside them, one file per language in
``schemas/i18n/<language>.json`` (`an_agent.schemas.catalogue`).

`localize` gives a template whose descriptions are in the language asked for when it has them (each key
falls back to English on its own: a key added by a schema patch has an English description only); the
constraints stay the ones parsed from English, so validation never depends on the language served.
`pick_language` matches a request (``zh``, ``zh-CN``, an HTTP ``Accept-Language`` list) to a language we
ship, else English. Shipped: English (``en``) and Chinese (``zh``).
"""

from __future__ import annotations

from dataclasses import replace

from an_agent.schemas.catalogue import catalogues
from an_agent.schemas.template import Template

DEFAULT_LANGUAGE = "en"


def languages() -> tuple[str, ...]:
    """The languages template descriptions are served in (English first)."""
    return (DEFAULT_LANGUAGE, *sorted(catalogues()))


def pick_language(requested: str | None) -> str:
    """The shipped language for ``requested``: a tag (``zh-CN`` -> ``zh``) or an ``Accept-Language`` list
    (first acceptable by q-value); English when none is shipped or nothing was asked."""
    if not requested:
        return DEFAULT_LANGUAGE
    ranked: list[tuple[float, int, str]] = []
    for index, item in enumerate(requested.split(",")):
        tag, _, params = item.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        if tag and quality > 0:
            ranked.append((-quality, index, tag.strip().lower()))
    shipped = set(languages())
    for _, _, tag in sorted(ranked):
        primary = tag.split("-")[0]
        if primary in shipped:
            return primary
    return DEFAULT_LANGUAGE


def localize(template: Template, language: str) -> Template:
    """``template`` with the descriptions of ``language`` where it has them (module docstring)."""
    if language == DEFAULT_LANGUAGE:
        return template
    catalogue = catalogues().get(language)
    texts = catalogue.templates.get(template.schema_id) if catalogue else None
    if not texts:
        return template
    # Constraints keep the English parse: `replace` copies them untouched (a client parsing the localized
    # text gets the same ones through the catalogue's constraint phrases, see `schemas.values`).
    keys = tuple(
        replace(key, semantic_description=texts[key.key_name]) if key.key_name in texts else key
        for key in template.keys
    )
    return replace(template, keys=keys)
