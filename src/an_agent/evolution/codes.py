"""Closed sets of short codes for patch synthesis: 2G / 3G / 4G / 5G, P1-P4, Class A / B / C.

Operators name many slots with codes rather than words: radio generations, priorities, site classes,
service tiers. A code is no word to the embedding model (4G and 5G are 0.85 alike on MiniLM, above the
lexical rule's "two spellings of one word"), and its values are tokens of one *shape* rather than words of
one kind, so `find_codes` recognises them by shape (`inference`, rule 6, before the lexical closed set):

- a **family** of codes is one shape with one fixed part: digits and a letter suffix (``2G``, ``4G``:
  the family ``<n>G``), a letter prefix and digits (``P1``, ``P4``: ``P<n>``), a standard's designation
  (``G.652.D``, ``G.655``, ``G.657.A1``, also written ``G652D``, ``G.652 D``: the family ``G.<n>``,
  ITU-T's fibre, codec and protocol recommendations), or a single capital
  letter after one frame word (``Class A``, ``class-C``, ``classification B``: the family ``class``),
  or a country's ISO 3166 code in capitals (``roaming in DE``, ``Visited network: ES``: the family
  ``country``, `CodeSet.kind` "country", which the key's name says: roaming_country), or its name in
  English, which is the same value (``the depot in Poland``: PL; ``an_agent/data/country_names.json``);
  tokens that are units or ordinals (``2h``, ``45min``, ``3rd``), or part of an identifier
  (``CELL-0401``), are no codes; and, only when no family of those shapes makes a set, a **frame word and
  a number** (``Tier-2``, ``tier 3``, ``Tier2``: the family ``tier``; ``Cat M1``, ``Cat-1``, ``Cat 4``;
  ``band n78``, ``band: B3``, ``band 20``), one or two letters and up to three digits right after a word,
  never a quantity ("band 20 MHz"), a clock time, a decimal or a number written in groups ("2 400"); each
  value in the spelling most fragments give it (``n78``, not ``N78``); the number may end in a letter
  ("Cat 5e", "Category 6A"), and a code that two fragments glue to a classifier word ("cat6", "CAT6a") is
  written with it in every spelling (``cat5e``, ``cat6a``), the key named by what the word classifies
  (`CodeSet.of`: cable category);
- the set needs ``ALT_MIN_VALUES`` distinct values, two of them in two fragments or more, covering
  ``ALT_MIN_SHARE`` of the fragments (the lexical rule's numbers): a code in every fragment is the topic
  ("the 5G launch"), a code in one fragment a one-off; codes of one prefix or suffix, or countries, in
  nearly every fragment (``_FILLED_SHARE``) need only one value named twice (a typing sample of seven notes names
  six IP ratings);
- each fragment's value is the first code of the family it names; the values are listed in their natural
  order (2G, 3G, 4G, 5G), not by frequency: a code's order usually means something (a priority, a class);
- the **frame word** (`CodeSet.frame`) is the content word most fragments put right before a code (or
  right after, when none is before): "priority P1", "prio P2" -> priority; "site class: B" -> class;
  "impacted RAT: 4G", "technology 4G" -> technology. Spellings of one word family (prio / priority, class /
  classification) count together and the most used spelling names them (the longest between equals; a clipped spelling
  of four letters or fewer, "prio", by its full word when it is used too, "priority").
  It names the key (`naming`);
- and, only when none of those shapes makes a set, **letter codes** (`letter_codes`): capitals of 2-4
  letters in one slot next to one frame word ("LC-LC patch cords", "SC/APC connectors", "conn LC": the
  connector's LC, SC, FC, MPO), named by the frame and the head "type" (`CodeSet.head`: connector_type).
"""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources

from an_agent.evolution.alternatives import ALT_MIN_SHARE, ALT_MIN_VALUES
from an_agent.evolution.glued_codes import (
    CLASSIFIERS,
    Code,
    classified,
    full_word,
    glued_spellings,
    glued_word,
    merged_clippings,
)
from an_agent.evolution.letter_codes import find_letter_codes
from an_agent.evolution.value_words import word_set
from an_agent.evolution.word_families import most_said, word_families
from an_agent.schemas.extract import UNIT_WORDS, find_ids

