"""Dates and times written in text, as RFC 3339 UTC strings (`find_datetimes`).

Shared by NL -> payload mapping and patch synthesis through `an_agent.schemas.extract`. Read:

- **ISO dates** ``2027-01-15``, with a time after ``T``, a space or "at" (``2027-01-15 at 15:00 UTC``);
  ``2027/01/15`` likewise;
- **day, month, year** with slashes or dots (``15/01/2027``, ``15.01.27``): the day first, as in Europe
  and in most of the world, unless the first number cannot be a month and the second can
  (``02/13/2027`` is 13 February);
- **month names**, in either order, the year optional (``15 Jan 2027``, ``the 3rd of February``,
  ``Jan 15, 2027``, ``Sept. 4``), or joined by dashes with the year (``16-MAY-2027``, ``18-May-27``):
  without a year, the year of ``now``. "may" and "march" in lower
  case are the verbs;
- **a time of day** right after the date (``15:00``, ``15h00``, ``3 PM``, ``11:30 pm``; "at" or a comma
  between) or right before it (``15:00 UTC on 15 Jan 2027``, ``3pm on 16/01/2027``), with a zone: Z,
  UTC, GMT, an offset (``+02:00``) or a common abbreviation (CET, CEST, MEZ, MESZ, BST, EET, EEST, EST,
  EDT, PST, PDT, IST as India's, JST, SGT, HKT, AEST); no zone is UTC;
- **today / tonight / tomorrow / yesterday**, and a weekday after next, this, coming or last ("next
  Monday", "last Fri"), relative to ``now``, with a time of day after or before them in any of the
  spellings above ("tomorrow 8am", "next Monday at 09:00 CET", "06:00 UTC today"), or noon, midday or
  midnight ("yesterday at noon"); tonight alone is 20:00. A weekday alone is none: whether it is the
  one before or after ``now`` is in the tense, which is not read. A weekday with a time of day ("wed @
  5am", "Friday at 09:00 CET", "15:00 on Fri") is the nearer to ``now`` of the coming one (today
  included) and the last one.

A date without a time is its midnight. A date that does not exist (``32/01/2027``) is none.
"""

from __future__ import annotations

import bisect
import re
from datetime import UTC, datetime, timedelta

