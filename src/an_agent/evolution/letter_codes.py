"""Enumerations of letter codes: short capital tokens that fill one slot next to one frame word.

Operators name some kinds by letter codes with no digit: fibre connectors (LC, SC, FC, MPO: "LC-LC patch
cords", "SC/APC connectors", "conn LC duplex", "connecter is MPO 12 fibre"), and so on. Such a code is no
word to the embedding model and has none of the shapes of `codes` (digits, a prefix and digits, one
capital after a frame word), so a cluster of them was typed by the words around them (the SMS corpus's
connector types were a set of fibre, cords, port, dirty, named `bring_type`). Messages are also full of
capitals that are no value of the idea: acronyms said in every kind of request (NOC, SLA, UTC, ETA, SMS,
ASAP, FYI, GPS, ...), a gateway's sender tag ("[SMS +39…]", "WA/Tomek:"), the equipment a value is said
of ("on the ODF", "the SFP side"). `find_letter_codes` tells them apart by where they stand, not by a list:

- a **code** is a token of 2 to 4 capital letters (`_CODE`), possibly with a suffix code after a dash or
  a slash ("SC/APC", "LC-LC", "MPO-12": the value is the first part, the suffix a detail of it); a token
  with an identifier's number after it ("CELL-0412", "RBS-4411") is no code;
- the **slot** is a frame word (`_FRAME_WINDOW` content words either side of a code, within its clause:
  a comma, a bracket, a colon after the code end it; "type: SC" and "= SC" are labels) that stands next
  to codes in two fragments or more and next to two codes or more (the slot varies); the word family
  next to the most distinct codes, then in the most fragments, is the frame (connector, connectors,
  "conn", "connecter" read through `chat_words`; not the "bring" of "bring FC cords", next to fewer);
  a code never framed by it is not in the slot (a sender tag, an acronym of the chat);
- the **values** exclude each other (`alternatives.excludes`' rule: a fragment names one connector
  type; a code that shares fragments with two values, or with one that is rare, is context: "ODF side
  is LC", "old FC ... on the ODF"): of the codes in the slot, the set of mutually exclusive ones covering
  the most fragments; a lower-case spelling next to the frame ("lc connector") is the same value;
- the set needs the numbers of every closed set (`ALT_MIN_VALUES` values, two of them named twice,
  covering `ALT_MIN_SHARE` of the fragments); a code in every fragment is the topic, not a value.

The values are the codes in capitals, in the order of their fragments' count; the key is named by the
frame and the head "type" (`connector_type`), the convention of closed sets named by their category.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from an_agent.evolution.alternatives import ALT_MIN_SHARE, ALT_MIN_VALUES, same_family
from an_agent.evolution.chat_words import full_word

_CODE = re.compile(r"[A-Z]{2,4}")
_TOKEN = re.compile(r"[^\W_]+")
# After a code: an identifier's body ("CELL-0412", "MW-356": three characters or more with a digit).
_ID_BODY = re.compile(r"-(?=[A-Z0-9]*\d)[A-Z0-9]{3,}")
# What ends a clause between two tokens; ':' and '=' right before a code are a label ("type: SC").
_PAUSE = re.compile(r"[,;()\[\]{}!?.:|]")
_FRAME_WINDOW = 2  # content words either side of a code that may be its frame
_MAX_CANDIDATES = 10  # codes in the slot searched for the best exclusive set (2^10 subsets at most)
_MIN_RECURRING = 2


@dataclass(frozen=True)
class LetterCodes:
    """The codes of one slot: values by count, each fragment's value (or None), and the frame word."""

    enum: tuple[str, ...]
    values: tuple[str | None, ...]
    frame: str


@dataclass(frozen=True)
class _Spot:
    """A code where it stands in a fragment: the code, and the frame words either side of it."""

    code: str
    lower: bool  # written in lower case ("lc connector")
    words: tuple[str, ...]


def _is_code(token: str) -> bool:
    return token.isascii() and _CODE.fullmatch(token) is not None


