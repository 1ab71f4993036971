"""The words around a value that name its key, and the lexical basics naming shares.

`naming` names a key from the phrases of its fragments; what a typed value stands next to says more than
the phrases: the preposition before a moment (until / by / at: `moment_suffix`), the words before a list
of identifiers (`id_noun`), the noun after a count (`counted_noun`), the word the requests open with
(`leading_word`). Tokens, stems and the stop words are here so that both modules read text alike.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from an_agent.evolution.chat_words import full_word
from an_agent.schemas.extract import find_counts, find_ids


def word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that open a noun phrase: what follows one is a thing, not an action or a quality.
DETERMINERS = word_set("the a an this that these those my our your his her its their some any every each no")
# The determiners skipped when reading the words around a value (its frame, the noun it is said of): an
# article, a demonstrative or a possessive says nothing of the slot ("is a <X>", "is the <X>", "my <X>"
# share "is"), while a quantifier or "no" is part of it ("no power" / "no signal" fill one slot; in "replace
# every <X>" the word before "every" is a verb, not the value's kind).
ARTICLES = DETERMINERS - word_set("some any every each no")
STOP_WORDS = word_set(
    """a an the and or but if then else of to in on at by for with from into onto over under up down out off
    is are was were be been being am do does did done have has had having i me my we our us you your he she
    it its they them their this that these those there here so as not no nor only very too just also any all
    some each every both either neither such same other own than can cannot could should would will shall
    may might must need needs please let lets get gets got make makes made keep keeps kept when once while
    until till after before about again already still yet even ever now today tonight tomorrow yesterday
    what which who whom whose where why how one two many much more most less least few lot lots s t
    around near nearby here there really quite during through throughout across behind inside outside
    without within via per along against between among since toward towards beyond another later latest
    earlier twice thrice"""
) | word_set(  # contractions of the words above, as people and speech-to-text write them ("it's fifty volts")
    """it's that's there's here's what's who's he's she's we're they're you're i'm i've we've they've i'll
    we'll i'd we'd don't doesn't didn't can't won't isn't aren't wasn't weren't hasn't haven't let's"""
)