# Digits then 1-2 letters (4G, 5GC) or 1-2 letters then digits (P1, T2); never part of an id or a number.
_DIGIT_FIRST = re.compile(r"(?<![\w.\-])(\d{1,2})([A-Za-z]{1,2})(?![\w.\-])")
_LETTER_FIRST = re.compile(r"(?<![\w.\-])([A-Za-z]{1,2})(\d{1,2})(?![\w.\-]|:\d)")
# Digits, a letter, digits, a letter: antenna branches (1T1R, 2T2R, 4T4R, 8T8R, "2t2r"), the family
# <n>T<n>R; in any case, never part of an id or a word.
_PAIRED = re.compile(r"(?<![\w.\-])(\d{1,2})([A-Za-z])(\d{1,2})([A-Za-z])(?![\w.\-])")
# ... and capitals written apart from their digits: "IP 65", "IP-67", "P 1" (the same code as IP65, P1).
_LETTER_FIRST_APART = re.compile(r"(?<![\w.\-])([A-Z]{1,2})[ \-](\d{1,2})(?![\w.\-]|:\d|[ \-]\d)")
# A standard's designation: a capital, a dot, three or four digits and a part ("G.652.D", "G.655",
# "G.657.A1", "Y.1731"; also "G652D", "G.652 D"): ITU-T recommendations name fibres, codecs and protocols.
# The family is the letter; each value is written with its dots (G.652.D). Never part of a number, an
# id or a word; a bare "G652" (no dot, no part) could be a part number, and is no code.
_STANDARD = re.compile(r"(?<![\w.\-])([A-Z])(?:\.(\d{3,4})(?:[. ]([A-Z]\d?))?|(\d{3,4})([A-Z]\d?))(?![\w\-]|\.\d)")
# A single capital letter, with the word before it (punctuation such as ':', '=', '|', '-' in between).
_LETTER = re.compile(r"(?<![A-Za-z])([A-Za-z]{3,}+)[\s:=|\-]{1,4}([A-Z])(?![\w'\u2019])")  # starts at a word: linear
# A number of one or two digits, or one or two letters and digits, right after a word that is not glued to
# anything else: "Tier-2", "tier 3", "Tier2", "Cat M1", "Cat-1", "band n78", "band: B3" (the frame word,
# then the code). Never a quantity, a clock time, a date or a number written in groups ("2 400", "25 m/s").
# The code may end in one letter ("cat5e", "Cat 6A": a grade of the number) and follow its word after a dot
# ("cat.6"); a letter that is a unit or an ordinal's ("5m", "2h") makes no code (`_codes`).
_NUMBERED = re.compile(
    r"(?<![\w\-])([A-Za-z]{3,}+)(?:[\s:;=|\-]{1,4}|\.(?=\d)|(?=\d))([A-Za-z]{0,2}\d{1,3}(?:[A-Za-z](?=[^\w]|$))?)"
    r"(?![\w/\-'\u2019]|[.,:]\d|\s+\d)"
)
# Only from where a space run starts (read right after a code's last digit): linear when scanned.
_UNIT_AFTER = re.compile(r"(?<!\s)\s*([A-Za-z\u00b0\u00ba%]+)")
_WORD = re.compile(r"[a-z][a-z\-]*")
_NOT_CODES = UNIT_WORDS | frozenset(
    {"h", "m", "s", "d", "k", "x", "st", "nd", "rd", "th", "am", "pm", "ms", "kb", "mb"}
)
# Letters before a number are a code's prefix whatever unit they could spell after one ("S1-S3"
# severities, "L1-L3" support levels, "C2" classes): only a multiplier ("x2") and a version ("v2") are not.
_NOT_PREFIXES = frozenset({"x", "v"})
_MIN_RECURRING = 2  # values named in two fragments or more
# Codes of one prefix or suffix, or countries, in this share of the fragments fill the slot: one value
# named twice is enough ("IP66", "IP54", "IP65", "IP55", "IP55", "IP67" in seven notes: a sample too small for repeats).
_FILLED_SHARE = 0.8
# A frame word names an acronym's codes when this share of the fragments says it.
_FRAME_SHARE = 0.4

