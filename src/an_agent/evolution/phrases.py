"""The candidate phrases a key is named from (`naming.name_key`), best name first.

Candidates are the 1- to 3-word phrases of the fragments' main clauses (`main_clause`: without a
conditional clause), no stop word at either end, no participant such as "customer" or "operator"
anywhere, none across punctuation; "the tower is shared" as "shared tower" (`candidate_phrases`). Each
is embedded with the same model as the pool and ranked by its similarity to the cluster centroid and
by how many fragments use it; phrases that read as a clause ("sensors rely") come last (`rank_phrases`,
`clause_like`). `snake_name` makes a phrase a key name.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from an_agent.evolution.chat_words import HEDGES
from an_agent.evolution.participants import PARTICIPANTS
from an_agent.evolution.value_words import STOP_WORDS, name_tokens, stem, tokens, word_set
from an_agent.schemas.embedding import Embedder, Vectors
from an_agent.schemas.template import is_snake_case

_MAX_PHRASES = 200  # most frequent candidate phrases scored per synthesis
MAX_NAME = 40  # characters of a key name at most (`snake_name`; `naming.name_key` keeps a suffix within it)
# Words that open a condition: "roll back if KPIs drop" asks for a rollback; "if KPIs drop" only says
# when. A key names what is asked, so names come from the main clause.
_CONDITION = re.compile(r"\b(?:if|when|whenever|once|unless|in case)\b", re.IGNORECASE)
# Verbs that end a clause rather than a noun phrase ("sensors rely", "throughput falls"): unambiguous
# ones only ("drop", "report", "change" are nouns as often as verbs).
_VERBS = word_set(
    """rely relies relied fall falls fell go goes went run runs ran rise rises rose increase increases
    decrease decreases hit hits say says said lose loses lost attach attaches attached affect affects
    complain complains fail fails failed stop stops come comes become becomes want wants ask asks seem
    seems look looks stay stays remain remains happen happens occur occurs get gets got drop_off depend
    depends depended serve serves served bought sold took stole stolen broke brought gave found told paid
    caught built prefer prefers preferred complaining"""
)


def main_clause(text: str) -> str:
    """``text`` without its conditional clause ("restore capacity if throughput falls" -> "restore capacity").

    A condition that opens the text ("if traffic rises, roll back") leaves what follows its comma.
    """
    match = _CONDITION.search(text)
    if match is None:
        return text
    before = text[: match.start()]
    if len([w for w in tokens(before) if w not in STOP_WORDS]) >= 1:
        return before
    after = text[match.end() :].split(",", 1)
    return after[1] if len(after) == 2 and tokens(after[1]) else text


def clause_like(phrase: str) -> bool:
    """True when ``phrase`` reads as subject + verb ("sensors rely", "visitors roaming"), not as a name."""
    words = phrase.split()
    if len(words) < 2:
        return False
    last, before = words[-1], words[-2]
    # A past form after a noun reads as a clause ("driver rebooted", "customer bought"); "-ing" only after
    # a plural ("visitors roaming"): "energy saving", "load balancing" are nouns.
    return (
        last in _VERBS
        or (last.endswith("ed") and len(last) > 4)
        or (before.endswith("s") and last.endswith("ing") and len(last) > 4)
    )


def phrase_stems(text: str) -> set[str]:
    """The stems of the words of ``text``, each part of a hyphenated or elided word apart."""
    return {stem(part) for tok in name_tokens(text) for part in re.split(r"['\-]", tok) if part}


# Letters that carry no accent to drop (NFKD leaves them whole): their usual ASCII spelling.
_NOT_DECOMPOSED = str.maketrans({"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th"})


def snake_name(phrase: str) -> str:
    """A snake_case key name for a phrase ('over-temperature warning' -> 'over_temperature_warning')."""
    # Key names are ASCII: an accented letter keeps its base letter ("configuración" -> configuracion).
    folded = "".join(c for c in unicodedata.normalize("NFKD", phrase.lower()) if not unicodedata.combining(c))
    folded = folded.translate(_NOT_DECOMPOSED)
    words = re.findall(r"[a-z0-9]+", folded.replace("'s", ""))
    name = "_".join(words)[:MAX_NAME].strip("_")
    if not name or not name[0].isalpha():
        name = "x_" + name
    return name if is_snake_case(name) else re.sub(r"_+", "_", name)


_PAUSE = re.compile(r"[,;:!?()]|\.(?:\s|$)|\s[-\u2013\u2014/]\s")


def phrase_words(text: str) -> list[str]:
    """The words phrases are made of, in full (`value_words.name_tokens`), with "" where a phrase may not
    cross: at punctuation (`_PAUSE`: "Christmas day, offices are closed" has no "day offices"), for a
    participant ("customer's") and a hedge ("abt")."""
    return [
        "" if w in PARTICIPANTS or w in HEDGES else w for part in _PAUSE.split(text) for w in [*name_tokens(part), ""]
    ]


def candidate_phrases(texts: Sequence[str]) -> Counter[str]:
    """1- to 3-word phrases without stop words at either end, counted once per fragment.

    A phrase holds no participant (`PARTICIPANTS`: "customer's phone" gives "phone", "phone model") and no
    hedge (`chat_words.HEDGES`: "attenuation abt 1.1 dB/km" gives "attenuation"), does not cross punctuation
    (`_PAUSE`), and says each word in full (`value_words.name_tokens`: "ant hght" is "ant height")."""
    counts: Counter[str] = Counter()
    for text in texts:
        words = phrase_words(text)
        seen: set[str] = set()
        for n in (1, 2, 3):
            for i in range(len(words) - n + 1):
                gram = words[i : i + n]
                if (
                    gram[0] in STOP_WORDS
                    or gram[-1] in STOP_WORDS
                    or "" in gram
                    or any(c.isdigit() for w in gram for c in w)
                    or len({stem(w) for w in gram}) < n  # "Backhaul / backhaul utilisation": no "backhaul backhaul"
                ):
                    continue
                phrase = " ".join(gram)
                if n == 3 and gram[1] in _COPULA and gram[2].endswith("ed") and len(gram[2]) > 4:
                    # "the tower is shared" says what a name says as "shared tower": a present state, its
                    # participle before its noun ("the car was restarted" is an event; "is overheating" too).
                    phrase = f"{gram[2]} {gram[0]}"
                if phrase not in seen:
                    seen.add(phrase)
                    counts[phrase] += 1
    return counts


_COPULA = word_set("is are")


def ranked_candidates(texts: Sequence[str]) -> list[str]:
    """The phrases `rank_phrases` scores for these fragments (to embed them ahead, with others)."""
    return [p for p, _ in candidate_phrases([main_clause(t) for t in texts]).most_common(_MAX_PHRASES)]


def rank_phrases(texts: Sequence[str], centroid: Vectors, embedder: Embedder) -> list[tuple[float, str]]:
    """Candidate phrases of the fragments' main clauses, best name first (clause-like phrases last)."""
    phrases = ranked_candidates(texts)
    if not phrases:
        return []
    sims = embedder.embed(phrases) @ centroid
    fragment_stems = [phrase_stems(t) for t in texts]
    ranked = []
    for phrase, sim in zip(phrases, sims, strict=True):
        stems = phrase_stems(phrase)
        coverage = sum(1 for fs in fragment_stems if stems <= fs) / len(texts)
        words = len(phrase.split())
        # Similarity to the centroid says "means the cluster"; coverage says "is how clients say it";
        # one word alone is rarely a name for an idea, so two- and three-word phrases get a small bonus.
        score = float(sim) * (0.6 + 0.4 * coverage) + (0.05 if words > 1 else 0.0) - 0.02 * max(0, words - 2)
        ranked.append((score - (0.2 if clause_like(phrase) else 0.0), phrase))
    ranked.sort(key=lambda t: (-t[0], t[1]))
    return ranked
