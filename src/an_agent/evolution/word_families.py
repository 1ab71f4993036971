"""Words counted by word family: which family most fragments say, and by which of its spellings.

Codes are named by the word their clauses say before them (`codes`: "connector LC", "fibre type G.652.D")
and glued codes by the noun their classifier is said of (`glued_codes`: "cat 5e cable" -> cable). Both
count the fragments' words by family (`alternatives.same_family`: cable / cabling / cables) and take the
family said most, by its most used spelling. Words are counted in the order they are given: a family is
kept under its first spelling, so a caller that passes a set would make the result depend on the hash seed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from an_agent.evolution.alternatives import same_family
from an_agent.schemas.extract import UNIT_WORDS


def word_families(words: Iterable[str]) -> dict[str, Counter[str]]:
    """``words`` counted by word family (`same_family`): each family under its first spelling, with how
    often each of its spellings is said; words of two letters or fewer and unit words are no family."""
    spellings: dict[str, Counter[str]] = {}
    for word in words:
        if len(word) < 3 or word in UNIT_WORDS:
            continue
        root = next((r for r in spellings if same_family(r, word)), word)
        spellings.setdefault(root, Counter())[word] += 1
    return spellings


def most_said(spellings: dict[str, Counter[str]], at_least: float) -> str | None:
    """The family said most (then the one whose spellings sort last), by its most used spelling (then the
    longest, then the last in order); None when it is said fewer than ``at_least`` times, or no family."""
    if not spellings:
        return None
    count = max(spellings.values(), key=lambda c: (sum(c.values()), max(c)))
    if sum(count.values()) < at_least:
        return None
    return max(count, key=lambda w: (count[w], len(w), w))
