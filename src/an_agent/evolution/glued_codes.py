"""Codes glued to a classifier word, for `an_agent.evolution.codes` (the family "a word and a number").

People write a cable's category "cat5e", "Cat 5e", "CAT-5e", "cat.6", "Category 6A": a short word (often a
clipping) and a number with a letter grade. `codes` reads the word and the number; this module says when
the word is part of the code and what the key is named by:

- a word of three letters and a longer word it starts, both before codes, are one family (`merged_clippings`:
  "cat 6", "Category 6A");
- when two fragments or more glue the word to the number ("cat6", "CAT6a") and its full word is a
  classifier (`CLASSIFIERS`: category, class, grade, type, kind), every value is written with the word, in
  lower case (`glued_word`: cat5e in every spelling); a word that names the slot itself ("QCI1": the key is
  qci) or codes written apart from their word ("Cat 4", "Cat-M1") keep the code alone;
- a classifier names nothing alone: the key is named by the noun most fragments say (`classified`: "cat 5
  cable", "the cabling is Cat 5e" -> cable; cable category).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence

from an_agent.evolution.word_families import most_said, word_families
from an_agent.schemas.extract import find_ids

Code = tuple[tuple[str, str], str, int, int]  # (family, code, start, end), as `codes` finds them
_WORD = re.compile(r"[a-z][a-z\-]*")
_SHARE = 0.4  # share of the fragments that must say the classified noun (the frame word's share in `codes`)


# Frames that classify something and name nothing alone: a "category" is of a cable, a "class" of a site.
CLASSIFIERS = frozenset({"category", "class", "grade", "type", "kind"})
_GLUED = 2  # fragments that glue the word to the code ("cat6", "CAT6a") for the word to be part of it
_WORD_BEFORE = re.compile(r"([A-Za-z]+)[\s:;=|\-.]{0,4}$")


def merged_clippings(found: list[list[Code]]) -> list[list[Code]]:
    """``found`` with the codes after a word of three letters and those after a longer word it starts in
    one family ("cat 6", "Category 6A": both ``cat``): the short word is a clipping of the long one."""
    keys = {f[1] for codes in found for f, _, _, _ in codes if f[0] == "numbered"}
    short = {k2: k for k in keys for k2 in keys if len(k) == 3 and k2 != k and k2.startswith(k)}
    return [
        [
            (("numbered", short.get(f[1], f[1])), code, a, b) if f[0] == "numbered" else (f, code, a, b)
            for f, code, a, b in codes
        ]
        for codes in found
    ]


def glued_word(texts: Sequence[str], found: Sequence[list[Code]], family: tuple[str, str]) -> str | None:
    """The word a code of ``family`` is written glued to ("cat6", "CAT6a", "cat7" -> "cat"), when two
    fragments or more glue them: then, when its full word is a classifier (`CLASSIFIERS`), the word is
    part of the code, written lower-case before it (cat5e, whatever the spelling: "Cat 5e", "CAT-5e",
    "Category 5e"); None when they write the two apart ("Cat 4", "Cat-M1": the code alone, M1)."""
    words: Counter[str] = Counter()
    for text, codes in zip(texts, found, strict=True):
        start = next((a for f, _, a, _ in codes if f == family), None)
        if start and text[start - 1].isalpha() and (word := _WORD_BEFORE.search(text[:start])) is not None:
            words[word.group(1).lower()] += 1
    if sum(words.values()) < _GLUED:
        return None
    return min(words, key=lambda w: (len(w), w))


def glued_spellings(text: str, start: int, code: str) -> set[str]:
    """How a set of glued codes may spell the ``code`` at ``start`` of ``text``, with the word before it
    and with its clipping ("Category 6A" -> {"category6a", "cat6a"}): what a later fragment is tested by."""
    word = _WORD_BEFORE.search(text[:start])
    if word is None:
        return set()
    said = word.group(1).lower()
    return {f"{said}{code.lower()}", f"{said[:3]}{code.lower()}"}


def full_word(texts: Sequence[str], clipped: str) -> str:
    """The longest word of ``texts`` that starts with ``clipped`` and stands right before a code's number
    ("Category 6A" for "cat"), else ``clipped``."""
    spelled = re.compile(rf"\b({re.escape(clipped)}[a-z]*)[\s:;=|\-.]{{1,4}}\d", re.IGNORECASE)
    words = {m.group(1).lower() for t in texts for m in spelled.finditer(t)}
    return max(words | {clipped}, key=lambda w: (len(w), w))


def classified(texts: Sequence[str], frame: str, stop: frozenset[str]) -> str | None:
    """The noun a classifier ``frame`` is said of: the word family most fragments say ("cat 5 cable", "the
    cabling is Cat 5e": cable), in ``_SHARE`` of them and two or more, by its most used spelling."""

    def said() -> Iterator[str]:  # each fragment's words once, in the order said (`word_families`)
        for text in texts:
            prefixes = {found.prefix.lower() for found in find_ids(text)}  # "CELL-0412": no word of the text
            for word in dict.fromkeys(w.strip("-") for w in _WORD.findall(text.lower())):
                if len(word) >= 4 and word not in stop and word not in prefixes and word[:3] != frame[:3]:
                    yield word

    return most_said(word_families(said()), max(2, _SHARE * len(texts)))
