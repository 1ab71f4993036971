"""Sanitising the free text of the reserved ``other`` key (draft sections 4.3 and 8).

``other`` is always accepted, but its text may reach an LLM prompt, a log, a NETCONF reply or an
operator's screen, so before anything stores or embeds it the text is made inert:

- Unicode is NFKC-normalised (full-width look-alikes become ASCII, so obfuscated markers are caught);
- control and invisible format characters (C0/C1 controls, zero-width and bidi controls) become spaces;
- markup is removed: HTML/XML entities are decoded first, then tags are dropped, leftover angle
  brackets and backticks are replaced by plain quotes;
- prompt-injection markers are replaced by ``[removed]``: instructions to ignore or override previous
  instructions, chat-template and role tokens (``<|im_start|>``, ``[INST]``, ``system:``), prompt
  section markers (``##task description``, ``### Instruction``) and shell substitutions (``$(...)``);
- whitespace is collapsed, each fragment is capped in length and the number of fragments is capped.

The text is never executed or interpreted: it is data. What was changed is reported in
`SanitizedOther.notes` so that the caller can log it.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_FRAGMENT_CHARS = 500
DEFAULT_MAX_FRAGMENTS = 16
REMOVED = "[removed]"

_TAG = re.compile(r"</?[A-Za-z!?/][^<>]{0,500}>")
_INJECTION = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\b(?:ignore|disregard|forget|override|bypass)\b[^.;:!?]{0,40}?\b(?:previous|prior|above|earlier|all|any|"
        r"your|the)\b[^.;:!?]{0,30}?\b(?:instructions?|prompts?|rules|messages?|context|guidelines|directions)\b",
        r"\byou\s+are\s+now\b",
        r"\bnew\s+instructions?\s*:",
        r"\b(?:system|developer)\s+(?:prompt|message)\b",
        r"<\|[^|]{0,40}\|>",
        r"\[/?(?:INST|SYS|SYSTEM)\]",
        r"<<\s*/?\s*SYS\s*>>",
        r"#{2,}",  # prompt section markers: ##task description, ### Instruction
        r"(?:^|(?<=[\s.;]))(?:system|assistant|user|developer|human)\s*:",
        r"\$\([^)]{0,200}\)?",
        r"\$\{[^}]{0,200}\}?",
    )
]


@dataclass(frozen=True)
class SanitizedOther:
    """The inert fragments of an ``other`` value and what sanitising changed (for the log)."""

    fragments: tuple[str, ...]
    notes: tuple[str, ...]


def _clean_chars(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    if text.isprintable():
        # No character of the categories below (isprintable() is False for every C* and for U+2028/9):
        # the common case, without a Python-level pass over each character.
        return text
    out = []
    for ch in text:
        category = unicodedata.category(ch)
        # Cc: controls (incl. newline, tab), Cf: zero-width, bidi overrides; Co/Cs/Cn: private, broken, unassigned
        out.append(" " if category in ("Cc", "Cf", "Co", "Cs", "Cn") or ch in "\u2028\u2029" else ch)
    return "".join(out)


def sanitize_text(text: str, max_chars: int = DEFAULT_MAX_FRAGMENT_CHARS) -> tuple[str, list[str]]:
    """One fragment made inert (module docstring) and the notes on what changed."""
    notes: list[str] = []
    cleaned = _clean_chars(text)
    if cleaned != unicodedata.normalize("NFKC", text):
        notes.append("control or invisible characters replaced")
    unescaped = html.unescape(cleaned)
    stripped = _TAG.sub(" ", unescaped)
    if stripped != unescaped:
        notes.append("markup removed")
    inert = stripped
    for pattern in _INJECTION:
        inert, count = pattern.subn(f" {REMOVED} ", inert)
        if count:
            notes.append(f"prompt or command injection marker removed ({count})")
    bracketless = inert.replace("<", "'").replace(">", "'").replace("`", "'")
    if bracketless != inert:
        notes.append("angle brackets or backticks replaced")
    inert = bracketless
    inert = " ".join(inert.split())
    if len(inert) > max_chars:
        inert = inert[: max_chars - 1].rstrip() + "\u2026"
        notes.append(f"fragment cut to {max_chars} characters")
    return inert, notes


def sanitize_other(
    value: Any,
    max_fragment_chars: int = DEFAULT_MAX_FRAGMENT_CHARS,
    max_fragments: int = DEFAULT_MAX_FRAGMENTS,
) -> SanitizedOther:
    """Make any ``other`` value inert; never raises.

    A string is one fragment, an array of strings several. Since the server must accept ``other``
    whatever it holds, other JSON values are not refused: a number or boolean becomes its text, an
    object or nested array its compact JSON, and a note says so. Empty fragments are dropped.
    """
    notes: list[str] = []
    if value is None:
        return SanitizedOther((), ())
    items = value if isinstance(value, list) else [value]
    if not isinstance(value, str | list):
        notes.append(f"other should be a string or an array of strings; a {type(value).__name__} was converted")
    fragments: list[str] = []
    for item in items:
        if len(fragments) >= max_fragments:
            notes.append(f"only the first {max_fragments} fragments kept")
            break
        if not isinstance(item, str):
            if isinstance(value, list):
                notes.append("a non-string item of other was converted to text")
            item = json.dumps(item, ensure_ascii=False, separators=(",", ":"), default=str)
        text, item_notes = sanitize_text(item, max_fragment_chars)
        notes.extend(item_notes)
        if text:
            fragments.append(text)
    return SanitizedOther(tuple(fragments), tuple(dict.fromkeys(notes)))
