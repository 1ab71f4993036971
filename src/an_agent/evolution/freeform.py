"""Free-form string values for patch synthesis: a name that differs in every fragment of a cluster.

"the handset is a Samsung Galaxy S23", "customer uses an iPhone 15", "device: Pixel 8 pro": each fragment
names one value of one kind (a device model, a firmware version, a vendor and model, a person), and the
values are not a closed set: nearly every fragment names another one. The key takes a ``string``
(`an_agent.evolution.inference`, rule 5, before closed sets), its description says what the value is and
maps real fragments to their value ("'the handset is a Samsung Galaxy S23' -> 'Samsung Galaxy S23'").

A value is found by its surface, the way names are written in English (`name_spans`): capitalised words
inside a sentence ("Samsung", "Maria Lopez"), words with an inner capital ("iPhone", "OnePlus"), acronyms
("SR OS"), model and version tokens mixing letters and digits or dotted numbers ("S23", "g54",
"21.3.2", "v3.9.7"), and a plain number or a short lowercase word only inside such a span ("iPhone 15",
"Pixel 8 pro"). Identifiers (CR-123: an array, rule 3), quantities with a unit ("40 degrees"), clock
times and calendar words (Monday, December, UTC: dates) are never part of a value.

The rule fires only when (`freeform_spec`) ``FREEFORM_SHARE`` of the fragments name a value, the values
are mostly different (``FREEFORM_DISTINCT``: few repeats, so no closed set), and the spans fill a shared
frame (the same word before or after a value in two fragments: "is a <X>", "firmware <X>"). A condition
that names a capitalised word once ("someone from Securitas must accompany the team") stays a flag.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from an_agent.evolution.value_words import ARTICLES
from an_agent.schemas.extract import find_ids, find_quantities

# A free-form value is found by its surface alone (no unit, no shape like CR-123), so it must be named by
# most of the fragments, not only by TYPE_SHARE of them: a cluster of conditions mentions a few names.
FREEFORM_SHARE = 0.6
# Distinct values over fragments that name one: a free-form slot repeats few values (a closed set, which
# repeats its values, is `alternatives`' matter).
FREEFORM_DISTINCT = 0.7

_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['.\-][A-Za-z0-9]+)*")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words written with a capital that are dates, times or the speaker, not names of a value.
_CALENDAR = _words(
    """monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december utc gmt cet cest i"""
)


@dataclass(frozen=True)
class Span:
    """A name-like span of one fragment: its text as written and its character offsets."""

    text: str
    start: int
    end: int
    strong: bool  # holds a model / version token or several name words (not one capitalised word)


# Dates and clock times ("2026-12-01T06:00Z", "06:00", "10:30h"): rule 1's values, never part of a name.
_DATE_OR_CLOCK = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?)?[A-Za-z]*|\d{1,2}:\d{2}[A-Za-z]*")


def _has_letter_and_digit(token: str) -> bool:
    return any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _is_version(token: str) -> bool:
    """Dotted numbers ("21.3.2", "5.4.1"): a version, not a quantity (which has one dot at most)."""
    return token.count(".") >= 2 and any(c.isdigit() for c in token)


def _is_name_word(token: str, first: bool) -> bool:
    """A capitalised word (not the sentence's first), a word with an inner capital, or an acronym."""
    if not token or token.lower() in _CALENDAR or not token[0].isalpha():
        return False
    inner_capital = any(c.isupper() for c in token[1:]) and any(c.islower() for c in token)
    acronym = len(token) >= 2 and token.isalpha() and token.isupper()
    return inner_capital or acronym or (token[0].isupper() and not first)


def name_spans(text: str, stop_words: frozenset[str]) -> list[Span]:
    """The name-like spans of ``text``, in order (module docstring for what is name-like).

    A span is a run of tokens separated by single spaces; it starts with a name word or a model / version
    token, takes plain numbers and, after a token with a digit, one short lowercase word that is no stop
    word ("8 pro", "2nd gen"), and a short particle between two name words ("Peter de Vries"). The
    sentence's first word counts as a name word only when a name-like token follows it ("Samsung S23").
    """
    blocked = [(q.start, q.end) for q in find_quantities(text)] + [(i.start, i.end) for i in find_ids(text)]
    blocked += [m.span() for m in _DATE_OR_CLOCK.finditer(text)]
    tokens = [m for m in _TOKEN.finditer(text) if not any(s <= m.start() < e for s, e in blocked)]
    spans: list[Span] = []
    run: list[re.Match[str]] = []
    kinds: list[str] = []

    def close() -> None:
        while kinds and kinds[-1] in ("particle",):  # a particle never ends a name
            run.pop()
            kinds.pop()
        if run and any(k in ("name", "model") for k in kinds):
            strong = "model" in kinds or kinds.count("name") >= 2
            spans.append(Span(text[run[0].start() : run[-1].end()], run[0].start(), run[-1].end(), strong))
        run.clear()
        kinds.clear()

    for index, match in enumerate(tokens):
        token = match.group(0)
        adjacent = bool(run) and text[run[-1].end() : match.start()] == " "
        if run and not adjacent:
            close()
        first = match.start() == 0 or text[: match.start()].rstrip().endswith((".", "!", "?"))
        nxt = tokens[index + 1].group(0) if index + 1 < len(tokens) else ""
        if _has_letter_and_digit(token) or _is_version(token):
            kind = "model"
        elif _is_name_word(token, first) or (
            first and token[0].isupper() and token.lower() not in stop_words and _name_like_next(nxt)
        ):
            kind = "name"
        elif token.isdigit() and run:
            kind = "number"
        elif run and token.islower() and token not in stop_words and len(token) <= 4:
            # "Pixel 8 pro", "iPhone SE 2nd gen": a short word after a number or model token; "de" in
            # "Peter de Vries" between two name words.
            if kinds[-1] in ("number", "model"):
                kind = "suffix"
            elif kinds[-1] == "name" and len(token) <= 3 and _is_name_word(nxt, False):
                kind = "particle"
            else:
                close()
                continue
        else:
            close()
            continue
        run.append(match)
        kinds.append(kind)
        if kind == "suffix":  # a suffix ends the name
            close()
    close()
    return spans


def _name_like_next(token: str) -> bool:
    return bool(token) and (_has_letter_and_digit(token) or _is_name_word(token, False) or token.isdigit())


def fragment_value(text: str, stop_words: frozenset[str]) -> Span | None:
    """The value a fragment names: its longest name-like span, a model / version span first."""
    spans = name_spans(text, stop_words)
    if not spans:
        return None
    return max(spans, key=lambda s: (s.strong, len(s.text), -s.start))


def _frame(text: str, span: Span) -> set[tuple[str, str]]:
    """The words right before and after a value (articles skipped), lower-case."""
    before = [w for w in re.findall(r"[a-z0-9]+|[:]", text[: span.start].lower()) if w not in ARTICLES][-1:]
    after = [w for w in re.findall(r"[a-z0-9]+|[:]", text[span.end :].lower()) if w not in ARTICLES][:1]
    return {("before", w) for w in before} | {("after", w) for w in after}


_COPULA = _words("is are was were : be")


def _kind_words(text: str, span: Span, stop_words: frozenset[str]) -> set[str]:
    """The nouns a value is said of: the content word before it, past articles, a copula and a colon
    ("the handset is a <X>", "handset: <X>", "firmware <X>"), and the word right after it ("the <X>
    carrier"); a stop word there ("on a <X>", "<X> at the gate") gives none."""
    before = [w for w in re.findall(r"[a-z0-9]+|:", text[: span.start].lower()) if w not in ARTICLES | _COPULA]
    after = re.findall(r"[a-z0-9]+|\S", text[span.end :].lower())[:1]
    return {w for w in [*before[-1:], *after] if w.isalpha() and len(w) >= 3 and w not in stop_words}


@dataclass(frozen=True)
class FreeForm:
    """A free-form slot: each fragment's value (or None), the frame words the values share, and the nouns
    two values or more are said of (`_kind_words`), most frequent first: candidates for the key's name."""

    values: tuple[str | None, ...]
    frame: tuple[str, ...]
    kinds: tuple[str, ...] = ()


def find_freeform(texts: Sequence[str], stop_words: frozenset[str]) -> FreeForm | None:
    """The free-form slot of a cluster's fragments, or None (module docstring for the conditions)."""
    n = len(texts)
    if n < 4:
        return None
    found = [fragment_value(t, stop_words) for t in texts]
    present = [(t, s) for t, s in zip(texts, found, strict=True) if s is not None]
    if len(present) < FREEFORM_SHARE * n:
        return None
    normal = Counter(s.text.lower() for _, s in present)
    if len(normal) < FREEFORM_DISTINCT * len(present):
        return None
    # Most values carry a model / version token or two name words: one capitalised word per fragment is
    # as often the start of a phrase as a name ("Easter", "Christmas": a holiday, a condition).
    if sum(1 for _, s in present if s.strong) < 0.5 * len(present):
        return None
    frames = Counter(f for t, s in present for f in _frame(t, s))
    shared = [w for (_, w), c in frames.most_common() if c >= 2]
    if not shared:
        return None
    kinds = Counter(w for t, s in present for w in _kind_words(t, s, stop_words))
    return FreeForm(
        tuple(s.text if s is not None else None for s in found),
        tuple(shared),
        tuple(w for w, c in kinds.most_common() if c >= 2),
    )


def _has_name_word(value: str) -> bool:
    """A word of three letters or more that is not an acronym ("Galaxy", "Lopez"; not "SR", "OS", "v3")."""
    return any(t.isalpha() and len(t) >= 3 and not t.isupper() for t in _TOKEN.findall(value))


_DOTTED = re.compile(r"\d\.[A-Za-z0-9]")


def value_head(values: Sequence[str | None]) -> str:
    """What the values are, by their shape, for the key's name: ``version`` when most hold a dotted number
    ("21.3.2", "SR OS 23.10.R1", "v3.9.7"), ``code`` when most are letters and digits without a word
    ("L2600", "INC0012560"), ``name`` when most hold no digit ("Maria Lopez"), else ``model`` ("Galaxy A54")."""
    present = [v for v in values if v]
    with_digit = [v for v in present if any(c.isdigit() for c in v)]
    if sum(1 for v in present if _DOTTED.search(v)) > 0.5 * len(present):
        return "version"
    if sum(1 for v in with_digit if not _has_name_word(v)) > 0.5 * len(present):
        return "code"
    if len(with_digit) < 0.5 * len(present):
        return "name"
    return "model"


def without_values(phrases: Sequence[str], values: Sequence[str | None]) -> list[str]:
    """The phrases that hold no word of a value: they can name the kind ("handset"), not "sony xperia"."""
    words = {w.lower() for v in values if v for w in _TOKEN.findall(v)}
    return [p for p in phrases if not set(p.split()) & words]


def freeform_phrase(ranked: Sequence[str], values: Sequence[str | None], kinds: Sequence[str] = ()) -> str | None:
    """The name of a free-form key: the best-ranked phrase of one or two words that holds no word of a
    value (`without_values`), one ending with a noun the values are said of (``kinds``: "ticket" in "see
    ticket <X>", "previous ticket <X>") first, with the values' head (`value_head`) appended unless the
    phrase ends with it ("firmware" -> "firmware version", "phone model" stays); None without a phrase."""
    head = value_head(values)
    phrases = [p for p in without_values(ranked, values) if len(p.split()) <= 2]
    framed = [p for p in phrases if p.split()[-1] in kinds]  # the noun ends the phrase: not "carrier overnight"
    for phrase in [*framed, *phrases][:1]:
        return phrase if phrase.split()[-1] == head else f"{phrase} {head}"
    return None
