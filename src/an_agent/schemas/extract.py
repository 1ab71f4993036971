"""Rule-based extraction of typed values from natural language.

Shared by NL -> payload mapping (`an_agent.schemas.mapping`) and by patch synthesis, which infers the
type of a new key from the values its fragments contain. Everything here is deterministic and offline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

_WORD_NUMBERS = {
    "zero": 0,
    "one": 1,
    "a": 1,
    "an": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "ninety": 90,
    "hundred": 100,
    "half": 0.5,
}
_NUMBER = r"(?P<num>[-+\u2212]?\d+(?:[.,]\d+)?|" + "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True)) + r")"
# canonical unit -> spellings (longest first in the regex)
_UNITS = {
    # dBm is an absolute power level, dB a ratio or a change ("raise the power by 2 dB"): two units.
    "dbm": ("dbm",),
    "db": ("db", "decibels", "decibel"),
    "percent": ("percent", "per cent", "pct", "%"),
    "degrees": ("degrees", "degree", "deg", "\u00b0c", "\u00b0", "celsius"),
    "seconds": ("seconds", "second", "secs", "sec", "s"),
    "minutes": ("minutes", "minute", "mins", "min"),
    "hours": ("hours", "hour", "hrs", "hr", "h"),
    "days": ("days", "day"),
    "weeks": ("weeks", "week"),
    "km": ("kilometres", "kilometers", "kilometre", "kilometer", "km"),
    "mbps": ("mbit/s", "mbps", "mb/s"),
}
_UNIT_OF = {spelling: unit for unit, spellings in _UNITS.items() for spelling in spellings}
UNIT_WORDS = frozenset(s for s in _UNIT_OF if s.isalpha())
_UNIT_RE = "|".join(re.escape(s) for s in sorted(_UNIT_OF, key=len, reverse=True))
_QUANTITY = re.compile(rf"(?<![\w.]){_NUMBER}\s*(?P<unit>{_UNIT_RE})(?![\w])", re.IGNORECASE)
_BARE_NUMBER = re.compile(r"(?<![\w.\-:])[-+\u2212]?\d+(?:\.\d+)?(?![\w:]|-\d)")
# Linear in the text (client text can be a megabyte): a match starts only where an id can start, not
# inside "SITE-SITE-..."; prefix parts are taken once (each followed by "-"); the body is checked for a
# digit ahead instead of being split around one.
_ID = re.compile(
    r"(?<![A-Z0-9]-)(?<![A-Za-z0-9])(?P<prefix>[A-Z]{2,}+(?:-[A-Z]++(?=-))*+)-(?P<body>(?=[A-Z0-9]*\d)[A-Z0-9]++)\b"
)
_ISO_DT = re.compile(
    r"\b(?P<date>\d{4}-\d{2}-\d{2})(?:[T ](?P<time>\d{1,2}:\d{2}(?::\d{2})?)\s*(?P<tz>Z|UTC|GMT|[+-]\d{2}:?\d{2})?)?\b",
    re.IGNORECASE,
)
_RELATIVE_DAY = re.compile(
    r"(?:\b(?P<before>\d{1,2}:\d{2})\s*(?:UTC|GMT|Z)?\s+)?"  # '06:00 UTC today'
    r"\b(?P<day>today|tonight|tomorrow|yesterday)\b(?:\s+at\s+(?P<time>\d{1,2}:\d{2}))?",  # 'today at 06:00'
    re.IGNORECASE,
)
_CLOCK_RANGE = re.compile(
    r"\b(?:between\s+)?(?P<a>\d{1,2}:\d{2})\s*(?:-|\u2013|to|and|until)\s*(?P<b>\d{1,2}:\d{2})\b", re.IGNORECASE
)
_MINUTES_PER = {"seconds": 1 / 60, "minutes": 1, "hours": 60, "days": 1440, "weeks": 10080}


@dataclass(frozen=True)
class Quantity:
    """A number with a canonical unit (``db``, ``percent``, ``degrees``, ``minutes``, ...) found in text."""

    value: float
    unit: str
    start: int
    end: int


@dataclass(frozen=True)
class FoundId:
    """An identifier such as CELL-0401: its prefix (``CELL``) and the whole id."""

    prefix: str
    value: str
    start: int
    end: int


def _to_number(text: str) -> float | None:
    text = text.replace("\u2212", "-").replace(",", ".").lower().strip()
    if text in _WORD_NUMBERS:
        return float(_WORD_NUMBERS[text])
    try:
        return float(text)
    except ValueError:
        return None


def find_quantities(text: str) -> list[Quantity]:
    """Numbers followed by a unit, e.g. '2 dB', 'two hours', '40 degrees', '10%'."""
    out = []
    for match in _QUANTITY.finditer(text):
        value = _to_number(match.group("num"))
        unit = _UNIT_OF.get(match.group("unit").lower())
        if value is None or unit is None:
            continue
        if unit in ("seconds", "hours") and len(match.group("unit")) == 1 and not match.group("num")[-1].isdigit():
            continue  # "a h" / "one s" are not quantities
        out.append(Quantity(value, unit, match.start(), match.end()))
    return out


def find_numbers(text: str) -> list[tuple[float, int, int]]:
    """Bare numbers (value, start, end), skipping those inside ids, times and dates."""
    out = []
    for match in _BARE_NUMBER.finditer(text):
        value = _to_number(match.group(0))
        if value is not None:
            out.append((value, match.start(), match.end()))
    return out


def duration_minutes(quantity: Quantity) -> float | None:
    """A time quantity in minutes, or None for other units."""
    factor = _MINUTES_PER.get(quantity.unit)
    return None if factor is None else quantity.value * factor


def find_ids(text: str) -> list[FoundId]:
    """Identifiers of the form PREFIX-123 / PREFIX-A1B2 (upper-case prefix of two letters or more)."""
    return [FoundId(m.group("prefix"), m.group(0), m.start(), m.end()) for m in _ID.finditer(text)]


def find_clock_ranges(text: str) -> list[tuple[str, int, int]]:
    """Time-of-day ranges such as 'between 01:00 and 05:00' as ('01:00-05:00', start, end)."""
    out = []
    for match in _CLOCK_RANGE.finditer(text):
        a, b = match.group("a").zfill(5), match.group("b").zfill(5)
        out.append((f"{a}-{b}", match.start(), match.end()))
    return out


def find_datetimes(text: str, now: float) -> list[tuple[str, int, int]]:
    """Dates and times as RFC 3339 UTC strings ('2026-10-05T06:00:00Z'), with their spans.

    Recognised: ISO dates with an optional time and zone (UTC assumed), and today / tonight /
    tomorrow / yesterday with an optional 'at HH:MM' after or 'HH:MM [UTC]' before, relative to ``now``.
    """
    out = []
    for match in _ISO_DT.finditer(text):
        try:
            day = datetime.fromisoformat(match.group("date")).replace(tzinfo=UTC)
        except ValueError:
            continue
        stamp = _at_time(day, match.group("time"), match.group("tz"))
        if stamp:
            out.append((stamp, match.start(), match.end()))
    base = datetime.fromtimestamp(now, tz=UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    offsets = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}
    for match in _RELATIVE_DAY.finditer(text):
        day = base + timedelta(days=offsets[match.group("day").lower()])
        time = match.group("time") or match.group("before")
        time = time or ("20:00" if match.group("day").lower() == "tonight" else None)
        stamp = _at_time(day, time, None)
        if stamp:
            out.append((stamp, match.start(), match.end()))
    return sorted(out, key=lambda t: t[1])


def _at_time(day: datetime, time: str | None, tz: str | None) -> str | None:
    if time:
        parts = [int(p) for p in time.split(":")]
        if parts[0] > 23 or parts[1] > 59:
            return None
        day = day.replace(hour=parts[0], minute=parts[1], second=parts[2] if len(parts) > 2 else 0)
    if tz and tz.upper() not in ("Z", "UTC", "GMT"):
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        day = day - sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return day.strftime("%Y-%m-%dT%H:%M:%SZ")
