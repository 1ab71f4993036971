"""The review gate: does a synthesised key carry something security-relevant (draft section 8)?

A patch whose key carries **credentials** (passwords, tokens, keys), **commands** (something a system would
run) or **addresses** (where a system would connect or send: IP addresses, URLs, e-mail addresses), or
that touches payment, identity or access control, is never published automatically: it waits for an
administrator (`policy.DefaultUpdatePolicy`). `security_reasons` judges what the key *means*:

- its **name** and its **meaning** (the description without its mapping examples and other phrasings:
  the phrase and the constraints) holding a word of the security list (`synthesis.SECURITY_TERMS`);
- its **values** (the example values and the allowed values) having the shape of a credential, a
  command or an address (`_VALUE_SHAPES`), whatever words surround them;
- the **example fragments** and the other phrasings (both are the fragments' words) holding security words
  count only when most of them do: a word of the list
  in one fragment out of context ("same root?" beside a list of incident ids) is one signal, not the
  verdict — the fragments of a key about credentials say so again and again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from an_agent.schemas.anchors import example_mappings
from an_agent.schemas.template import KeyDef

# Shapes of values that a system would use to log in, run or connect.
_VALUE_SHAPES = (
    # IPv4, or IPv6 with four groups or more or a "::" (a clock time 16:00:00 has three groups).
    (
        "an IP address",
        re.compile(
            r"\b(?:\d{1,3}\.){3}\d{1,3}\b|\b(?:[0-9a-f]{1,4}:){3,7}[0-9a-f]{1,4}\b|[0-9a-f]{1,4}::[0-9a-f]{0,4}", re.I
        ),
    ),
    ("a URL", re.compile(r"\b[a-z][a-z0-9+.\-]*://\S+", re.I)),
    ("an e-mail address", re.compile(r"\b[\w.+\-]+@[\w\-]+\.[\w.\-]+\b")),
    ("a secret", re.compile(r"\b(?:password|passwd|pwd|token|secret|api[_\-]?key)\s*[=:]\s*\S+", re.I)),
    (
        "a command",
        re.compile(
            r"(?:^|[;&|`]\s*|\$\()\s*(?:sudo|ssh|scp|rm|curl|wget|chmod|chown|bash|sh|python|nc|telnet|kill)\b"
            r"|\s(?:&&|\|\|)\s|\brm\s+-rf\b",
            re.I,
        ),
    ),
)
# Share of the example fragments that must hold a security word for the fragments to count (a majority).
_FRAGMENT_SHARE = 0.5
# (?<!\s): a match starts where a run of spaces starts, never inside one (linear in the text).
_EXAMPLES = re.compile(r"(?<!\s)\s*+(?:Example mapping:|Also covers requests phrased like:)")
_ALSO = re.compile(r"(?<!\s)\s*+\(also phrased as: ([^)]*+)\)")
_ROOT_CAUSE = re.compile(r"(?<![a-z])root[ _]cause")


def security_words(text: str, terms: frozenset[str]) -> set[str]:
    """The words of ``terms`` in ``text`` ("root cause" is about faults, not the superuser)."""
    return {w for w in re.findall(r"[a-z]+", _ROOT_CAUSE.sub(" ", text.lower())) if w in terms}


def security_reasons(key: KeyDef, terms: frozenset[str]) -> tuple[str, ...]:
    """Why ``key`` is security-relevant (empty when it is not), judged on its meaning (module docstring)."""
    reasons: list[str] = []
    if words := security_words(key.key_name.replace("_", " "), terms):
        reasons.append(f"its name says {', '.join(sorted(words))}")
    meaning = _EXAMPLES.split(key.semantic_description, maxsplit=1)[0]
    # Other phrasings are fragments' words, like the examples: "fleet account" beside "taxi company".
    phrasings = [p.strip() for m in _ALSO.finditer(meaning) for p in m.group(1).split(",")]
    meaning = _ALSO.sub("", meaning)
    if words := security_words(meaning, terms):
        reasons.append(f"its meaning says {', '.join(sorted(words))}")
    examples = example_mappings(key)
    values = [str(v) for _, v in examples] + list(key.constraints.enum or ())
    for label, shape in _VALUE_SHAPES:
        if any(shape.search(v) for v in values):
            reasons.append(f"its values carry {label}")
    fragments = [phrase for phrase, _ in examples] + phrasings
    if fragments and _most_say(fragments, terms):
        reasons.append("most of its examples speak of credentials, payment, identity or access")
    return tuple(reasons)


def _most_say(fragments: Sequence[str], terms: frozenset[str]) -> bool:
    return sum(1 for f in fragments if security_words(f, terms)) > _FRAGMENT_SHARE * len(fragments)
