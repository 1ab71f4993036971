"""Issue 31, round 5: dates and times as people write them, not only ISO.

Day-month-year with slashes or dots (European order; month-day when the first number cannot be a month),
month names in either order with or without the year, a time before or after the date (24-hour, "15h00",
or 12-hour with am / pm) and named zones; 12-hour clock times alone in a moment cluster.
"""

from __future__ import annotations

import pytest

from an_agent.clock import from_rfc3339
from an_agent.evolution.inference import infer_value
from an_agent.evolution.moments import find_moment
from an_agent.evolution.value_words import STOP_WORDS
from an_agent.schemas.extract import duration_minutes, find_datetimes, find_quantities
from fake_embedder import FakeEmbedder

NOW = from_rfc3339("2027-01-15T10:00:00Z")


@pytest.mark.parametrize(
    ("text", "stamp"),
    [
        ("restored 15/01/2027 15:00", "2027-01-15T15:00:00Z"),
        ("restored 15.01.2027 15:00 UTC", "2027-01-15T15:00:00Z"),
        ("onset 03/02/2027 08:30", "2027-02-03T08:30:00Z"),  # day first, as in Europe
        ("onset 02/13/2027 08:30", "2027-02-13T08:30:00Z"),  # 13 is no month: month first
        ("window 2027/01/20 22:00", "2027-01-20T22:00:00Z"),
        ("visit on 15 Jan 2027", "2027-01-15T00:00:00Z"),
        ("visit on 15 January 2027, 15:00", "2027-01-15T15:00:00Z"),
        ("visit on the 3rd of February 2027 at 9am", "2027-02-03T09:00:00Z"),
        ("Jan 15, 2027 3:00 PM", "2027-01-15T15:00:00Z"),
        ("January 20th 2027 at 11:30 pm", "2027-01-20T23:30:00Z"),
        ("Sept. 4 2027 15h00", "2027-09-04T15:00:00Z"),
        ("due 20 Feb", "2027-02-20T00:00:00Z"),  # no year: this year
        ("due Feb 20 at 14:00", "2027-02-20T14:00:00Z"),
        ("15:00 UTC on 15 Jan 2027", "2027-01-15T15:00:00Z"),  # the time before the date
        ("3pm on 16/01/2027", "2027-01-16T15:00:00Z"),
        ("16 Jan 2027 10:00 CET", "2027-01-16T09:00:00Z"),  # a named zone
        ("16 Jan 2027 10:00 +02:00", "2027-01-16T08:00:00Z"),
        ("12 am on 16 Jan 2027", "2027-01-16T00:00:00Z"),  # midnight
        ("12:15 pm, 16.01.27", "2027-01-16T12:15:00Z"),  # a two-digit year
        ("the port went through 14/01 at 14:00", "2027-01-14T14:00:00Z"),  # no year: next to a clock time
        ("ported 3/1 09:30", "2027-01-03T09:30:00Z"),
        ("at 22:00 on 01/13", "2027-01-13T22:00:00Z"),  # 13 is no month: month first
    ],
)
def test_dates_in_the_spellings_people_use(text: str, stamp: str) -> None:
    assert [s for s, _, _ in find_datetimes(text, NOW)][:1] == [stamp]


@pytest.mark.parametrize(
    "text",
    [
        "we may 2 sites lose",  # "may" the verb
        "firmware 1.2.2027 on the router is old",  # no: a version would need a 4-digit year last and ...
        "ratio 3/4 of the cells",
        "version 15.01",
        "32/01/2027 is no date",
        "port 1/2 on the ODF is dead",  # a day and a month without a clock time: a port, a fraction
        "3/4 of the sites are down",
    ],
)
def test_what_is_no_date_stays_none(text: str) -> None:
    found = [s for s, _, _ in find_datetimes(text, NOW)]
    assert found == [] or text.startswith("firmware"), found


# NOW is Friday 15 January 2027, 10:00 UTC.
@pytest.mark.parametrize(
    ("text", "stamp"),
    [
        ("the part ships tomorrow 8am", "2027-01-16T08:00:00Z"),  # was tomorrow's midnight
        ("permit granted yesterday at noon", "2027-01-14T12:00:00Z"),
        ("courier arrives tomorrow at 3:30 pm CET", "2027-01-16T14:30:00Z"),
        ("06:00 UTC today", "2027-01-15T06:00:00Z"),
        ("tomorrow at 08:00", "2027-01-16T08:00:00Z"),
        ("tonight", "2027-01-15T20:00:00Z"),
        ("tonight 22h30", "2027-01-15T22:30:00Z"),
        ("until tomorrow midnight", "2027-01-16T00:00:00Z"),
        ("visit next Monday 09:00", "2027-01-18T09:00:00Z"),
        ("delivery next Fri.", "2027-01-22T00:00:00Z"),  # today is a Friday: next Friday is in a week
        ("this Friday at 5pm", "2027-01-15T17:00:00Z"),  # this Friday is today
        ("coming Tuesday 10:00 UTC", "2027-01-19T10:00:00Z"),
        ("failed last Wednesday at 14:00", "2027-01-13T14:00:00Z"),
        ("shipped last Friday", "2027-01-08T00:00:00Z"),
        ("due 04-03-2027", "2027-03-04T00:00:00Z"),  # day-month-year with dashes and a four-digit year
        ("due 04-03-2027 at 14:00", "2027-03-04T14:00:00Z"),
        ("SHIP DATE 16-MAY-2027 11:05 GMT", "2027-05-16T11:05:00Z"),  # a month's name between dashes
        ("booked 3-may-2027", "2027-05-03T00:00:00Z"),  # no verb between dashes
        ("18-May-27 07:14 AM IST", "2027-05-18T01:44:00Z"),  # IST as India's, +05:30
        ("12.05.2027 10:15 MEZ", "2027-05-12T09:15:00Z"),
    ],
)
def test_days_said_relative_to_now_take_a_time_in_any_spelling(text: str, stamp: str) -> None:
    assert [s for s, _, _ in find_datetimes(text, NOW)][:1] == [stamp]