_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH_NAME = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_MONTH = rf"(?P<mon>{_MONTH_NAME})\.?"
_VERBS = frozenset({"may", "march"})  # month names that are verbs when written in lower case
_ORDINAL = r"(?:st|nd|rd|th)?"
# Each date shape: (pattern, the order of its numbered groups). Bounded repetitions only: linear.
_DATES = (
    re.compile(r"(?<![\w/.])(?P<y>\d{4})(?P<sep>[-/])(?P<m>\d{1,2})(?P=sep)(?P<d>\d{1,2})(?![\d/]|-\d)"),
    re.compile(r"(?<![\w/.:,])(?P<d>\d{1,2})(?P<sep>[/.])(?P<m>\d{1,2})(?P=sep)(?P<y>\d{4}|\d{2})(?![\d/]|\.\d)"),
    # with dashes only with a four-digit year: "04-03-2027"; "1-2-27" is a range or a code
    re.compile(r"(?<![\w/.:,\-])(?P<d>\d{1,2})(?P<sep>-)(?P<m>\d{1,2})-(?P<y>\d{4})(?![\w/\-]|\.\d)"),
    re.compile(
        rf"(?<![\w:.,])(?P<d>\d{{1,2}}){_ORDINAL}(?:\s{{1,3}}of)?\s{{1,3}}{_MONTH}(?:,?\s{{1,3}}(?P<y>\d{{4}}))?(?![\w:])",
        re.IGNORECASE,
    ),
    re.compile(
        rf"(?<![\w])(?:the\s{{1,3}})?{_MONTH}\s{{1,3}}(?P<d>\d{{1,2}}){_ORDINAL}(?:,?\s{{1,3}}(?P<y>\d{{4}}))?(?![\w:])",
        re.IGNORECASE,
    ),
    # a day, a month's name and a year joined by dashes, as ticket tools and Oracle print them: "16-MAY-2027"
    re.compile(rf"(?<![\w:.,\-])(?P<d>\d{{1,2}})-(?P<mon>{_MONTH_NAME})-(?P<y>\d{{4}}|\d{{2}})(?![\w:\-])", re.I),
)
# A day and a month without a year, "06/06 at 14:00", "5/6 09:30": a date only next to a clock time (alone,
# "3/4" is a fraction, "1/2" a port); day first, as the dates with a year, unless the first is no month's day.
_DAY_MONTH = re.compile(r"(?<![\w/.:,])(?P<d>\d{1,2})(?P<sep>/)(?P<m>\d{1,2})(?![\w/]|[.,]\d)")
# The end of a date (a year, a day-month-year's last part, a day and its month's name in either order),
# with "," or "at" after it: what comes next is the date's time ("15 Jan 2027 15h00" is no duration).
ENDS_WITH_A_DATE = re.compile(
    rf"(?:\d{{4}}|[/.]\d{{2}}|\b{_MONTH_NAME}\.?\s{{1,3}}\d{{1,2}}|\d{{1,2}}{_ORDINAL}\s{{1,3}}(?:of\s{{1,3}})?{_MONTH_NAME}\.?)"
    r",?\s{1,3}(?:at\s{1,3})?$",
    re.IGNORECASE,
)
# The zones read by name (an alternation, longest first where one is the start of another: CEST, CET).
ZONE_NAMES = "Z|UTC|GMT|CEST|CET|MESZ|MEZ|BST|EEST|EET|EST|EDT|PST|PDT|IST|JST|SGT|HKT|AEST"
_ZONE = rf"(?P<tz>{ZONE_NAMES}|[+-]\d{{2}}:?\d{{2}})"
# A time of day: minutes after ':' or 'h', or an am / pm; a bare "15" is no time.
_HALF = r"\s?(?P<{}>[ap])\.?\s?m\b\.?"  # am / pm, a.m. / p.m.
_TIME = (
    r"(?P<h>\d{1,2})(?:(?::|h)(?P<min>\d{2})(?::(?P<s>\d{2}))?(?:"
    + _HALF.format("ap1")
    + ")?|"
    + _HALF.format("ap2")
    + ")"
)
_TIME_AFTER = re.compile(
    rf"(?:T|,?\s{{0,3}}(?:at\s{{1,3}}|@\s{{0,3}})?)(?<![\d]){_TIME}(?:\s{{0,2}}{_ZONE})?(?![\w:])", re.I
)
_TIME_BEFORE = re.compile(
    rf"(?<![\w:.]){_TIME}(?:\s{{0,2}}{_ZONE})?\s{{0,3}},?\s{{0,3}}(?:on\s{{1,3}}|of\s{{1,3}})?$", re.I
)
_ZONES = {"z": 0, "utc": 0, "gmt": 0, "cet": 60, "cest": 120, "bst": 60, "eet": 120, "eest": 180}
_ZONES |= {"est": -300, "edt": -240, "pst": -480, "pdt": -420}
# India's (+05:30): IST is also Irish and Israeli time, but in the NOCs and vendor desks that write it, India.
_ZONES |= {"mez": 60, "mesz": 120, "ist": 330, "jst": 540, "sgt": 480, "hkt": 480, "aest": 600}
_WEEKDAY_NAME = r"(?:mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)(?:day|nesday|sday|rday|urday)?"
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
# A day said relative to now: "tomorrow", "next Monday", "last Fri" (a weekday needs its next / last).
_RELATIVE_DAY = re.compile(
    rf"\b(?:(?P<day>today|tonight|tomorrow|yesterday)|(?P<which>next|this|coming|last)\s{{1,3}}(?P<wd>{_WEEKDAY_NAME}))\b\.?",
    re.IGNORECASE,
)
_RELATIVE_OFFSET = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}
# A weekday said without next / last ("wed @ 5am", "Friday at 09:00", "15:00 on Fri"): read only with a time.
_BARE_WEEKDAY = re.compile(rf"\b(?P<wd>{_WEEKDAY_NAME})\b\.?", re.IGNORECASE)
# Noon and midnight said as words after a day ("tomorrow at noon", "yesterday midnight").
_NAMED_HOUR = re.compile(r"\s{1,3}(?:at\s{1,3})?(?P<name>noon|midday|midnight)\b", re.IGNORECASE)
_HOUR_OF = {"noon": 12, "midday": 12, "midnight": 0}


