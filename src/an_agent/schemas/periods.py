"""Durations in years and months, as people say how long something has lasted: calendar periods.

"been with you 12 years", "customer for 2 yrs", "over a decade", "a year and a half", "18 months", "six
months ago": a time in years or months is no number of minutes (a month has no fixed length), so it is
not one of `an_agent.schemas.units`' time units; it is an ISO 8601 duration of years and months
(``P12Y``, ``P1Y6M``, ``P18M``, ``P10Y``) kept as written: a period said in months stays in months
("18 months" -> ``P18M``), one said in years takes its months only for a fraction ("a year and a half"
-> ``P1Y6M``). A decade is ten years.

A year or a month after an amount or "per" is a rate's period, never a duration ("€49.99 a month", "420
euro a year", "per year"): `find_periods` skips it. Imports only `an_agent.schemas.numbers`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from an_agent.schemas.numbers import BELOW_HUNDRED, DIGIT_WORDS, to_number

_UNIT = r"(?P<u>decades?|years?|yrs?|months?|mths?|mos)"
_HALF_UNIT = r"(?P<hu>decade|year|month)"
# The number of a period: digits ("12", "1.5"), words ("eight", "twenty-five"), an article ("a year").
_AMOUNT = rf"(?P<n>\d{{1,3}}(?:[.,]5)?|{BELOW_HUNDRED}|{DIGIT_WORDS}|an?)"
# "a year and a half", "2 years and 6 months", "one and a half years", "half a year", "2 yrs".
_PERIOD = re.compile(
    rf"(?<![\w.,])(?:(?P<half>half)\s++an?\s++{_HALF_UNIT}"
    rf"|{_AMOUNT}(?:(?<=\d)\s*+|\s++)(?:(?P<pre>and\s++a\s++half)\s++)?{_UNIT}"
    rf"(?:\s+and\s+(?:(?P<post>a\s+half)|(?P<m>\d{{1,2}}|{BELOW_HUNDRED}|{DIGIT_WORDS})\s+months?))?)\b",
    re.IGNORECASE,
)
# What a rate's period follows: an amount, a currency, "per" ("€49.99 a month", "420 euro a year").
_RATE_BEFORE = re.compile(r"(?:\d|[€$£]|\b(?:eur|euros?|pounds?|dollars?|usd|gbp|per|every|each))\s*$", re.IGNORECASE)
# A period's unit, looked for first: most texts name none, and the period pattern tries every position.
_UNIT_HINT = re.compile(r"decade|year|yr|month|mth|mos", re.IGNORECASE)
_MONTHS_PER = {"d": 120, "y": 12, "m": 1}  # months in a decade, a year, a month (by the unit's first letter)


@dataclass(frozen=True)
class Period:
    """A duration in years and months found in a text: its ISO 8601 form and its span."""

    iso: str
    months: int  # the whole period in months (P1Y6M: 18), to compare periods
    start: int
    end: int


def _iso(months: int, in_months: bool) -> str:
    """P18M for a period said in months; P1Y6M, P12Y for one said in years or decades."""
    if in_months or months < 12:
        return f"P{months}M"
    years, rest = divmod(months, 12)
    return f"P{years}Y" + (f"{rest}M" if rest else "")


def find_periods(text: str) -> list[Period]:
    """Durations in years and months (module docstring): "12 years" -> P12Y, "a year and a half" ->
    P1Y6M, "18 months" -> P18M, "over a decade" -> P10Y; not a rate's period ("€49.99 a month")."""
    if not _UNIT_HINT.search(text):
        return []
    out = []
    for match in _PERIOD.finditer(text):
        unit = (match.group("u") or match.group("hu")).lower()
        per = _MONTHS_PER["m" if unit.startswith("m") else unit[0]]
        if match.group("half"):
            count = 0.5
        else:
            raw = match.group("n").lower()
            if raw in ("a", "an") and _RATE_BEFORE.search(text, max(0, match.start() - 12), match.start()):
                continue
            number = to_number(raw.replace(",", "."))
            if number is None:
                continue
            count = number + (0.5 if match.group("pre") or match.group("post") else 0.0)
        extra = to_number(match.group("m")) if match.group("m") else 0.0
        months = round(count * per + (extra or 0.0))
        if months > 0:
            out.append(Period(_iso(months, per == 1), months, match.start(), match.end()))
    return out