# Countries written as their ISO 3166-1 alpha-2 code ("roaming in DE", "Visited network: ES"), and UK,
# which the UK writes for itself: a code family of their own, named with "country". A code that is also
# a word or an acronym operators write in capitals ("IN", "NO", "US"; "NR" radio, "RU" radio unit, "SA"
# standalone, "PA" amplifier, "BT", "HR", "CC" and "BR" of e-mails; "NE" and "SE" sectors) is left out:
# a few countries are missed rather than a sentence's words read as countries.
_COUNTRIES = word_set(
    """AD AE AF AG AL AO AQ AR AU AW AX AZ BA BD BF BG BH BI BJ BL BM BN BO BQ BV BW BZ CA CD CF CG CH CI
    CK CL CM CN CO CR CV CX CY CZ DE DJ DK DM DZ EC EE EG EH ER ES ET FI FJ FK FO FR GA GB GD GE GF GG GH GI
    GL GM GN GP GQ GR GS GT GU GW GY HK HN HT HU IE IL IM IO IQ IR IT JE JM JO JP KE KG KH KI KN KP KR KW KY
    KZ LB LC LI LK LR LS LT LU LV LY MA MC MD MF MG MH MK MN MP MQ MR MT MU MV MX MZ NC NF NG NI NL NP NU NZ
    OM PF PG PH PK PL PN PT PW PY QA RO RS RW SB SC SD SG SH SI SJ SK SL SR SS SV SX SY SZ TC TD TF TG TH TJ TK TL
    TN TR TW TZ UA UG UY UZ VC VE VG VN VU WF WS YE YT ZA ZM ZW UK"""
)
# Two capitals alone, not after a number ("35 GB" is a quantity) nor inside an id, a path or a word.
_COUNTRY = re.compile(r"(?<![\w\-./])(?<!\d )([A-Z]{2})(?![\w\-/])")


@cache
def _country_names() -> tuple[dict[str, str], re.Pattern[str]]:
    """The country names of ``an_agent/data/country_names.json`` (name -> ISO code) and a pattern of them,
    longest first, written with their capitals ("the depot in Poland" is the code PL)."""
    raw = json.loads(resources.files("an_agent").joinpath("data/country_names.json").read_text("utf-8"))
    names: dict[str, str] = raw["names"]
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return names, re.compile(rf"(?<![\w\-])(?:{alternatives})(?![\w\-])")


_Code = Code  # (family, code, start, end)


@dataclass(frozen=True)
class CodeSet:
    """A closed set of codes: the values in natural order, each fragment's value, and the frame word."""

    enum: tuple[str, ...]
    values: tuple[str | None, ...]
    frame: str | None
    kind: str | None = None  # what the codes are codes of, when their shape says it ("country")
    head: str | None = None  # the head word the name takes after the frame ("connector" -> connector type)
    of: str | None = None  # what a classifier frame classifies ("cat5e", "Cat 6A" of a cable: cable category)


def _codes(text: str) -> list[_Code]:
    """(family, code, start, end) of every code-shaped token of ``text``, in order."""
    out = []
    for match in _DIGIT_FIRST.finditer(text):
        letters = match.group(2)
        if letters.lower() not in _NOT_CODES:
            out.append((("suffix", letters.upper()), match.group(0).upper(), match.start(), match.end()))
    for match in _PAIRED.finditer(text):
        family = ("paired", f"{match.group(2)}{match.group(4)}".upper())
        out.append((family, match.group(0).upper(), match.start(), match.end()))
    for match in itertools.chain(_LETTER_FIRST.finditer(text), _LETTER_FIRST_APART.finditer(text)):
        letters = match.group(1)
        if letters.lower() not in _NOT_PREFIXES:
            code = f"{letters}{match.group(2)}".upper()
            out.append((("prefix", letters.upper()), code, match.start(), match.end()))
    for match in _STANDARD.finditer(text):
        number, part = match.group(2) or match.group(4), match.group(3) or match.group(5)
        code = f"{match.group(1)}.{number}" + (f".{part}" if part else "")
        out.append((("standard", match.group(1)), code, match.start(), match.end()))
    for match in _LETTER.finditer(text):
        frame = match.group(1).lower()
        if match.group(2) != "I":  # the pronoun
            out.append((("frame", frame[:4]), match.group(2), match.start(2), match.end(2)))
    for match in _COUNTRY.finditer(text):
        if match.group(1) in _COUNTRIES:
            out.append((("country", ""), match.group(1), match.start(1), match.end(1)))
    names, spelled = _country_names()
    for match in spelled.finditer(text):
        out.append((("country", ""), names[match.group(0)], match.start(), match.end()))
    for match in _NUMBERED.finditer(text):
        frame, code = match.group(1).lower(), match.group(2)
        unit = _UNIT_AFTER.match(text, match.end())
        if frame in UNIT_WORDS or (code.isdigit() and unit is not None and _is_unit(unit.group(1))):
            continue  # "band 20 MHz", "at 45 degrees": a quantity, not a code
        if code[-1].isalpha() and code[-2].isdigit() and _is_unit(code[-1]):
            continue  # "band 5m", "tier 2h": a number and its unit
        out.append((("numbered", frame[:4]), code, match.start(2), match.end(2)))
    return sorted(out, key=lambda c: c[2])