def find_datetimes(text: str, now: float) -> list[tuple[str, int, int]]:
    """Dates and times as RFC 3339 UTC strings ('2027-01-15T15:00:00Z'), with their spans (module docstring)."""
    out: list[tuple[str, int, int]] = []
    spans: list[tuple[int, int]] = []  # what is read already, sorted and disjoint: a lookup, not a scan

    def taken(at: int) -> bool:
        i = bisect.bisect_right(spans, (at, len(text) + 1)) - 1
        return i >= 0 and spans[i][1] > at

    year = datetime.fromtimestamp(now, tz=UTC).year
    for pattern in (*_DATES, _DAY_MONTH):
        for match in pattern.finditer(text):
            if taken(match.start()):
                continue  # "2027-01-15" is not read again as "15" of something
            day = _date(match, year)
            if day is None:
                continue
            start, end = match.start(), match.end()
            after = _TIME_AFTER.match(text, end)
            before = _TIME_BEFORE.search(text, max(0, start - 30), start)
            time = after or before
            if time is None and pattern is _DAY_MONTH:
                continue  # a fraction, a port, a ratio: no clock time says it is a date
            moment = _with_time(day, time) if time else day
            if time is not None and moment is None:
                continue
            if after is not None:
                end = after.end()
            elif before is not None:
                start = before.start()
            out.append((_stamp(moment or day), start, end))
            bisect.insort(spans, (start, end))
    base = datetime.fromtimestamp(now, tz=UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    for match in _RELATIVE_DAY.finditer(text):
        if taken(match.start()):
            continue
        day = _relative_day(match, base)
        start, end = match.start(), match.end()
        after = _TIME_AFTER.match(text, end)
        time = after or _TIME_BEFORE.search(text, max(0, start - 30), start)
        named = None if time else _NAMED_HOUR.match(text, end)
        if time is not None:
            moment = _with_time(day, time)
            if moment is None:
                continue
            day = moment
            start, end = (start, time.end()) if time is after else (time.start(), end)
        elif named is not None:
            day, end = day.replace(hour=_HOUR_OF[named.group("name").lower()]), named.end()
        elif (match.group("day") or "").lower() == "tonight":
            day = day.replace(hour=20)
        out.append((_stamp(day), start, end))
        bisect.insort(spans, (start, end))
    written = datetime.fromtimestamp(now, tz=UTC)
    for match in _BARE_WEEKDAY.finditer(text):
        if taken(match.start()):
            continue  # "next Monday" is read above
        start, end = match.start(), match.end()
        after = _TIME_AFTER.match(text, end)
        time = after or _TIME_BEFORE.search(text, max(0, start - 30), start)
        if time is None:
            continue  # a weekday alone is none (module docstring)
        weekday = _WEEKDAYS.index(match.group("wd")[:3].lower())
        coming = base + timedelta(days=(weekday - base.weekday()) % 7)
        moments = [m for m in (_with_time(coming, time), _with_time(coming - timedelta(days=7), time)) if m]
        if not moments:
            continue
        # The tense is not read: of the coming and the last such weekday, the one nearer the writing.
        moment = min(moments, key=lambda m: (abs((m - written).total_seconds()), m < written))
        start, end = (start, time.end()) if time is after else (time.start(), end)
        out.append((_stamp(moment), start, end))
    return sorted(out, key=lambda t: t[1])


def _relative_day(match: re.Match[str], today: datetime) -> datetime:
    """The midnight of the day a `_RELATIVE_DAY` match names, from ``today``'s midnight.

    "next Monday" and "coming Monday" are the first Monday after today, "this Monday" the one of the
    coming seven days (today included), "last Monday" the last one before today.
    """
    if match.group("day"):
        return today + timedelta(days=_RELATIVE_OFFSET[match.group("day").lower()])
    weekday = _WEEKDAYS.index(match.group("wd")[:3].lower())
    ahead = (weekday - today.weekday()) % 7
    which = match.group("which").lower()
    if which == "last":
        return today - timedelta(days=(today.weekday() - weekday) % 7 or 7)
    return today + timedelta(days=ahead or (0 if which == "this" else 7))


_TWELVE_HOUR = re.compile(r"(?<![\d:.])(?P<h>\d{1,2})(?::(?P<min>\d{2}))?" + _HALF.format("ap"), re.IGNORECASE)


def find_twelve_hour_clock(text: str) -> tuple[int, int] | None:
    """(hour, minute) on the 24-hour clock of the first "6 pm", "5:30pm", "9 a.m.", "11 AM" of ``text``."""
    for match in _TWELVE_HOUR.finditer(text):
        hour, minute = int(match.group("h")), int(match.group("min") or 0)
        if 1 <= hour <= 12 and minute <= 59:
            return hour % 12 + (12 if match.group("ap").lower() == "p" else 0), minute
    return None


def _date(match: re.Match[str], this_year: int) -> datetime | None:
    """The day a date match names, or None when it names none (a verb, a day that does not exist)."""
    groups = match.groupdict()
    if groups.get("mon") is not None:
        name = groups["mon"]
        if name in _VERBS and match.re is not _DATES[-1]:  # "16-may-2027" is no verb
            return None
        month = _MONTHS[name[:3].lower()]
    else:
        month = int(groups["m"])
    day = int(groups["d"])
    if groups.get("sep") == "." and len(groups["y"]) == 2 and (len(groups["d"]) < 2 or len(groups["m"]) < 2):
        return None  # "1.2.27" is a version; "16.01.27" a date
    if groups.get("mon") is None and (match.re in _DATES[1:3] or match.re is _DAY_MONTH) and month > 12 >= day:
        day, month = month, day  # "02/13/2027": 13 is no month, so it is month first
    raw_year = groups.get("y")
    year = this_year if raw_year is None else int(raw_year) + (2000 if len(raw_year) == 2 else 0)
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _with_time(day: datetime, time: re.Match[str]) -> datetime | None:
    """``day`` at the time ``time`` matched (`_TIME`, with its zone), in UTC; None for no time of day."""
    hour = int(time.group("h"))
    minute = int(time.group("min") or 0)
    second = int(time.group("s") or 0)
    half = (time.group("ap1") or time.group("ap2") or "").lower()
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half == "p" else 0)
    if hour > 23 or minute > 59 or second > 59:
        return None
    moment = day.replace(hour=hour, minute=minute, second=second)
    zone = time.group("tz")
    if zone is None:
        return moment
    if zone.lower() in _ZONES:
        return moment - timedelta(minutes=_ZONES[zone.lower()])
    sign = 1 if zone[0] == "+" else -1
    digits = zone[1:].replace(":", "")
    return moment - sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
