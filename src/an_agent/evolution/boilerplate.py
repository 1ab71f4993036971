"""What of a fragment is embedded: its content, without the greeting, sign-off and chat filler around it,
and without the machine row an export put before a person's comment.

An e-mail or a chat message pasted into ``other`` carries words that say nothing about the request:
"Dear team, ... Kind regards, Petra", "Hello, ... Thanks", "@noc fyi ...". To the embedding model they
are words like any other, so one-offs written by mail become alike through them (two out-of-office
mails and a complaint by fax, all "Dear colleagues, ... Kind regards", gathered with three weak lines
into a cluster one fragment away from a patch: docs/evolution-dev-corpus.md, held-out mail corpus). The
pool compares fragments by `content_text`, and synthesis types, names and quotes them by it (a
key's examples are what the notes say, without "Dear customer," or the journal's header); the stored
fragment stays as the client wrote it.

An alarm manager's export appends the operator's comment to the alarm's row ("ALM 40213 LINK_DEGRADED
ne=RBS-4411 sev=MJ | opr: door left open"). The row is drawn from a few formats and alarms whatever the
comment says: compared with their rows, fragments gathered by row format rather than by request, and the
rows' element ids became array keys (docs/evolution.md, round 5 of issue 31). Synthesis types and names a cluster from
the texts without their rows too.

A ticket tool's journal puts its own header before each note: when it was written and by whom
("2027-05-17 11:48 UTC - M.Wojcik (Work notes) ...", "[17/05/2027 18:41] P. Dubois : ...", "17.05. 22:38
GH: ..."). The header's moment is when the note was written, not a value the note states: read as one, a
latency became a date-time key of the notes' times, and notes gathered by author (round 6 of issue 31).
`written_text` is a fragment without its journal header and machine row: what a person wrote.
"""

from __future__ import annotations

import re

from an_agent.schemas.dates import ZONE_NAMES

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
# A notice opening the text: "Kindly note", "Please be informed that", "For your information:" (the formal
# English of many NOCs and vendors' support desks, which says nothing about the request).
_NOTICE = re.compile(
    r"^\s*(?:(?:kindly|please)\s{1,3}(?:note|be\s{1,3}(?:informed|advised|noted))|for\s{1,3}your\s{1,3}(?:kind\s{1,3})?information"
    r"|be\s{1,3}(?:informed|advised))\b(?:\s{1,3}that)?\s{0,3}[:,\-]?\s*",
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
# A form's field: a label of words (no digit: "bh_util", "Rx level (dBm)") and its value, "=" or ":" between.
_FORM_FIELD = re.compile(r"^\s{0,3}[A-Za-z][A-Za-z_ ().%-]{0,40}?\s{0,3}[:=]\s{0,3}\S")
# The label an export puts before a person's free text ("Note=", "opr:", "operator remark:", "Bemerkung:").
_COMMENT_LABEL = re.compile(
    r"^\s{0,3}(?:[A-Za-z]{1,20}\s{1,3})?(?:notes?|comments?|remarks?|opr|operator|obs|observations?|memo|nb|"
    r"bemerkung|kommentar|commentaire|remarque|comentario|observaci[oó]n|nota)\s{0,3}[:=]",
    re.IGNORECASE,
)
_LABEL = re.compile(r"^\s{0,3}[A-Za-z]{1,20}(?:\s{1,3}[A-Za-z]{1,20})?\s{0,3}[:=]\s{0,3}(?=\S)")


# A journal header: when the note was written (a date and a clock time, or a clock time after a short
# date), a zone, then who wrote it and the tool's label, up to the separator the note starts after. Every
# repetition bounded: linear on long text.
_STAMP = (
    r"(?:(?:\d{4}-\d{2}-\d{2}|\d{1,2}[./]\d{1,2}(?:[./](?:\d{4}|\d{2}))?\.?|\d{1,2}-[A-Za-z]{3,9}-\d{2,4}"
    r"|\d{1,2}\s[A-Za-z]{3,9}\s\d{4})[T\s]{1,3})?"
    r"\d{1,2}:\d{2}(?::\d{2})?(?:\s?[AaPp]\.?[Mm]\.?)?"
    rf"(?:\s{{1,3}}(?:{ZONE_NAMES}|[+-]\d{{2}}:?\d{{2}}))?"
)
# Who wrote it: one to three name tokens ("GH", "A.Yilmaz", "P. Dubois", "Maria Lopez"), no zone.
_AUTHOR = rf"(?!(?:{ZONE_NAMES})\b)[A-Z][A-Za-z'.\-]{{0,24}}(?:\s{{1,2}}[A-Z][A-Za-z'.\-]{{0,24}}){{0,2}}"
_JOURNAL_HEADER = re.compile(
    rf"^\s{{0,3}}(?:\[\s{{0,2}}{_STAMP}\s{{0,2}}\]\s{{0,3}}(?:[-|]\s{{0,3}})?(?:{_AUTHOR}\s{{0,3}})?"  # [stamp] author
    rf"|{_STAMP}\s{{1,3}}(?:[-|]\s{{1,3}})?{_AUTHOR}\s{{0,3}})"  # stamp author: the author is required
    r"(?:\([^()\n]{1,40}\)\s{0,3})?"  # the tool's label: "(Work notes)"
    r"(?:[:\-|]\s{0,3}|(?<=\)\s)|(?<=\))|(?<=\])\s{0,3})(?=\S)"
)


def without_journal_header(text: str) -> str:
    """``text`` without a ticket tool's journal header: the note's moment and author before it
    ("18-May-2027 07:14 AM IST - R.Iyer: kindly note ..." -> "kindly note ..."). A header needs a clock
    time, and an author with a separator or a bracketed moment: "14:00 UTC: service restored" and
    "2027-01-15 15:00 UTC - service restored" state a moment, and keep it."""
    match = _JOURNAL_HEADER.match(text)
    return text[match.end() :] if match else text


def written_text(text: str) -> str:
    """What a person wrote in ``text``: without a journal header (`without_journal_header`) and without the
    machine row an export put before a comment (`without_machine_row`)."""
    return without_machine_row(without_journal_header(text))


def without_machine_row(text: str) -> str:
    """``text`` without the machine row an export put before a person's comment: its leading fields up to
    the first that reads as prose, when the first names an identifier and the row says more than
    identifiers; the comment's field label goes too. ``text`` itself when it has no such row: a table row
    "Site category | Class B" names no identifier, a list "INC4303720; INC4303721" is only identifiers."""
    fields = [field for field in _FIELD_SEP.split(text) if field.strip()]
    if len(fields) > 1 and all(_FORM_FIELD.match(f) for f in fields) and not _COMMENT_LABEL.match(fields[-1]):
        # A form a person filled in, every field a label and its value ("bh_util = 91 pct; peak = 20:00"):
        # no row before a comment, and its first fields are what it says (it was compared as "peak = 20:00").
        return text
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
    """``text`` without a journal header or a machine row before a comment (`written_text`), an opening
    greeting and notice ("Kindly note"), a closing sign-off and chat filler; ``text`` itself when that
    would leave nothing (a message that is only "thanks all" is compared as it is)."""
    content = _FILLER.sub("", _NOTICE.sub("", _GREETING.sub("", written_text(text), count=1), count=1))
    closed = _SIGN_OFF.sub("", content, count=1)
    # Only what joined a removed sign-off goes with it: "... 4 hours. Best regards" -> "... 4 hours".
    content = closed.rstrip(" ,;:-") if closed != content else content
    content = content.strip()
    return content if content.strip(" ,.;:-!?") else text