def codes_in(text: str) -> set[str]:
    """Every code ``text`` names, in its family's spelling ("IP 65" -> IP65; "the depot in Poland" -> PL; a
    number after a word also with the word, as a set of glued codes spells it: "Category 6A" -> cat6a)."""
    out = set()
    for family, code, start, _ in _codes(text):
        out.add(code)
        if family[0] == "numbered":
            out |= glued_spellings(text, start, code)
    return out


def _fills_the_slot(family: tuple[str, str], cover: int, n: int) -> bool:
    """Codes of one fixed prefix or suffix (IP<n>, <n>G), or countries, in nearly every fragment
    (``_FILLED_SHARE``)."""
    return family[0] in ("prefix", "suffix", "paired", "standard", "country") and cover >= _FILLED_SHARE * n


def _is_unit(word: str) -> bool:
    lower = word.lower()
    return lower in UNIT_WORDS or lower in _NOT_CODES or lower in _FREQUENCY or word[:1] in "\u00b0\u00ba%"


_FREQUENCY = frozenset({"hz", "khz", "mhz", "ghz"})


def _natural(code: str) -> tuple[int, str]:
    digits = "".join(ch for ch in code if ch.isdigit())
    return (int(digits) if digits else 0, code)


def find_codes(texts: Sequence[str], stop_words: frozenset[str]) -> CodeSet | None:
    """The closed set of codes the fragments choose from (module docstring), or None."""
    n = len(texts)
    if n < 4:
        return None
    found = merged_clippings([_codes(t) for t in texts])
    families = Counter(f for codes in found for f in {c[0] for c in codes})
    best: CodeSet | None = None
    best_cover = 0
    # A frame word and a number ("tier 2", "Cat M1", "band n78") only when no code of its own shape makes
    # a set: "priority P1" stays the family P<n> it was.
    ranked = [f for f, _ in families.most_common() if f[0] != "numbered"]
    ranked += [f for f, _ in families.most_common() if f[0] == "numbered"]
    for family in ranked:
        if family[0] == "numbered" and best is not None:
            break
        values = [next((c[1] for c in codes if c[0] == family), None) for codes in found]
        glued = glued_word(texts, found, family) if family[0] == "numbered" else None
        if glued is not None and full_word(texts, glued) not in CLASSIFIERS:
            glued = None  # "QCI1", "qci8": the word names the slot itself (qci: 1), no class of something
        if glued is not None:
            values = [None if v is None else f"{glued}{v.lower()}" for v in values]
        elif family[0] == "numbered":
            values = _by_spelling(values)
        counts = Counter(v for v in values if v is not None)
        cover = sum(counts.values())
        if (
            len(counts) < ALT_MIN_VALUES
            or sum(1 for c in counts.values() if c >= _MIN_RECURRING) < (1 if _fills_the_slot(family, cover, n) else 2)
            or cover < ALT_MIN_SHARE * n
            or cover <= best_cover
        ):
            continue
        enum = tuple(sorted(counts, key=_natural))
        frame = _frame(texts, found, family, stop_words)
        kind = "country" if family[0] == "country" else None
        of = None
        if glued is not None:
            frame = full_word(texts, glued)
            of = classified(texts, frame, stop_words)
        best, best_cover = CodeSet(enum, tuple(values), frame, kind, of=of), cover
    if best is None and (letters := find_letter_codes(texts, stop_words)) is not None:
        # Letter codes (LC, SC, FC, MPO) only when no code of a shape with digits or a frame's single capital
        # makes a set: the shapes above stay what they were (`letter_codes`).
        return CodeSet(letters.enum, letters.values, letters.frame, head="type")
    return best


