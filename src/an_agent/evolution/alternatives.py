"""Closed sets of values for patch synthesis: words that fill one slot in a cluster's fragments.

"on battery", "on generator", "back on mains": the fragments choose one of a few words of one kind, and
the key takes ``Acceptable values:`` (`an_agent.evolution.inference`, rule 6). `find_alternatives` finds
the set, `values_separate` checks that the fragments group by value (slots) rather than using
interchangeable words for one idea (wordings), and `mentions` says which value a fragment names.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from an_agent.evolution.value_words import ARTICLES, DETERMINERS
from an_agent.schemas.embedding import Embedder, Vectors

ALT_MIN_SHARE = 0.6  # share of fragments the alternatives of a closed set must cover together
ALT_MIN_VALUES = 3  # fewer distinct values is a phrasing habit (hot / thermal), not a closed set
_ALT_MAX_TOPIC = 0.75  # a word in more fragments than this is the cluster's topic, not a value
_ALT_MIN_SHARE_EACH = 2  # fragments a recurring value appears in (a word said once is a wording, not a choice) ...
_ALT_MIN_RECURRING = 2  # ... and recurring values a set needs before values named once may join it
_ALT_MIN_KIND = 0.25  # mean similarity of a new alternative to those chosen: they must be words of one kind ...
_ALT_MIN_PAIR = 0.15  # ... and no pair far apart (battery / grid is 0.20, battery / mains 0.26 with MiniLM)
_ALT_SET_KIND = 0.30  # mean pairwise similarity of the whole set
_ALT_MAX_KIND = 0.75  # ... but not two spellings of one word (roaming / roamers)
_ALT_MAX = 8


_WORD = re.compile(r"[a-z][a-z0-9\-]*")


def word_stem(word: str) -> str:
    """The word without a plural or -ing/-ed ending (batteries -> battery, flooding -> flood)."""
    for suffix in ("ies", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    for suffix in ("ing", "ed"):  # flooding / flooded -> flood; short words (bed, sing) stay whole
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def mentions(text: str, forms: frozenset[str]) -> bool:
    return bool({word_stem(w) for w in _WORD.findall(text.lower())} & forms)


# Fragments naming one value are closer to each other than to the rest by this much. MiniLM: slots separate
# by 0.27-0.28 on the probes (power source, weather), 0.18-0.24 on the held-out corpus (weather, customer
# kinds); wordings of one idea by 0.02-0.07 (sms / text / phone, rollback), 0.10-0.14 for the closest
# (iot sensors / meters / devices, roaming users / roamers, firmware update / download).
_SEPARATION = 0.15


def values_separate(alternatives: Sequence[tuple[str, frozenset[str]]], texts: Sequence[str], vectors: Vectors) -> bool:
    """True when fragments naming the same value are closer to each other than to fragments naming another.

    Slot values mean different things ("on battery" vs "on generator"): the fragments group by value.
    Wordings of one idea ("runs hot", "thermal alarm", "temperature alarm") are interchangeable: fragments
    that use one are as close to those using another as to each other. The margin is `separation`'s.
    """
    margin = separation(alternatives, texts, vectors)
    return margin is not None and margin >= _SEPARATION


def separation(
    alternatives: Sequence[tuple[str, frozenset[str]]], texts: Sequence[str], vectors: Vectors
) -> float | None:
    """How much closer fragments naming one value are to each other than to those naming another: the mean
    similarity within a value minus the mean between two values (each value and pair counted once), over
    the values named alone in two fragments or more; None when fewer than two such values."""
    groups = [[i for i, t in enumerate(texts) if mentions(t, forms)] for _, forms in alternatives]
    # A fragment naming two values belongs to neither; a value named once has no "within" pairs and only
    # adds noise to "between": the recurring values decide.
    named = Counter(i for g in groups for i in g)
    groups = [[i for i in g if named[i] == 1] for g in groups]
    groups = [g for g in groups if len(g) >= 2]
    sims = vectors @ vectors.T
    # Each value and each pair of values counts once. Pooled over fragment pairs, a dominant value (battery
    # named alone in 6 of 10 fragments: 15 of the 16 "within" pairs) decides alone, and its loosest
    # wordings ("batteries are draining fast") hide that the values separate.
    within = [np.mean([float(sims[a, b]) for a in g for b in g if a < b]) for g in groups]
    between = [
        np.mean([float(sims[a, b]) for a in g for b in h]) for x, g in enumerate(groups) for h in groups[x + 1 :]
    ]
    if not within or not between:
        return None
    return float(np.mean(within)) - float(np.mean(between))


# Verbs and conjunctions around a word say nothing about its slot ("unit is", "temperature is").
_NOT_A_FRAME = frozenset({"is", "are", "was", "were", "be", "been", "has", "have", "had", "and", "or", "do", "does"})


def _share_a_frame(values: Sequence[str], texts: Sequence[str]) -> bool:
    """True when two of the values fill the same slot somewhere: same word before or after them.

    "on battery" / "on mains", "heavy storm" / "heavy rain": slot fillers share their frame, while
    different wordings of one idea ("heat wave", "runs hot", "cabinet temperature") do not. A frame
    word the cluster is about (in half of the fragments or more: "shared site" / "shared tower" in a
    cluster about sharing) makes no slot: it is the idea, and the words it qualifies are wordings of it.
    """
    topic = Counter(s for t in texts for s in {word_stem(w) for w in _WORD.findall(t.lower())})
    # Content words only: "on" in half of the fragments is the slot's frame ("on battery", "on mains").
    not_a_frame = _NOT_A_FRAME | {w for w, c in topic.items() if c >= 0.5 * len(texts) and len(w) >= 4}
    frames: dict[str, set[tuple[str, str]]] = {v: set() for v in values}
    for text in texts:
        words = [w for w in _WORD.findall(text.lower()) if w not in ARTICLES]
        for i, word in enumerate(words):
            stem = word_stem(word)
            if stem in frames:
                if i > 0 and word_stem(words[i - 1]) not in not_a_frame:
                    frames[stem].add(("before", words[i - 1]))
                if i + 1 < len(words) and word_stem(words[i + 1]) not in not_a_frame:
                    frames[stem].add(("after", words[i + 1]))
    return any(frames[a] & frames[b] for i, a in enumerate(values) for b in values[i + 1 :])


def find_alternatives(
    texts: Sequence[str], embedder: Embedder, stop_words: frozenset[str]
) -> list[tuple[str, frozenset[str]]]:
    """A closed set of values the fragments choose from, as (value, stems that mention it), or [].

    Candidates are content words not in most of the fragments (the topic), not a modifier of other
    candidates ("heavy" in "heavy rain", "heavy storm": it is the frame of the slot, `modifier_words`) and not
    a head (`_heads`: "customer" in "fleet customer", "private customer" is the category). From each of
    the most frequent recurring candidates (in two fragments or more), the set grows by the admissible
    recurring word most of the kind of those chosen, then by words named once that qualify the same head
    as a chosen value (`_qualified_heads`: "private" next to "fleet"; said once without that frame, a
    word of the kind is as likely a wording). Admissible is a word that (a) excludes the
    values chosen (`excludes`: values of one slot are named in different fragments; one overlap is
    tolerated with a value named three times or more: "on batteries, the mains supply dropped") and (b)
    is of the same kind but not the same word (mean embedding similarity to the chosen words at least
    ``_ALT_MIN_KIND``, none below ``_ALT_MIN_PAIR`` or above ``_ALT_MAX_KIND``, not `same_family`) and
    (c) is not what a chosen value qualifies ("rental car": car). A word never named alone is then
    dropped as context ("customer" in "a VIP customer"). One value may dominate ("battery" in most
    fragments, "generator" and "mains" in two). The set needs
    ``ALT_MIN_VALUES`` values covering ``ALT_MIN_SHARE`` of the fragments, and two of them must share a
    frame (`_share_a_frame`); the largest such set wins (between equals, the most of one kind). Synonyms
    are merged only by stem (batteries / battery, flooded / flooding): two different words stay two values
    (UPS is not battery, grid is not mains), because the embedding cannot tell a synonym from a sibling
    of the same kind; a value named once without a shared head (UPS) is left out.
    """
    n = len(texts)
    if n < 4:
        return []
    per_text, candidates, words = content_words(texts, stop_words)
    if len(candidates) < 2:
        return []
    vectors = embedder.embed(words)
    sims = vectors @ vectors.T
    doc_sets = [{i for i, words in enumerate(per_text) if c in words} for c in candidates]
    # A word used as a verb, a preposition or an evaluative adjective is no value, nor what a set grows from.
    heads = _heads(texts, candidates, doc_sets, sims)
    qualified = _qualified_heads(texts, candidates, heads)
    adjacent = {pair for t in texts for pair in _pairs(t)}
    recurring = [i for i in range(len(candidates)) if len(doc_sets[i]) >= _ALT_MIN_SHARE_EACH]
    modifiers = _siblings_kept(modifier_words(texts, candidates, doc_sets, sims), candidates, recurring, sims, adjacent)
    modifiers |= not_values(texts, candidates)
    once = [i for i in range(len(candidates)) if len(doc_sets[i]) < _ALT_MIN_SHARE_EACH]
    best: list[int] = []
    best_score = (0, 0.0)
    # A head that several candidates qualify is their category ("customer" in "fleet customer",
    # "private customer"), not one of them.
    categories = {i for i, c in enumerate(candidates) if c in heads}
    seeds = [i for i in recurring if i not in modifiers and i not in categories][:6]

    def grow(chosen: list[int], pool: Sequence[int], framed_only: bool = False) -> None:
        while len(chosen) < _ALT_MAX:
            # The next value is the admissible word most of the kind of those chosen (not the most frequent:
            # "site", "fault", "outage" are frequent in a cluster of customer kinds, and loosely kin).
            admissible = []
            for j in pool:
                if (
                    j in chosen
                    or j in modifiers
                    or j in categories
                    or not excludes(doc_sets[j], [doc_sets[k] for k in chosen])
                ):
                    continue
                if any((candidates[k], candidates[j]) in adjacent for k in chosen):
                    continue  # "rental car": what a value stands right before is what it qualifies
                pair = [float(sims[j, k]) for k in chosen]
                if min(pair) < _ALT_MIN_PAIR or max(pair) > _ALT_MAX_KIND:
                    continue
                # A value named once must fill the frame of a chosen one: qualify the same head ("private
                # customer" next to "fleet customer"). Said once elsewhere, a word of the kind is as likely
                # a wording ("tried", "issue" next to "restarted"): MiniLM's kinship of single words
                # does not tell them apart.
                if framed_only and not qualified[j] & set().union(*(qualified[k] for k in chosen)):
                    continue
                if float(np.mean(pair)) < _ALT_MIN_KIND:
                    continue
                if not any(same_family(candidates[j], candidates[k]) for k in chosen):
                    admissible.append((float(np.mean(pair)), -j))
            if not admissible:
                return
            chosen.append(-max(admissible)[1])

    for seed in seeds:
        chosen = [seed]
        grow(chosen, recurring)
        if len(chosen) >= _ALT_MIN_RECURRING:
            # Values named once join a slot that recurring values already show ("fleet" three times,
            # "taxi" twice, "private" once): few lines per value is how a slot is named in a sample; the
            # recurring values are what `values_separate` judges the slot by.
            grow(chosen, once, framed_only=True)
        # A value is named alone somewhere: a word whose every fragment also names another value is
        # context ("customer" in "a VIP customer", "an enterprise customer", "a hospital ..., priority
        # customer"), while "storm" stays with "snow storm" and "flooded after the storm".
        chosen = [k for k in chosen if not doc_sets[k] <= set().union(*(doc_sets[m] for m in chosen if m != k))]
        covered = set().union(*(doc_sets[k] for k in chosen))
        if len(chosen) < ALT_MIN_VALUES:
            continue
        # Most fragments covered first; between equals, the set whose words are most of one kind.
        kind = float(np.mean([sims[a, b] for a in chosen for b in chosen if a < b]))
        if kind < _ALT_SET_KIND or (len(covered), kind) <= best_score:
            continue
        if _share_a_frame([candidates[i] for i in chosen], texts):
            best, best_score = chosen, (len(covered), kind)
    if best_score[0] < ALT_MIN_SHARE * n:
        return []
    # Values in the order of how often they are named: the dominant value first.
    best.sort(key=lambda i: (-len(doc_sets[i]), i))
    return [(words[i], frozenset({candidates[i]})) for i in best]


# A word before other candidates is still a value when it is a sibling of two recurring candidates it never
# stands before: "Bronze tier", "Bronze contract" put bronze before two recurring words, as "heavy rain",
# "heavy storm" do, but bronze is of the kind of silver and gold (MiniLM 0.70, 0.55; platinum / gold 0.52),
# while a word of degree is far from the words it qualifies (heavy / rain 0.39, freezing / rain 0.43).
_SIBLING = 0.5


def _siblings_kept(
    modifiers: set[int],
    candidates: Sequence[str],
    recurring: Sequence[int],
    sims: np.ndarray,
    adjacent: set[tuple[str, str]],
) -> set[int]:
    """``modifiers`` without the words that are siblings of recurring candidates (``_SIBLING``)."""

    def sibling(i: int) -> bool:
        kin = [
            j
            for j in recurring
            if j != i
            and j not in modifiers
            and float(sims[i, j]) >= _SIBLING
            and (candidates[i], candidates[j]) not in adjacent
        ]
        return len(kin) >= 2

    return {i for i in modifiers if not sibling(i)}


def same_family(a: str, b: str) -> bool:
    """Two spellings or derivations of one word: a shared four-letter prefix, or one inside the other
    (tilt / downtilt / uptilt)."""
    return a[:4] == b[:4] or (min(len(a), len(b)) >= 4 and (a in b or b in a))


def excludes(docs: set[int], chosen: Sequence[set[int]]) -> bool:
    """True when a word (the fragments ``docs`` using it) can be another value of the slot of ``chosen``.

    Values of one slot exclude each other. One shared fragment is tolerated with one chosen value, when
    the word recurs and that value is used in three fragments or more ("on batteries, the mains supply
    dropped" names the old and the new power source); a word that shares fragments with two values
    ("rain flooded the access road", "snow is blocking the access road") is context, not a value.
    """
    shared = [(len(docs & other), len(other)) for other in chosen if docs & other]
    if not shared:
        return True
    return len(shared) == 1 and shared[0][0] == 1 and len(docs) >= 2 and shared[0][1] >= 3


def modifier_words(
    texts: Sequence[str], candidates: Sequence[str], doc_sets: Sequence[set[int]], sims: np.ndarray | None = None
) -> set[int]:
    """Candidates that mostly stand right before another recurring candidate ("heavy rain", "strong wind").

    Such a word qualifies the slot's value rather than being one: more than half of its uses precede a
    different recurring candidate that is not a head (`_heads`). Before a head the word is the value:
    "fleet customer", "private customer", "VIP customer" name kinds of customer.
    """
    index = {c: i for i, c in enumerate(candidates)}
    recurring = {c for c, docs in zip(candidates, doc_sets, strict=True) if len(docs) >= 2}
    heads = _heads(texts, candidates, doc_sets, sims)
    before: Counter[str] = Counter()
    uses: Counter[str] = Counter()
    for text in texts:
        stems = [word_stem(w) for w in _WORD.findall(text.lower())]
        for a, b in zip(stems, [*stems[1:], ""], strict=True):
            if a in index:
                uses[a] += 1
                if b in recurring and b != a and b not in heads:
                    before[a] += 1
    return {index[c] for c, k in before.items() if k > 0.5 * uses[c]}


# Adjectives that qualify any noun without classifying it: "the main site", "a new tower", "the same
# cabinet" never name a value of a slot (English's evaluative and ordering adjectives, not a domain list).
def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_EVALUATIVE = _word_set(
    """main new old big small large huge tiny whole entire same next first last own usual certain various
    several real actual current recent"""
)
# A complex preposition is "<preposition> <noun> of" with no article: in front of, on top of, instead of.
_PREPOSITIONS = _word_set("in on at by for instead because")
_TOKEN = re.compile(r"[a-z][a-z0-9\-]*|[^\sa-z0-9]")  # punctuation kept: "on batteries, the mains" is no verb


def not_values(texts: Sequence[str], candidates: Sequence[str]) -> set[int]:
    """Candidates (stems) the fragments do not use as a noun: no value of a slot can be one of them.

    A value names a thing or a kind ("on battery", "a fleet customer"). A word followed by a determiner
    in most of its uses is a verb ("the roof blocks the line of sight"); one that stands between a
    preposition and "of" in most of its uses is part of a complex preposition ("in front of the
    antenna"); an evaluative adjective (`_EVALUATIVE`: "the main lobe", "a new tower") in all of its uses
    qualifies any noun. Such words made an enumeration of junk (cell, front, tower, blocks, main) out of
    a cluster of obstructions.
    """
    index = {c: i for i, c in enumerate(candidates)}
    uses: Counter[str] = Counter()
    not_noun: Counter[str] = Counter()
    evaluative: Counter[str] = Counter()
    for text in texts:
        toks = _TOKEN.findall(text.lower())
        for before, word, after in zip(["", *toks], toks, [*toks[1:], ""], strict=False):
            stem = word_stem(word)
            if stem not in index:
                continue
            uses[stem] += 1
            evaluative[stem] += word in _EVALUATIVE
            not_noun[stem] += after in DETERMINERS or (after == "of" and before in _PREPOSITIONS)
    return {index[c] for c in uses if evaluative[c] == uses[c] or not_noun[c] > 0.5 * uses[c]}


def _pairs(text: str) -> list[tuple[str, str]]:
    stems = [word_stem(w) for w in _WORD.findall(text.lower())]
    return list(itertools.pairwise(stems))


def _qualified_heads(texts: Sequence[str], candidates: Sequence[str], heads: set[str]) -> list[set[str]]:
    """For each candidate, the heads (`_heads`) it stands right before ("fleet" -> {"customer"})."""
    out: dict[str, set[str]] = {c: set() for c in candidates}
    for text in texts:
        for a, b in _pairs(text):
            if a in out and b in heads and a != b:
                out[a].add(b)
    return [out[c] for c in candidates]


def _heads(
    texts: Sequence[str], candidates: Sequence[str], doc_sets: Sequence[set[int]], sims: np.ndarray | None = None
) -> set[str]:
    """Content words that two different content words stand right before ("fleet customer", "private
    customer"): the noun a slot's values qualify, their category. A word that stands before two different
    recurring words ("heavy rain", "heavy storm") is an adjective of degree, not a value: "freezing rain"
    and "heavy rain" leave rain a value. Two followers that are one word (``sims`` above ``_ALT_MAX_KIND``:
    "rental car", "rental vehicle") count once, and the words before a head count for its synonyms too."""
    content = set(candidates)
    recurring = {c for c, docs in zip(candidates, doc_sets, strict=True) if len(docs) >= _ALT_MIN_SHARE_EACH}
    pairs = [(a, b) for t in texts for a, b in _pairs(t) if a in content and b in content and a != b]
    follows: dict[str, set[str]] = {}
    for a, b in pairs:
        if b in recurring:
            follows.setdefault(a, set()).add(b)
    index = {c: i for i, c in enumerate(candidates)}

    def one_word(a: str, b: str) -> bool:
        return a == b or (sims is not None and float(sims[index[a], index[b]]) > _ALT_MAX_KIND)

    def kinds(words: set[str]) -> list[str]:
        distinct: list[str] = []
        for word in sorted(words):
            if not any(one_word(word, d) for d in distinct):
                distinct.append(word)
        return distinct

    # The words before a head, pooled over its synonyms ("rental car", "car-sharing vehicle").
    before: dict[str, set[str]] = {}
    for a, b in pairs:
        if len(kinds(follows.get(a, set()))) < 2:
            for head in {h for _, h in pairs if one_word(h, b)}:
                before.setdefault(head, set()).add(a)
    return {b for b, words in before.items() if len(words) >= 2}


def content_words(texts: Sequence[str], stop_words: frozenset[str]) -> tuple[list[set[str]], list[str], list[str]]:
    """(stems of each fragment, candidate value stems, each candidate's most frequent surface word).

    Candidates are the words in at least ``_ALT_MIN_SHARE_EACH`` fragments and at most ``_ALT_MAX_TOPIC``
    of them, most frequent first.
    """
    per_text = [{word_stem(w) for w in _WORD.findall(t.lower()) if w not in stop_words and len(w) >= 3} for t in texts]
    surface: dict[str, Counter[str]] = {}
    for t in texts:
        for w in _WORD.findall(t.lower()):
            if w not in stop_words and len(w) >= 3:
                surface.setdefault(word_stem(w), Counter())[w] += 1
    df = Counter(s for words in per_text for s in words)
    candidates = [s for s, c in df.most_common() if c <= _ALT_MAX_TOPIC * len(texts)]
    return per_text, candidates, [_surface(c, surface[c]) for c in candidates]


def _surface(stem: str, spellings: Counter[str]) -> str:
    """The word that names a value: its most frequent spelling, or its stem when it only appears as
    verb forms of it (flooding / flooded -> flood)."""
    if len(spellings) > 1 and all(w.endswith(("ing", "ed")) for w in spellings):
        return stem
    return min(spellings.items(), key=lambda kv: (-kv[1], len(kv[0]), kv[0]))[0]


def slot_head(
    texts: Sequence[str], values: Sequence[tuple[str, frozenset[str]]], stop_words: frozenset[str]
) -> str | None:
    """The noun two or more of the values stand right before ("fleet customer", "private customer" ->
    "customer"): the fragments' own word for the category of the slot, or None."""
    per_text, candidates, words = content_words(texts, stop_words)
    doc_sets = [{i for i, stems in enumerate(per_text) if c in stems} for c in candidates]
    qualified = _qualified_heads(texts, candidates, _heads(texts, candidates, doc_sets))
    of = dict(zip(candidates, qualified, strict=True))
    counts = Counter(h for _, forms in values for h in set().union(*(of.get(f, set()) for f in forms)))
    if not counts or counts.most_common(1)[0][1] < 2:
        return None
    return words[candidates.index(counts.most_common(1)[0][0])]


def alternative_words(texts: Sequence[str], stop_words: frozenset[str]) -> list[str]:
    """The words `find_alternatives` embeds for these fragments (to embed them ahead, with others)."""
    if len(texts) < 4:
        return []
    words = content_words(texts, stop_words)[2]
    return words if len(words) >= 2 else []
