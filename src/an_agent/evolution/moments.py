"""Moments named in words, for date-time keys: deadlines ("until 06:00", "till tomorrow morning") and durations.

`an_agent.schemas.dates.find_datetimes` reads dates (ISO, day-month-year, month names) with their times,
and today / tomorrow [at HH:MM]; a deadline
cluster says more than that, in many ways. What is read here is used by patch synthesis only
(`an_agent.evolution.inference`), so NL mapping keeps its own, stricter reading.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from an_agent.schemas.dates import find_twelve_hour_clock
from an_agent.schemas.extract import duration_minutes, find_clock_ranges, find_datetimes, find_quantities

_PART_OF_DAY = re.compile(r"\b(today|tomorrow|tonight)\s+(morning|afternoon|evening|night)\b", re.IGNORECASE)
_PART_HOURS = {"morning": 8, "afternoon": 14, "evening": 18, "night": 22}
_DAY_OFFSET = {"today": 0, "tonight": 0, "tomorrow": 1}
# A bare time of day after a deadline or time word ("until 06:00", "by 5:30", "at 22:00").
_CLOCK = re.compile(
    r"\b(?:until|till|til|by|before|at|from)\s+(\d{1,2}):(\d{2})\b(?!\s*(?:-|to|and)\s*\d)", re.IGNORECASE
)
# A time of day said without a preposition, as operators log events ("traffic recovered 11:05", "onset
# 04:30 UTC", "around 16:00"): not part of a date, a range or a longer number.
_BARE_CLOCK = re.compile(r"(?<![\d:.\-/])(\d{1,2}):(\d{2})(?![\d:]|\s*(?:-|to|and|until)\s*\d)")
DEADLINE = re.compile(r"\b(?:until|till|til|by|before)\b", re.IGNORECASE)


def stamp(moment: datetime) -> str:
    """RFC 3339 UTC, seconds precision."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def find_moment(text: str, now: float) -> str | None:
    """The date and time a fragment names, RFC 3339 UTC, or None.

    Beyond `dates.find_datetimes` (dates with their times, today / tomorrow [at HH:MM]): a part of a day ("tomorrow
    morning" -> 08:00, afternoon 14:00, evening 18:00, night 22:00) and a time of day, after
    until / till / by / before / at / from ("until 06:00") or alone ("recovered 11:05"), or on the
    12-hour clock ("until 6 pm", "around 9 a.m."): its next occurrence after ``now``.
    """
    base = datetime.fromtimestamp(now, tz=UTC)
    part = _PART_OF_DAY.search(text)
    if part:
        day = base.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=_DAY_OFFSET[part[1].lower()])
        return stamp(day.replace(hour=_PART_HOURS[part[2].lower()]))
    found = find_datetimes(text, now)
    if found:
        return found[0][0]
    # "from 01:00 until 05:00" is a range, not a moment.
    if find_clock_ranges(text):
        return None
    # "5:30pm" is 17:30: the 12-hour clock first, then a 24-hour time.
    clock = _CLOCK.search(text) or _BARE_CLOCK.search(text)
    hour_minute = find_twelve_hour_clock(text) or ((int(clock[1]), int(clock[2])) if clock else None)
    if hour_minute and hour_minute[0] < 24 and hour_minute[1] < 60:
        moment = base.replace(hour=hour_minute[0], minute=hour_minute[1], second=0, microsecond=0)
        return stamp(moment if moment > base else moment + timedelta(days=1))
    return None


def duration_of(text: str) -> float | None:
    """The first duration a fragment names, in minutes ("for the next 2 hours" -> 120), or None."""
    return next((m for q in find_quantities(text) if (m := duration_minutes(q)) is not None), None)