def _by_spelling(values: Sequence[str | None]) -> list[str | None]:
    """Each value in the spelling most fragments use for it, whatever its case ("N78", "n78" -> n78)."""
    spellings: dict[str, Counter[str]] = {}
    for value in values:
        if value is not None:
            spellings.setdefault(value.casefold(), Counter())[value] += 1
    return [None if v is None else spellings[v.casefold()].most_common(1)[0][0] for v in values]


def _frame(
    texts: Sequence[str], found: Sequence[list[_Code]], family: tuple[str, str], stop: frozenset[str]
) -> str | None:
    """The frame word of the codes of ``family`` (`frame_word`); an acronym's codes that no word frames in
    ``_FRAME_SHARE`` of the fragments are named by the acronym (IP54, IP65 -> "ip code": "cabinet" stood
    before two of seven)."""
    spans = [next(((c[2], c[3]) for c in codes if c[0] == family), None) for codes in found]
    word, framed = _framed(texts, spans, stop)
    if family[0] == "prefix" and len(family[1]) >= 2 and framed < _FRAME_SHARE * len(texts):
        return f"{family[1].lower()} code"
    if word is None and family[0] == "standard":
        # A designation is said after a phrase, not one word ("the fibre type is ITU-T G.655", "type of
        # fiber optic at this segment is G652D"): the word most of the clauses before it say frames it.
        word = _clause_frame(texts, spans, stop)
    return word


def _clause_frame(texts: Sequence[str], spans: Sequence[tuple[int, int] | None], stop: frozenset[str]) -> str | None:
    """The word family that the most clauses before a value (at ``spans``) say, in ``_FRAME_SHARE`` of the
    fragments and two or more, by its most used spelling; None when none does."""
    clauses = (
        re.split(r"[,;:()!?]|\.\s", _without_ids(text)[: span[0]].lower())[-1]
        for text, span in zip(texts, spans, strict=True)
        if span is not None
    )
    # Each clause's words once, in the order said (a set's order changes with the hash seed, and the first
    # spelling of a family is its root).
    said = (
        w for clause in clauses for w in dict.fromkeys(w.strip("-") for w in _WORD.findall(clause)) if w not in stop
    )
    return most_said(word_families(said), max(2, _FRAME_SHARE * len(texts)))


def label_frame(values: Sequence[str], texts: Sequence[str], stop: frozenset[str]) -> str | None:
    """The frame word of values written as labels ("tier: Silver", "Bronze tier" -> tier; `frame_word`)."""
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(v) for v in values) + r")\b", re.IGNORECASE)
    spans = [(m.start(), m.end()) if (m := pattern.search(t)) else None for t in texts]
    return frame_word(texts, spans, stop)


def frame_word(texts: Sequence[str], spans: Sequence[tuple[int, int] | None], stop: frozenset[str]) -> str | None:
    """The word family most fragments put right before their value (at ``spans``; else right after), by its
    most used spelling, when two fragments or more share it."""
    return _framed(texts, spans, stop)[0]


def _framed(
    texts: Sequence[str], spans: Sequence[tuple[int, int] | None], stop: frozenset[str]
) -> tuple[str | None, int]:
    """(`frame_word`, in how many fragments it frames the value)."""

    def framing() -> Iterator[str]:
        for text, span in zip(texts, spans, strict=True):
            if span is None:
                continue
            text = _without_ids(text)  # "CELL-0412 | 2T2R": the id's prefix is no word framing the code
            before = [w for w in _WORD.findall(text[: span[0]].lower()) if w not in stop][-1:]
            after = _WORD.findall(text[span[1] :].lower())[:1]
            after = [w for w in after if w not in stop and re.match(r"\s*[a-z]", text[span[1] :].lower())]
            yield from (w.strip("-") for w in before or after)  # "Tier-2": the word is "tier"

    spellings = word_families(framing())
    if not spellings:
        return None, 0
    _, count = max(spellings.items(), key=lambda kv: (sum(kv[1].values()), kv[0]))
    if sum(count.values()) < 2:
        return None, 0
    word = max(count, key=lambda w: (count[w], len(w), w))
    # A clipped spelling of four letters or fewer ("prio", "tech") is named by its full word when one is
    # used ("priority", "technology"); a longer word is a word of its own ("class", not "classification").
    longer = [w for w in count if w.startswith(word) and w != word]
    return (max(longer, key=lambda w: (count[w], len(w))) if len(word) <= 4 and longer else word), sum(count.values())


