"""Sanitising the free text of the reserved ``other`` key (draft sections 4.3 and 8).

``other`` is always accepted, but its text may reach an LLM prompt, a log, a NETCONF reply or an
operator's screen, so before a behaviour, evolution or a peer gets it the text is made inert (the task's
data-param keeps the payload as the client sent it: docs/evolution.md section 2, "What a client sees"):

- Unicode is NFKC-normalised (full-width look-alikes become ASCII, so obfuscated markers are caught);
- control and invisible format characters (C0/C1 controls, zero-width and bidi controls) become spaces;
- markup is removed: HTML/XML entities are decoded first, then tags are dropped, leftover angle
  brackets and backticks are replaced by plain quotes;
- prompt-injection markers are replaced by ``[removed]``: instructions to ignore or override previous
  instructions, chat-template and role tokens (``<|im_start|>``, ``[INST]``, ``system:``), prompt
  section markers (``##task description``, ``### Instruction``) and shell substitutions (``$(...)``);
- a table pasted with its header line ("Site | Rx level (dBm)\\nKA-114 | -97", a CSV line under its
  header, tab- or semicolon-separated columns) is written as labelled fields, a row at a time ("Site:
  KA-114, Rx level (dBm): -97"): collapsed to one line, a row would lose which header each cell is under;
- whitespace is collapsed, each fragment is capped in length and the number of fragments is capped.

The text is never executed or interpreted: it is data. What was changed is reported in
`SanitizedOther.notes`; validation returns them as warnings, which the CLI prints (`task assign --schema`,
`schema validate`) and the faces do not send back.
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


# Column separators of a pasted table, in the order they are tried: a decimal comma ("7,9") under a
# semicolon-separated header is a value, not a column.
_COLUMN_SEPARATORS = ("\t", "|", ";", ",")
_RULE_LINE = re.compile(r"^[\s|:+\-=]+$")  # a markdown or ASCII table's rule: "|---|:--|", "+----+"
_MAX_TABLE_LINES = 50
_MAX_LABEL = 60


def _cells(line: str, separator: str) -> list[str]:
    line = line.strip()
    if separator == "|":
        line = line.strip("|")  # a markdown row: "| Site | Rx level |"
    return [cell.strip() for cell in line.split(separator)]


def _label(cell: str, separator: str) -> bool:
    """A header cell names a column: a letter, a few words ("Rx level (dBm)", "Distance to event (km)"). Split
    at commas, two lines of prose ("the site is down, again") would read as a table: at most three words."""
    words = len(cell.split())
    return any(c.isalpha() for c in cell) and len(cell) <= _MAX_LABEL and words <= (3 if separator == "," else 6)


def table_as_fields(text: str) -> str | None:
    """A pasted table (a header line, then rows of as many cells, split by one of ``_COLUMN_SEPARATORS``)
    as labelled fields, a row at a time ("Hotline,Calls\\nBerlin,1 045" -> "Hotline: Berlin, Calls: 1 045");
    None when ``text`` is no such table. Header cells name columns: each holds a letter. Fields are joined
    by commas, as a person lists them: a semicolon between "label: value" fields reads as a machine row's
    field separator (an export's row before a comment, which content comparison leaves out)."""
    lines = [line for line in text.splitlines() if line.strip() and not _RULE_LINE.match(line)]
    if not 2 <= len(lines) <= _MAX_TABLE_LINES:
        return None
    for separator in _COLUMN_SEPARATORS:
        header = _cells(lines[0], separator)
        rows = [_cells(line, separator) for line in lines[1:]]
        if len(header) < 2 or any(len(row) != len(header) for row in rows):
            continue
        if not all(_label(cell, separator) for cell in header) or all(row == header for row in rows):
            continue
        return ". ".join(", ".join(f"{h}: {v}" for h, v in zip(header, row, strict=True) if v) for row in rows)
    return None


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
    if "\n" in text and (fields := table_as_fields(text)) is not None:
        text = fields
        notes.append("table rows written as labelled fields")
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