@pytest.mark.parametrize("text", ["see you Monday", "on Friday the team meets", "range 1-2-27", "ports 12-14-2027x"])
def test_a_weekday_alone_and_dashed_numbers_without_a_year_are_no_dates(text: str) -> None:
    assert find_datetimes(text, NOW) == []


def test_a_version_with_a_year_shape_is_read_as_a_date_only_when_it_is_one() -> None:
    # "1.2.2027" is a valid day-month-year: written so in a fault text it is a date (1 February 2027).
    assert [s for s, _, _ in find_datetimes("firmware 1.2.2027", NOW)] == ["2027-02-01T00:00:00Z"]


@pytest.mark.parametrize(
    ("text", "stamp"),
    [
        ("hold until 6 pm", "2027-01-15T18:00:00Z"),
        ("call back after 5:30pm", "2027-01-15T17:30:00Z"),
        ("service came back around 9 a.m.", "2027-01-16T09:00:00Z"),  # 09:00 has passed today: tomorrow's
        ("restored at 11 AM", "2027-01-15T11:00:00Z"),
    ],
)
def test_twelve_hour_clock_times_are_moments(text: str, stamp: str) -> None:
    assert find_moment(text, NOW) == stamp


def test_a_time_is_no_quantity() -> None:
    assert find_quantities("restored 15 Jan 2027 15h00") == []


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("outage lasted 2 hrs 15 mins", 135.0),
        ("down for 1 hour 30 minutes", 90.0),
        ("3 hours, 20 minutes without service", 200.0),
        ("1 day and 6 hours", 1800.0),
        ("half an hour", 30.0),
        ("an hour and a half", 90.0),
        ("one and a half hours", 90.0),
        ("2:30 hours of outage", 150.0),
        ("10 minutes 30 seconds", 10.5),
        ("1h 30m", 90.0),
        ("site was out for an hour and a quarter", 75.0),  # round 6: quarters (was 60)
        ("a quarter of an hour", 15.0),
        ("three quarters of an hour", 45.0),
        ("2 hours and a quarter", 135.0),
        ("an hour and three quarters", 105.0),
        ("half a day", 720.0),
    ],
)
def test_durations_said_in_two_units_or_in_halves(text: str, minutes: float) -> None:
    (found,) = find_quantities(text)
    assert duration_minutes(found) == minutes


def test_two_durations_apart_stay_two_and_a_time_of_day_is_none() -> None:
    assert [(q.value, q.unit) for q in find_quantities("a 2 h window and a 30 min break")] == [
        (2.0, "hours"),
        (30.0, "minutes"),
    ]
    assert find_quantities("restored at 15:00 hours") == []


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_a_text_full_of_dates_and_durations_is_read_in_one_pass() -> None:
    # Quadratic, 100,000 dates or durations take minutes (20,000 took 9-18 s before the lookups); linear, ~2 s.
    assert len(find_datetimes("15 Jan 2027 15:00, 3pm on 16/01/2027; " * 50_000, NOW)) == 100_000
    assert len(find_quantities("2 hrs 15 mins, drive 1h30, " * 50_000)) == 100_000


FRIDAY = from_rfc3339("2027-04-09T13:00:00Z")


@pytest.mark.parametrize(
    ("text", "stamp"),
    [
        ("mains cut wed @ 5am", "2027-04-07T05:00:00Z"),  # two days ago is nearer than five days ahead
        ("planned sat 6:30", "2027-04-10T06:30:00Z"),
        ("mon 14:00 pls", "2027-04-12T14:00:00Z"),  # three days ahead is nearer than four ago
        ("on Friday at 09:00 CET", "2027-04-09T08:00:00Z"),  # today
        ("15:00 on Fri", "2027-04-09T15:00:00Z"),  # the time before the weekday
        ("next Monday 08:00", "2027-04-12T08:00:00Z"),  # read once, as before
    ],
)
def test_a_weekday_with_a_time_is_the_nearer_one(text: str, stamp: str) -> None:
    assert [d for d, _, _ in find_datetimes(text, FRIDAY)] == [stamp]


@pytest.mark.parametrize("text", ["see you on Friday", "the sun was out all day", "SAT 2 link down", "Wed. afternoon"])
def test_a_weekday_without_a_time_or_a_word_like_one_is_no_date(text: str) -> None:
    assert find_datetimes(text, FRIDAY) == []


def test_a_relative_moment_is_read_from_the_time_its_fragment_was_written() -> None:
    texts = ["mains back tonite 22:00", "mains back tomorrow 06:00", "mains back tonight at 23:00"]
    written = [from_rfc3339(t) for t in ("2027-04-09T08:00:00Z", "2027-04-09T20:00:00Z", "2027-04-10T09:00:00Z")]
    spec = infer_value(texts, FakeEmbedder(), now=written[-1] + 86400, stop_words=STOP_WORDS, written=written)
    assert spec.values == ("2027-04-09T22:00:00Z", "2027-04-10T06:00:00Z", "2027-04-10T23:00:00Z")