def _without_ids(text: str) -> str:
    """``text`` with its identifiers (CELL-0412, INC4303720) blanked, every other offset kept."""
    for found in find_ids(text):
        text = text[: found.start] + " " * (found.end - found.start) + text[found.end :]
    return text


def code_phrase(
    texts: Sequence[str],
    frame: str,
    stop: frozenset[str],
    category: str | None = None,
    heads: frozenset[str] = frozenset(),
) -> str:
    """The name of a set of codes or labels: their frame word ("priority P1", "prio P2" -> priority), grown
    by a head word of ``heads`` two fragments or more put right after it ("MIMO mode: 2T2R", "MIMO mode
    (night) | 1T1R" -> mimo mode: a set's head, whatever half-translated headers put before the frame,
    "Modo MIMO"), else by the word two fragments or more put right before it ("site class: B", "site class
    = C" -> site class), else by the noun the values qualify (``category``: "Silver customer" and "tier:
    Silver" -> customer tier)."""
    after = Counter(
        b
        for text in texts
        for a, b in set(itertools.pairwise(w.strip("-") for w in _WORD.findall(text.lower())))
        if a[:4] == frame[:4] and b in heads
    )
    if after and (head := after.most_common(1)[0])[1] >= 2 and head[0][:4] != frame[:4]:
        return f"{frame} {head[0]}"
    before = _words_before(texts, frame, stop)
    if before and (top := before.most_common(1)[0])[1] >= 2 and len(frame) <= 4 and top[0].startswith(frame):
        # A clipped frame said after its full word ("UE category: Cat 4", "device category Cat M1"): the
        # full word is the frame, grown by what is said before it (device category).
        frame, before = top[0], _words_before(texts, top[0], stop)
    if before and (top := before.most_common(1)[0])[1] >= 2 and top[0][:4] != frame[:4]:
        return f"{top[0]} {frame}"
    return f"{category} {frame}" if category and category[:4] != frame[:4] else frame


def _words_before(texts: Sequence[str], frame: str, stop: frozenset[str]) -> Counter[str]:
    """In how many fragments each content word stands right before a spelling of ``frame``."""
    before: Counter[str] = Counter()
    for text in texts:
        words = [w.strip("-") for w in _WORD.findall(text.lower())]
        before.update({a for a, b in itertools.pairwise(words) if b[:4] == frame[:4] and a not in stop and a.isalpha()})
    return before


def named_as_labels(values: Sequence[str], texts: Sequence[str]) -> bool:
    """True when every value is written as a label inside sentences: capitalised like a name ("the Gold
    package", "tier: Silver", "on the Platinum plan") in most of its uses after a sentence's first word.

    Tiers, plans and classes named by words are codes written as words: their fragments say the same
    thing but for the value, so they do not group by value as slot values in words do
    (`alternatives.values_separate`), yet the capital says that the word is the name of a value, not a
    wording of the idea ("sms", "text message" and "phone" are not written "Text" inside a sentence).
    Acronyms (SMS, VIP) are no evidence: they are written in capitals anywhere.
    """
    for value in values:
        pattern = re.compile(rf"\b{re.escape(value)}\b", re.IGNORECASE)
        uses = [
            m.group(0)
            for t in texts
            for m in pattern.finditer(t)
            if t[: m.start()].strip() and not t[: m.start()].rstrip().endswith((".", "!", "?"))
        ]
        if not uses or sum(1 for u in uses if u[:1].isupper() and u[1:].islower()) <= 0.5 * len(uses):
            return False
    return True
