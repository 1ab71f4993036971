"""What of a fragment is embedded: its content, without the greeting, sign-off and chat filler around it,
and without the machine row an export put before a person's comment.

An e-mail or a chat message pasted into ``other`` carries words that say nothing about the request:
"Dear team, ... Kind regards, Petra", "Hello, ... Thanks", "@noc fyi ...". To the embedding model they
are words like any other, so one-offs written by mail become alike through them (two out-of-office
mails and a complaint by fax, all "Dear colleagues, ... Kind regards", gathered with three weak lines
into a cluster one fragment away from a patch: docs/evolution-dev-corpus.md, held-out mail corpus). The
pool compares fragments by `content_text`: the stored fragment, its examples and everything a person
reads stay as the client wrote them.

An alarm manager's export appends the operator's comment to the alarm's row ("ALM 40213 LINK_DEGRADED
ne=RBS-4411 sev=MJ | opr: door left open"). The row is drawn from a few formats and alarms whatever the
comment says: compared with their rows, fragments gathered by row format rather than by request, and the
rows' element ids became array keys (docs/evolution.md, round 5 of issue 31). Synthesis types and names a cluster from
the texts without their rows too (`without_machine_row`).
"""

from __future__ import annotations

import re

# A salutation opening the text: "Dear all,", "Hello team!", "Hi Maria -", "Good morning colleagues:".
_GREETING = re.compile(
    r"^\s*(?:dear|hello|hi|hey|hallo|good\s+(?:morning|afternoon|evening)|greetings)\b"
    r"(?:\s+(?:all|team|colleagues|everyone|everybody|guys|folks|sir|madam|[A-Z][a-z]+)){0,2}\s*[,!:\-]\s*",
    re.IGNORECASE,
)
# A sign-off closing the text, with a name after it: "Kind regards, Petra", "Thanks", "BR Jan", "Cheers!".
# From where a run of separators starts, never inside it: linear on a long run of spaces (it was quadratic).
_SIGN_OFF = re.compile(
    r"(?<![\s,.;!\-])[\s,.;!\-]*\b(?:(?:kind|best|warm|many)\s+(?:regards|thanks|wishes)|regards|thanks(?:\s+a\s+lot)?|"
    r"thank\s+you|many\s+thanks|cheers|br|thx)\b[\s,.!]*(?:[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)?[\s.!]*$",
    re.IGNORECASE,
)
# Chat addressing and filler: "@noc", "fyi", "pls", "FYI:".
_FILLER = re.compile(r"(?:(?<=\s)|^)(?:@[\w.\-]+|fyi|pls|plz)\b[:,]?\s*", re.IGNORECASE)
# Where a machine row's fields end: " | ", " -- ", " >> ", ";", " / ".
_FIELD_SEP = re.compile(r"(?<!\s)\s{1,3}(?:\||--|>>|/)\s{1,3}|;")  # bounded: linear on a run of spaces
# Prose: two lower-case words in a row ("rain rate", "door left open").
_PROSE = re.compile(r"\b[a-z][a-z']{1,30}\s{1,3}[a-z][a-z']{1,30}\b")
# An identifier of a row: a token with a digit (RBS-8726, 64273, #31838, MW-356).
_DIGIT = re.compile(r"\d")
# The tokens of a row: between spaces and field separators.
_TOKEN_SEP = re.compile(r"[\s|;/>]+")
# The field label the free text of a row starts with: "opr:", "Note=", "operator remark:".
_LABEL = re.compile(r"^\s{0,3}[A-Za-z]{1,20}(?:\s{1,3}[A-Za-z]{1,20})?\s{0,3}[:=]\s{0,3}(?=\S)")


def without_machine_row(text: str) -> str:
    """``text`` without the machine row an export put before a person's comment: its leading fields up to
    the first that reads as prose, when the first names an identifier and the row says more than
    identifiers; the comment's field label goes too. ``text`` itself when it has no such row: a table row
    "Site category | Class B" names no identifier, a list "INC4303720; INC4303721" is only identifiers."""
    cut = 0
    for match in _FIELD_SEP.finditer(text):
        field = text[cut : match.start()]
        if _PROSE.search(field) or (cut == 0 and not _DIGIT.search(field)):
            break
        cut = match.end()
    # A row says more than identifiers: its alarm, a severity code, a field label ("LINK_DEGRADED", "sev=MJ").
    if cut == 0 or all(_DIGIT.search(t) for t in _TOKEN_SEP.split(text[:cut]) if t.strip("-")):
        return text
    rest = text[cut:]
    return _LABEL.sub("", rest, count=1) or rest


def content_text(text: str) -> str:
    """``text`` without a machine row before a comment (`without_machine_row`), an opening greeting, a
    closing sign-off and chat filler; ``text`` itself when that would leave nothing (a message that is
    only "thanks all" is compared as it is)."""
    content = _FILLER.sub("", _GREETING.sub("", without_machine_row(text), count=1))
    closed = _SIGN_OFF.sub("", content, count=1)
    # Only what joined a removed sign-off goes with it: "... 4 hours. Best regards" -> "... 4 hours".
    content = closed.rstrip(" ,;:-") if closed != content else content
    content = content.strip()
    return content if content.strip(" ,.;:-!?") else text