_TOKEN = re.compile(r"[^\W_]+(?:['\-][^\W_]+)*")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens (hyphens and apostrophes kept inside words; letters of any script: a word
    with an accent, "configuración", is one word, not "configuraci" and "n")."""
    return _TOKEN.findall(text.lower())


def name_tokens(text: str) -> list[str]:
    """`tokens`, each as the word it stands for (`chat_words.full_word`: "ppl" -> people, "hght" -> height):
    the words a key is named from."""
    return [full_word(t) for t in tokens(text)]


def stem(word: str) -> str:
    for suffix in ("ing", "ers", "er", "es", "s", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


OBJECT_WORDS = word_set("the a an this these those it its our my your their all")
_UNTIL = re.compile(r"\b(?:until|till|til)\b", re.IGNORECASE)
# "due" only as a deadline ("due by 12:00", "is due tomorrow"), not as a cause ("due to the storm").
_BY = re.compile(r"\b(?:by|before|no later than|at the latest|deadline|due(?!\s+to\b))\b", re.IGNORECASE)


def moment_suffix(texts: Sequence[str]) -> str:
    """The suffix of a date-time key: the preposition says what the moment is.

    "hold until <time>" is how long a state lasts (``until``: hold_until); "done by <time>", "before
    <time>", "no later than <time>" is when something must be finished (``deadline``:
    compensation_deadline); "start at <time>" is a moment (``time``).
    """
    until = sum(1 for t in texts if _UNTIL.search(t))
    by = sum(1 for t in texts if _BY.search(t))
    if max(until, by) < 0.3 * len(texts):
        return "time"
    return "until" if until >= by else "deadline"


def id_noun(texts: Sequence[str], prefix: str) -> str | None:
    """What the identifiers are, in the fragments' words: the two words before the first identifier
    ("change request CR-20931", "changes CR-4410" -> "change"; "microwave hop MW-5120" twice ->
    "microwave hop"), the two-word phrase when two fragments share it, else the word most fragments
    share there (>= 2), else None."""
    pairs: Counter[str] = Counter()
    words: Counter[str] = Counter()
    spellings: dict[str, Counter[str]] = {}
    for text in texts:
        found = [f for f in find_ids(text) if f.prefix == prefix]
        if not found:
            continue
        before = [w for w in name_tokens(text[: found[0].start])[-2:] if w not in STOP_WORDS and w.isalpha()]
        stems = [stem(w).removesuffix("e") for w in before]  # change / changes -> chang
        for root, w in zip(stems, before, strict=True):
            spellings.setdefault(root, Counter())[w] += 1
        words.update(set(stems))
        if len(before) == 2:
            pairs[" ".join(stems)] += 1
    surface = {root: min(c.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0] for root, c in spellings.items()}
    if pairs and pairs.most_common(1)[0][1] >= 2:
        return " ".join(surface[w] for w in pairs.most_common(1)[0][0].split())
    if words and words.most_common(1)[0][1] >= 2:
        return surface[words.most_common(1)[0][0]]
    return None


# A form's label for a count: "number of devices: 9", "no. of users = 40" (the noun it counts).
_NUMBER_OF = re.compile(r"\b(?:number|no\.?|nbr|num)\s+of\s+(?P<noun>[A-Za-z]+)\s*[:=]?\s*$", re.IGNORECASE)


def counted_noun(texts: Sequence[str]) -> str | None:
    """The noun most fragments put right after their count ("350 subs", "1.2k users", "eight devices"),
    or right before it when none follows ("impacted users: 2 400") or a form's label says it ("number of
    devices: 9 (phones, ...)"), by its most used spelling, when two fragments share it.

    Fragments that count things of one family name them apart ("eight devices", "only two phones",
    "thirty laptops and phones"): the noun most of them share is the family's general one (devices),
    each narrower noun being said by few."""
    nouns: Counter[str] = Counter()
    for text in texts:
        counts = find_counts(text)
        if not counts:
            continue
        _, start, end = counts[0]
        label = _NUMBER_OF.search(text, max(0, start - 40), start)
        after = [w for w in name_tokens(text[end:])[:1] if w.isalpha() and w not in STOP_WORDS]
        before = [w for w in name_tokens(text[:start])[-1:] if w.isalpha() and w not in STOP_WORDS]
        nouns.update(name_tokens(label.group("noun")) if label else after or before)
    if not nouns or (top := nouns.most_common(1)[0])[1] < 2:
        return None
    return top[0]


def leading_word(texts: Sequence[str], *, actions: bool = False) -> str | None:
    """The content word most fragments open with, when at least two share it (else None).

    With ``actions``, only an action the requests open with ("hold until ...", "defer to ..."): a word
    that opens a fragment after a determiner ("The car went to the workshop on ...", "the vehicle visited
    ...") is the thing the sentence is about, and opens nothing then.
    """
    firsts: Counter[str] = Counter()
    things: set[str] = set()
    for text in texts:
        words = name_tokens(text)
        at = next((i for i, w in enumerate(words) if w not in STOP_WORDS), None)
        if at is None:
            continue
        firsts[words[at]] += 1
        if actions and at and words[at - 1] in DETERMINERS:
            things.add(words[at])
    ranked = [(w, n) for w, n in firsts.most_common() if w not in things]
    if not ranked:
        return None
    word, count = ranked[0]
    return word if count >= 2 and word.isalpha() else None


def event_participle(texts: Sequence[str], exclude: frozenset[str], share: float = 0.4) -> str | None:
    """The event most fragments say happened, by its past participle ("the part was shipped", "shipping
    confirmed", "SHIP DATE" -> shipped), when the word family is in ``share`` of the fragments and written
    as a participle (-ed) in one of them; ``exclude``: words that are no event (times, months, zones)."""
    families: dict[str, set[int]] = {}
    participles: Counter[str] = Counter()
    for i, text in enumerate(texts):
        for word in name_tokens(text):
            if not word.isalpha() or len(word) < 4 or word in STOP_WORDS or word in exclude:
                continue
            root = next((r for r in families if r[:4] == word[:4]), word)
            families.setdefault(root, set()).add(i)
            if word.endswith("ed"):
                participles[word] += 1
    ranked = sorted(families.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    for root, docs in ranked[:1]:
        spelled = [w for w in participles if w[:4] == root[:4]]
        if len(docs) >= share * len(texts) and spelled:
            return max(spelled, key=lambda w: (participles[w], w))
    return None