def _spots(text: str, stop: frozenset[str], capitals: frozenset[str]) -> list[_Spot]:
    """Every code of ``text`` (in capitals, or in lower case when ``capitals``, the codes the fragments write
    in capitals, hold it) with the content words around it."""
    toks = [(m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(text)]
    out = []
    for i, (word, start, end) in enumerate(toks):
        capital = _is_code(word)
        lower = word.islower() and word.upper() in capitals
        if not (capital or lower):
            continue
        glue = text[toks[i - 1][2] : start] if i else ""
        if i and glue in ("-", "/") and _is_code(toks[i - 1][0]):
            continue  # the suffix of a code ("SC/APC", "LC-LC"): a detail of the value before it
        if capital and _ID_BODY.match(text, end):
            continue  # "CELL-0412": an identifier's prefix
        last = i
        while last + 1 < len(toks) and text[toks[last][2] : toks[last + 1][1]] in ("-", "/"):
            last += 1  # the unit runs over its suffixes
        before = _window(text, toks, range(i - 1, -1, -1), stop, label=True)
        after = _window(text, toks, range(last + 1, len(toks)), stop, label=False)
        out.append(_Spot(word.upper(), not capital, (*before, *after)))
    return out


def _window(
    text: str, toks: Sequence[tuple[str, int, int]], order: range, stop: frozenset[str], *, label: bool
) -> list[str]:
    """Up to ``_FRAME_WINDOW`` content words from the code outwards (``order``: backwards when ``label``,
    where a ':' or '=' right before the code is a label's, not a clause's end), within its clause."""
    words: list[str] = []
    for step, j in enumerate(order):
        word, start, end = toks[j]
        gap = text[end : toks[j + 1][1]] if label else text[toks[j - 1][2] : start]
        if label and step == 0:
            gap = gap.replace(":", "").replace("=", "")
        if _PAUSE.search(gap):
            break
        full = full_word(word.lower())
        if full in stop or not full.isalpha() or len(full) < 3 or _is_code(word):
            continue
        words.append(full)
        if len(words) >= _FRAME_WINDOW:
            break
    return words


def _frame(spots: Sequence[list[_Spot]]) -> tuple[str, set[str]] | None:
    """The frame word (its most used spelling) and the codes it frames, or None.

    The frame of a slot is the word its values share: the word family next to the most distinct codes,
    then in the most fragments ("bring LC-LC", "bring FC cords", "bring 3 spare SC" frame three codes;
    "lc connector", "FC screw connectors", "connecter is MPO", "SC/APC connectors" four). A code in lower
    case counts when the same code is written in capitals in some fragment ("lc connector")."""
    families: dict[str, tuple[set[int], set[str], Counter[str]]] = {}
    roots: dict[str, str] = {}  # each word's family, looked up once
    for i, found in enumerate(spots):
        for spot in found:
            for word in spot.words:
                if word not in roots:
                    roots[word] = next((r for r in families if same_family(r, word)), word)
                root = roots[word]
                docs, codes, spellings = families.setdefault(root, (set(), set(), Counter()))
                docs.add(i)
                codes.add(spot.code)
                spellings[word] += 1
    usable = [(len(c), len(d), root) for root, (d, c, _) in families.items() if len(d) >= 2 and len(c) >= 2]
    if not usable:
        return None
    root = max(usable)[2]
    _, codes, spellings = families[root]
    singular = Counter(w[:-1] if w.endswith("s") and w[:-1] in spellings else w for w in spellings.elements())
    return max(singular, key=lambda w: (singular[w], len(w), w)), codes


def _exclusive(a: set[int], b: set[int]) -> bool:
    """Two values of one slot: no fragment names both, or one does and both are named in three or more."""
    shared = len(a & b)
    return shared == 0 or (shared == 1 and min(len(a), len(b)) >= 3)


def _best_set(docs: dict[str, set[int]]) -> list[str]:
    """Of the codes (with the fragments naming each), the mutually exclusive ones covering the most
    fragments (then the most codes, then the first in order)."""
    codes = sorted(docs, key=lambda c: (-len(docs[c]), c))[:_MAX_CANDIDATES]
    best: tuple[int, int] = (0, 0)
    chosen: list[str] = []

    def search(index: int, picked: list[str], covered: set[int]) -> None:
        nonlocal best, chosen
        if index == len(codes):
            score = (len(covered), len(picked))
            if score > best:
                best, chosen = score, list(picked)
            return
        code = codes[index]
        if all(_exclusive(docs[code], docs[p]) for p in picked):
            search(index + 1, [*picked, code], covered | docs[code])
        search(index + 1, picked, covered)

    search(0, [], set())
    return chosen


def find_letter_codes(texts: Sequence[str], stop: frozenset[str]) -> LetterCodes | None:
    """The enumeration of letter codes the fragments choose from (module docstring), or None."""
    n = len(texts)
    if n < 4:
        return None
    # The codes written in capitals (not an id's prefix, not a suffix), then each with its lower-case uses.
    capitals = frozenset(s.code for t in texts for s in _spots(t, stop, frozenset()))
    if not capitals:
        return None
    spots = [_spots(t, stop, capitals) for t in texts]
    framed = _frame(spots)
    if framed is None:
        return None
    frame, in_slot = framed
    root = frame
    docs: dict[str, set[int]] = {}
    for i, found in enumerate(spots):
        for spot in found:
            near_frame = any(same_family(root, w) for w in spot.words)
            if spot.code in in_slot and (not spot.lower or near_frame):
                docs.setdefault(spot.code, set()).add(i)
    chosen = _best_set(docs)
    counts = {c: len(docs[c]) for c in chosen}
    covered = set().union(*(docs[c] for c in chosen)) if chosen else set()
    if (
        len(chosen) < ALT_MIN_VALUES
        or sum(1 for c in counts.values() if c >= _MIN_RECURRING) < 2
        or len(covered) < ALT_MIN_SHARE * n
    ):
        return None
    values = tuple(
        next((s.code for s in found if s.code in counts and i in docs[s.code]), None) for i, found in enumerate(spots)
    )
    enum = tuple(sorted(counts, key=lambda c: (-counts[c], c)))
    return LetterCodes(enum, values, frame)
