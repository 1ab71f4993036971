"""Rule-based extraction of typed values from natural language.

Shared by NL -> payload mapping (`an_agent.schemas.mapping`) and by patch synthesis, which infers the
type of a new key from the values its fragments contain. Everything here is deterministic and offline.
The readers are here; how numbers are written is `an_agent.schemas.numbers`, units' spellings and every
unit conversion `an_agent.schemas.units`, dates and times `an_agent.schemas.dates`.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from an_agent.schemas.dates import ENDS_WITH_A_DATE
from an_agent.schemas.dates import find_datetimes as find_datetimes  # re-exported: dates have their own module
from an_agent.schemas.numbers import BELOW_HUNDRED, DIGIT_WORDS, GROUPED, NUMBER, WORD_NUMBERS, amount, to_number
from an_agent.schemas.numbers import NUMBER_WORDS as NUMBER_WORDS  # re-exported
from an_agent.schemas.numbers import spoken_number as spoken_number  # re-exported
from an_agent.schemas.periods import find_periods
from an_agent.schemas.units import CURRENCIES as CURRENCIES  # re-exported: units have their own module
from an_agent.schemas.units import (
    PER_LENGTH_PATTERN,
    UNIT_PATTERN,
    canonical_value,
    per_length,
    per_month,
    unit_scale,
)
from an_agent.schemas.units import UNIT_WORDS as UNIT_WORDS  # re-exported
from an_agent.schemas.units import Quantity as Quantity  # re-exported

_QUANTITY = re.compile(rf"(?<![\w.:]){NUMBER}\s*(?P<unit>{UNIT_PATTERN})(?![\w])", re.IGNORECASE)
# The unit in a field's label, the number after it, as ticket tools and spreadsheets export them ("Fan
# speed (rpm): 6000", "Fan RPM: 2,800", "wind,km/h,85", "kWh per day: 50"): a unit (and what it is per),
# a closing bracket at most, one separator, the number (not the start of a date, a time or an id); after
# a closing bracket, a tab or spaces separate too ("Penalty (EUR)\t1 200"), never a line break.
_LABELLED = re.compile(
    rf"(?<![^\W_])(?<!/)(?P<unit>{UNIT_PATTERN})(?:\s{{1,3}}per\s{{1,3}}[a-z]{{2,9}})?"
    rf"(?:\)?\s{{0,3}}(?P<sep>[:=,|])\s{{0,3}}|(?P<gap>\)[\t ]{{1,3}})){NUMBER}(?![\w.:/\-]|[.,]\d)",
    re.IGNORECASE,
)
_CELL_AFTER = re.compile(r"[ \t]{0,3}[|;]")
# A currency before its amount ("EUR 1.200,00", "USD 1,150.00", "$4,200", "\u20ac850", "GBP 300"), and a
# currency in the cell after the amount's in a semicolon-separated line ("975,50;EUR").
_PREFIX_SPELLINGS = ("us$", "eur", "usd", "gbp", "$", "\u20ac", "\u00a3")
_PREFIXED = re.compile(
    rf"(?<![\w$\u20ac\u00a3])(?P<unit>{'|'.join(map(re.escape, _PREFIX_SPELLINGS))})\s{{0,2}}"
    rf"(?P<num>(?:{GROUPED}|\d+(?:[.,]\d+)?))(?![\w]|[.,]\d)",
    re.IGNORECASE,
)
# An amount of money said per a period after it ("€49.99 a month", "35 euro per month", "29,99€/month",
# "39.99 eur p/m", "55 euro monthly", "420 euro a year", "$9.99/mo"): `units.per_month` converts it.
# "a year ago" is a moment, not a period.
_PERIOD_AFTER = re.compile(
    r"[ \t]{0,3}(?:(?:/|an?|per|each|every)[ \t]{0,3}(?P<per>months?|mth|mo|years?|yr|annum|weeks?|wk)"
    r"|p(?:/|\.|)(?P<abbr>[ma])\.?|(?P<adj>monthly|yearly|annually|weekly))(?![\w/])(?![ \t]{1,3}ago\b)",
    re.IGNORECASE,
)
# ... or a period's adjective and a cost word before it, the clause between them without another number
# ("the monthly charge for the service is €45", "Monthly fee: EUR 20", "annual subscription £120").
_PERIOD_BEFORE = re.compile(
    r"(?<![\w])(?P<adj>monthly|yearly|annual|annually|weekly)[ \t]{1,3}(?:[a-z\-]+[ \t]{1,3})?"
    r"(?:fees?|charges?|bills?|prices?|costs?|plans?|subscriptions?|rent|payments?)(?![\w])[^\d.!?;\n]{0,40}$",
    re.IGNORECASE,
)
# A euro written "e" glued to its amount ("25e a month"), only with a period after it: "Cat 5e" is a cable.
_EURO_E = re.compile(r"(?<![\w.:,])(?P<num>\d+(?:[.,]\d{1,2})?)(?P<unit>e)(?=" + _PERIOD_AFTER.pattern + ")", re.I)
_CURRENCY_CELL = re.compile(
    rf"(?<![\w.:,])(?P<num>(?:{GROUPED}|\d+(?:[.,]\d+)?))\s{{0,2}};\s{{0,2}}(?P<unit>eur|usd|gbp)(?!\w)",
    re.IGNORECASE,
)
# A range of one unit said before it ("20-30 km/h", "between -105 and -110 dBm", "5 to 10 Mbps"): the
# number before the connector, anchored at the end of the text that precedes the quantity. Bounded
# repetitions: a run of spaces cannot make the search quadratic.
_RANGE_LOW = re.compile(
    r"(?<![\w.])(?P<low>[-+\u2212]?\d+(?:[.,]\d+)?)\s{0,3}(?:-|\u2013|to|and)\s{0,3}$", re.IGNORECASE
)
# A capitalised word (not the text's first) right before a number: the number is part of a name.
_IN_A_NAME = re.compile(r"(?<=\S)\s+[A-Z][\w\-]*\s+\S+\s*$")
_LABEL_SHY = frozenset({"seconds", "minutes", "hours", "days", "weeks", "degrees", "km", "m", "db"})
# A lone "m" glued to its number ("32m", "5m") is as often metres as minutes: the words of its sentence
# decide (`_glued_m`), never the letter alone. Words that say a length is meant: what is high, deep, long or
# far, and what such a length is of (a mast, a tower, a cable); words that say a time is: waiting, taking,
# lasting, an other time unit. Both, or neither, leave it unread (a key's unit may settle it: `glued_m`).
_LENGTH_EVIDENCE = re.compile(
    r"(?<![^\W\d_])(?:heights?|hg?ht|high(?:er)?|tall(?:er)?|agl|a?msl|asl|elevation|altitude|above|below|deep|depth"
    r"|long(?:er)?|length|wide|width|distance|dist|far|masts?|towers?|poles?|ladders?|cables?|trench|span|radius"
    r"|roof|rooftop|km|cm|ft|feet|metres|meters|mtrs?)(?![^\W\d_])",
    re.IGNORECASE,
)
_DURATION_EVIDENCE = re.compile(
    r"(?<![^\W\d_])(?:wait(?:ed|ing|s)?|took|take[sn]?|taking|last(?:ed|s|ing)|ago|late|later|delay(?:ed)?|eta"
    r"|duration|queue|hold(?:ing)?|timeout|outage|offline|reboot|restart|mins?|minutes?|hours?|h|hrs?|secs?"
    r"|seconds|days?|until|till|since|every)(?![^\W\d_])",
    re.IGNORECASE,
)
_ABOUT = r"(?:(?:approx|abt|about|around|ca)\.?\s{1,3}|~\s?)?"  # "approx 18 m", "abt 0.8", "~28m"
# ... and words said right before the number ("back in 5m", "for 10m", "after ~15m"): a time.
_DURATION_BEFORE = re.compile(rf"\b(?:in|for|after|within|every|took|wait|waited|next)\s{{1,3}}{_ABOUT}$", re.I)
# A per-length unit in the label before the number: "loss/km = 1.2 dB", "attenuation per km approx 0.4 dB".
_PER_LENGTH_LABEL = re.compile(
    rf"(?<=[^\W\d_])(?:/|\s{{1,3}}per\s{{1,3}})(?P<per>{PER_LENGTH_PATTERN})\s{{0,3}}[:=]?\s{{0,3}}{_ABOUT}$", re.I
)
_SENTENCE_END = re.compile(r"[!?;\n]|\.(?=\s+[A-Z])")
_EVIDENCE_REACH = 80  # characters either side: a message's sentence, and a bounded window (linear time)


def _glued_m(text: str, start: int, end: int) -> str | None:
    """What the "m" glued to the number at ``start``-``end`` of ``text`` is, by the words of its sentence:
    "m" (metres: "ant hght 32m", "12m above street"), "minutes" ("waited 5m", "back in 5m"), or None."""
    left = text[max(0, start - _EVIDENCE_REACH) : start]
    right = text[end : end + _EVIDENCE_REACH]
    cut = [m.end() for m in _SENTENCE_END.finditer(left)]
    left = left[cut[-1] :] if cut else left
    after = _SENTENCE_END.search(right)
    right = right[: after.start()] if after else right
    sentence = f"{left} {right}"
    length = _LENGTH_EVIDENCE.search(sentence) is not None
    duration = _DURATION_EVIDENCE.search(sentence) is not None or _DURATION_BEFORE.search(left) is not None
    if length == duration:
        return None
    return "m" if length else "minutes"


_HOURS_MINUTES = re.compile(
    r"(?<![\w.:])(?P<h>\d{1,2})\s?h\s?(?P<m>[0-5]\d)(?:\s?(?:min|m)\b)?(?![\w:])", re.IGNORECASE
)
_BARE_NUMBER = re.compile(r"(?<![\w.\-:])[-+\u2212]?\d+(?:\.\d+)?(?![\w:]|-\d)")
# Linear in the text (client text can be a megabyte): a match starts only where an id can start, not
# inside "SITE-SITE-..."; prefix parts are taken once (each followed by "-"); the body is checked for a
# digit ahead instead of being split around one.
_ID = re.compile(
    r"(?<![A-Z0-9]-)(?<![A-Za-z0-9])(?P<prefix>[A-Z]{2,}+(?:-[A-Z]++(?=-))*+)-(?P<body>(?=[A-Z0-9]*\d)[A-Z0-9]++)\b"
)
# Ticket and incident numbers written without a dash (INC4303720, CHG0012345): letters, then five digits or more.
_ID_NO_DASH = re.compile(r"(?<![A-Za-z0-9])(?P<prefix>[A-Z]{2,5}+)(?P<body>\d{5,}+)\b")
_CLOCK_RANGE = re.compile(
    r"\b(?:between\s+)?(?P<a>\d{1,2}:\d{2})\s*(?:-|\u2013|to|and|until)\s*(?P<b>\d{1,2}:\d{2})\b", re.IGNORECASE
)
_MINUTES_PER = {"seconds": 1 / 60, "minutes": 1, "hours": 60, "days": 1440, "weeks": 10080}
# Durations said in words and in two units: "2:30 hours", "half an hour", "an hour and a half", "2 h 15 min".
# ... but "at 15:00 hours" is a time of day.
_CLOCK_HOURS = re.compile(
    r"(?<![\w.:])(?<!at )(?<!by )(?<!from )(?<!until )(?<!till )(?<!since )(?<!around )"
    r"(?P<h>\d{1,2}):(?P<m>[0-5]\d)\s{0,2}(?:hours|hrs|hr|h)\b",
    re.IGNORECASE,
)
# A part of a unit: "half an hour", "a quarter of an hour", "three quarters of an hour", "half a day".
_FRACTION = r"(?P<f>half|(?:a\s{1,3}|one\s{1,3})?quarter|three\s{1,3}quarters)"
_PART_OF = re.compile(
    rf"\b{_FRACTION}\s{{1,3}}(?:of\s{{1,3}})?an?\s{{1,3}}(?P<u>hour|day|minute|week)\b", re.IGNORECASE
)
# A whole and a part: "an hour and a half", "2 hours and a quarter", "one and a half days".
_AND_A_PART = re.compile(
    r"\b(?P<n>an?|one|two|three|four|five|six|\d{1,3})\s{1,3}(?:(?P<u>hours?|days?|minutes?|weeks?)\s{1,3}and\s{1,3}"
    r"(?P<f>a\s{1,3}half|a\s{1,3}quarter|three\s{1,3}quarters)|and\s{1,3}(?P<f2>a\s{1,3}half|a\s{1,3}quarter)"
    r"\s{1,3}(?P<u2>hours|days|minutes|weeks))\b",
    re.IGNORECASE,
)
_TIME_UNIT = {"hour": "hours", "day": "days", "minute": "minutes", "week": "weeks"}
_SMALLER = {"weeks": "days", "days": "hours", "hours": "minutes", "minutes": "seconds"}
_JOINED = re.compile(r"\s{0,3}(?:,|and)?\s{0,3}", re.IGNORECASE)


@dataclass(frozen=True)
class FoundId:
    """An identifier such as CELL-0401: its prefix (``CELL``) and the whole id."""

    prefix: str
    value: str
    start: int
    end: int
    dash: bool = True  # PREFIX-123; False for INC4303720


def find_quantities(text: str, glued_m: str | None = None) -> list[Quantity]:
    """Numbers followed by a unit, e.g. '2 dB', 'two hours', '40 degrees', '10%', '1h30'.

    Each quantity is in its canonical unit (`_UNITS`): other units of the same quantity are converted
    (`_SCALED`: mph -> km/h, kbps and Gbps -> Mbps, MWh -> kWh; Fahrenheit -> Celsius), so a key has one unit.
    "1h30" / "2h15" (hours and minutes) is a number of minutes. A range of one unit ("20-30 km/h",
    "between 20 and 30 km/h", "-110 to -105 dBm") is one quantity, its upper bound: a key holds one
    number, and the bound a reading can reach is what a threshold or a compensation is decided on.
    Money said per a period ("€49.99 a month", "420 euro a year", "monthly charge ... €45", "25e a month")
    is in the currency per month (`units.per_month`: eur_per_month 49.99, 35.0).
    """
    out = []
    for match in _HOURS_MINUTES.finditer(text):
        if ENDS_WITH_A_DATE.search(text, max(0, match.start() - 40), match.start()):
            continue  # "15 Jan 2027 15h00": a time of day, not 15 hours
        out.append(Quantity(int(match.group("h")) * 60 + int(match.group("m")), "minutes", match.start(), match.end()))
    for match in _CLOCK_HOURS.finditer(text):  # "2:30 hours" is two and a half hours
        out.append(Quantity(int(match.group("h")) * 60 + int(match.group("m")), "minutes", match.start(), match.end()))
    out += _parts(text)
    # Inside a quantity found already? Looked up, not scanned: a text full of quantities is read in one
    # pass (a megabyte of "48 volts, 4000 rpm" or "2 hrs 15 mins, ..."). The spans read first, sorted by
    # start with the furthest end so far; those of this loop come in order of start, so the furthest end.
    first = sorted((q.start, q.end) for q in out)
    starts = [a for a, _ in first]
    reach = list(itertools.accumulate((b for _, b in first), max))
    max_end = 0
    matches = [*_QUANTITY.finditer(text), *_LABELLED.finditer(text)]
    matches += [*_PREFIXED.finditer(text), *_CURRENCY_CELL.finditer(text), *_EURO_E.finditer(text)]
    for match in sorted(matches, key=lambda m: m.start("num")):
        spelling = match.group("unit").lower()
        value = amount(match.group("num"))
        before = bisect.bisect_right(starts, match.start()) - 1
        inside = match.start() < max_end or (before >= 0 and reach[before] > match.start())
        scale = ("eur", 1.0) if match.re is _EURO_E else unit_scale(match.group("unit"))
        if value is None or scale is None or inside:
            continue
        unit = scale[0]
        # A unit in brackets or ending a field's snake_case name ("otdr_km: 7,9") is a label's, and
        # so is a per cent sign before a colon or an equals sign ("BH utilisation %: 69,4"; "%, 3" is none).
        bracketed = match.re is _LABELLED and (
            text[match.start() - 1 : match.start()] == "("
            or (text[match.start() - 1 : match.start()] == "_" and len(spelling) >= 2)  # not "file_s", "cell_c"
            or (spelling == "%" and match.group("sep") in (":", "="))
        )
        shy = (len(spelling) < 2 and unit not in CURRENCIES) or unit in _LABEL_SHY
        if match.re is _LABELLED and match.group("gap") and _CELL_AFTER.match(text, match.end()):
            continue  # "Penalty (EUR) 7.3 | 1.200,00": a table's rows run together, 7.3 is the next cell
        if match.re is _LABELLED and shy and not bracketed:
            continue  # "per day: 50", "C, 3 sites", "deg: 4": a word before a colon, not a unit's label
        if not match.group("num")[-1].isdigit() and match.end("num") == match.start("unit"):
            continue  # "AC setpoint", "an h": a number in words is a word apart from its unit ("a C" is none)
        if unit in ("seconds", "hours") and len(spelling) == 1 and not match.group("num")[-1].isdigit():
            continue  # "a h" / "one s" are not quantities
        if spelling == "m" and match.group("unit") != "m":
            continue  # "2 M users" (millions)
        if spelling == "m" and match.end("num") == match.start("unit"):
            # "32m", "5m": metres or minutes, as the words of the sentence say, else as the caller's key
            # says (``glued_m``), else unread
            unit = _glued_m(text, match.start(), match.end()) or glued_m or ""
            if not unit:
                continue
        if spelling in ("c", "f") and match.group("unit") not in ("C", "F"):
            continue  # "37 C" is Celsius, "113F" Fahrenheit; a lower-case letter after a number is rarely one
        if spelling == "v" and _IN_A_NAME.search(text, 0, match.start()):
            continue  # "Sony Xperia 10 V": a model's name, not 10 volts ("Battery 48 V", "at 52 v" are volts)
        low = _RANGE_LOW.search(text, max(0, match.start() - 40), match.start()) if match.re is _QUANTITY else None
        if low is not None and (bound := amount(low.group("low"))) is not None:
            value = max(value, bound)  # the range's upper bound, whichever order it was said in
        value = canonical_value(value, match.group("unit"))
        label = _PER_LENGTH_LABEL.search(text, max(0, match.start() - 30), match.start())
        if match.re is _QUANTITY and label and (per := per_length(unit, label.group("per"))):
            unit, value = per[0], round(value * per[1], 3)  # "loss/km = 1.2 dB": dB per km
        end = match.end()
        if unit in CURRENCIES and (period := _period(text, match)) is not None:
            (unit, factor), end = period
            value = round(value * factor, 2)  # 420 euro a year: 35.0 eur_per_month
        out.append(Quantity(value, unit, match.start(), end))
        max_end = max(max_end, end)
    return _compound_durations(text, sorted(out, key=lambda q: q.start))


def _period(text: str, match: re.Match[str]) -> tuple[tuple[str, float], int] | None:
    """((unit, factor), end) when the amount of money ``match`` read is said per a period: after it
    ("€49.99 a month", "39.99 eur p/m"), in its label ("EUR per month: 45") or as a period's adjective and
    a cost word before it ("monthly charge ... €45"); None for an amount said once."""
    currency = unit_scale("eur" if match.re is _EURO_E else match.group("unit"))
    assert currency is not None  # a currency: its caller read it
    after = _PERIOD_AFTER.match(text, match.end())
    if after is not None:
        period = after.group("per") or after.group("abbr") or after.group("adj")
        found = per_month(currency[0], period)
        return None if found is None else (found, after.end())
    label = text[match.end("unit") : match.start("num")] if match.re is _LABELLED else ""
    before = _PERIOD_BEFORE.search(text, max(0, match.start() - 80), match.start())
    said = re.search(r"per\s{1,3}(\w+)", label) or before
    if said is None:
        return None
    found = per_month(currency[0], said.group(1) if said is not before else said.group("adj"))
    return None if found is None else (found, match.end())


def _parts(text: str) -> list[Quantity]:
    """ "half an hour" (0.5 hours), "a quarter of an hour" (0.25), "an hour and a half", "2 hours and a
    quarter" (2.25), "one and a half days" (1.5): ``a`` is not one here."""
    out = [
        Quantity(_part(m.group("f")), _TIME_UNIT[m.group("u").lower()], m.start(), m.end())
        for m in _PART_OF.finditer(text)
    ]
    for match in _AND_A_PART.finditer(text):
        count = to_number(match.group("n"))
        unit = match.group("u") or match.group("u2")
        if count is not None:
            value = count + _part(match.group("f") or match.group("f2"))
            out.append(Quantity(value, _TIME_UNIT[unit.lower().rstrip("s")], match.start(), match.end()))
    return out


def _part(fraction: str) -> float:
    """0.5 for half, 0.75 for three quarters, 0.25 for a quarter."""
    words = fraction.lower().split()
    return 0.5 if "half" in words else 0.75 if "three" in words else 0.25


def _compound_durations(text: str, found: list[Quantity]) -> list[Quantity]:
    """A time said in two units ("2 hrs 15 mins", "1 day and 6 hours") is one quantity, in the smaller."""
    out: list[Quantity] = []
    for quantity in found:
        last = out[-1] if out else None
        if (
            last is not None
            and _SMALLER.get(last.unit) == quantity.unit
            and _JOINED.fullmatch(text, last.end, quantity.start)
        ):
            factor = _MINUTES_PER[last.unit] / _MINUTES_PER[quantity.unit]
            out[-1] = Quantity(round(last.value * factor + quantity.value, 3), quantity.unit, last.start, quantity.end)
        else:
            out.append(quantity)
    return out


def find_numbers(text: str) -> list[tuple[float, int, int]]:
    """Bare numbers (value, start, end), skipping those inside ids, times and dates."""
    out = []
    for match in _BARE_NUMBER.finditer(text):
        value = to_number(match.group(0))
        if value is not None:
            out.append((value, match.start(), match.end()))
    return out


# A count as people write one: "1200", "2 400", "3,500" (groups of three), "1.2k", "~900". Not a part of
# an id, a clock time, a date, a version or a decimal ("1,5"), nor a number followed by a unit.
# Groups of three are one separator all along: a comma, a space (also narrow or no-break), or a dot, as
# sheets of most of Europe write them ("1.240 calls"). A comma after a word is a cell's ("Berlin,1 045").
_COUNT = re.compile(
    r"(?:(?<![\w.,\-:/])|(?<=[A-Za-z],))(?P<num>\d{1,3}(?:,\d{3})+|\d{1,3}(?:[ \u202f\u00a0]\d{3})+"
    r"|\d{1,3}(?:\.\d{3})+|\d+(?:\.\d)?(?P<k>k)|\d+)(?![\w:/\-]|[.,]\d)",
    re.IGNORECASE,
)
# A telephone number, whole or cut short by a relay ("[SMS +48601…]", "call +353 87 123 4567"): a plus and
# four digits or more. None of its digits counts anything.
_PHONE = re.compile(r"\+\d(?:[\s\-]?\d){3,}")
# Hundreds and thousands said in words ("three hundred calls", "more than two thousand", "a thousand
# and fifty"): smaller numbers in words are left to the words around them ("one of the sites").
_SPOKEN_COUNT = re.compile(
    rf"\b(?:a|{BELOW_HUNDRED}|{DIGIT_WORDS})\s(?:hundred|thousand)"
    rf"(?:\s(?:and\s)?(?:{BELOW_HUNDRED}|{DIGIT_WORDS})(?:\s(?:hundred|thousand))?)?\b",
    re.IGNORECASE,
)

# A small number in words before the things it counts ("eight devices", "only two phones", "thirty laptops
# and phones", "twenty-five devices", "a dozen phones", "three new routers"): a count only before a plural
# noun, one word between at most, so "one of the sites", "two of them" and "a customer" are none.
_WORD_COUNT = re.compile(
    rf"\b(?P<num>(?:a\s+)?dozen|{BELOW_HUNDRED}|{DIGIT_WORDS})(?=\s+(?P<w1>[a-z]+)(?:\s+(?P<w2>[a-z]+))?)",
    re.IGNORECASE,
)
# Plural nouns not written with an -s, and words with an -s that are no plural noun.
_PLURALS = frozenset({"people", "ppl", "children", "men", "women", "staff"})
# Words that never stand between a count and its noun ("two of the sites", "five or six devices").
_BETWEEN = frozenset({"of", "in", "on", "at", "to", "for", "and", "or", "are", "is", "was", "were", "the", "than"})
_NOT_PLURAL = frozenset({"always", "perhaps", "besides", "whereas", "sometimes", "towards", "afterwards", "thanks"})


def _plural(word: str) -> bool:
    """True when ``word`` reads as a plural noun: "devices", "phones", "people", "RRUs" (an acronym's -s)."""
    if len(word) >= 3 and word.endswith("s") and word[:-1].isupper():
        return True
    word = word.lower()
    if word in _PLURALS:
        return True
    return len(word) >= 4 and word.endswith("s") and not word.endswith(("ss", "us", "is")) and word not in _NOT_PLURAL


def _word_counts(text: str) -> list[tuple[int, int, int]]:
    """Counts in small number words before a plural noun (`_WORD_COUNT`): (value, start, end)."""
    out = []
    for match in _WORD_COUNT.finditer(text):
        first, second = match.group("w1"), match.group("w2") or ""
        if first[0].isupper() and not first.removesuffix("s").isupper():
            continue  # "Seven Sisters Road", "Three Rivers": a name, not a count ("three RRUs" is one)
        if not (_plural(first) or (_plural(second) and first.lower() not in _BETWEEN)):
            continue
        raw = match.group("num").lower()
        value = 12 if raw.endswith("dozen") else spoken_number(raw) or WORD_NUMBERS.get(raw)
        if value:
            out.append((int(value), match.start(), match.end()))
    return out


def _spoken_count(words: str) -> int:
    """The value of `_SPOKEN_COUNT`'s words: "two thousand" -> 2000, "three hundred and five" -> 305."""
    total = current = 0.0
    for word in re.split(r"[\s\-]+", words.lower()):
        if word == "hundred":
            current = (current or 1) * 100
        elif word == "thousand":
            total, current = total + (current or 1) * 1000, 0.0
        elif word != "and":
            current += WORD_NUMBERS[word]
    return int(total + current)


def find_counts(text: str) -> list[tuple[int, int, int]]:
    """Whole numbers that count something (value, start, end): "~1.2k users" -> 1200, "2 400" -> 2400,
    "1.240" -> 1240, "three hundred" -> 300, "eight devices" -> 8, "a dozen phones" -> 12.

    Numbers that are quantities with a unit (`find_quantities`), periods in years or months
    (`periods.find_periods`), telephone numbers ("+48601…"), clock times, dates and parts of ids are not
    counts; a small number in words
    is one only before a plural noun (`_WORD_COUNT`).
    """
    # A period in years or months ("12 years", "18 months") is a duration, not a count of years.
    taken = [(q.start, q.end) for q in find_quantities(text)] + [(p.start, p.end) for p in find_periods(text)]
    taken += [(m.start(), m.end()) for m in _PHONE.finditer(text)]
    out = []
    for match in _COUNT.finditer(text):
        if any(a <= match.start() < b for a, b in taken):
            continue
        raw = match.group("num")
        value = float(raw[:-1]) * 1000 if match.group("k") else float(re.sub(r"[.,\s]", "", raw))
        out.append((int(value), match.start(), match.end()))
    for match in _SPOKEN_COUNT.finditer(text):  # "a hundred percent" is a quantity, not a count
        if not any(a < match.end() and match.start() < b for a, b in taken):
            out.append((_spoken_count(match.group(0)), match.start(), match.end()))
    spans = [(start, end) for _, start, end in out] + taken
    out += [c for c in _word_counts(text) if not any(a < c[2] and c[1] < b for a, b in spans)]
    return sorted(out, key=lambda c: c[1])


def duration_minutes(quantity: Quantity) -> float | None:
    """A time quantity in minutes, or None for other units."""
    factor = _MINUTES_PER.get(quantity.unit)
    return None if factor is None else quantity.value * factor


def find_ids(text: str) -> list[FoundId]:
    """Identifiers of the form PREFIX-123 / PREFIX-A1B2 (upper-case prefix of two letters or more), and
    numbers written without the dash (INC4303720: two to five capitals and five digits or more)."""
    found = [FoundId(m.group("prefix"), m.group(0), m.start(), m.end()) for m in _ID.finditer(text)]
    found += [
        FoundId(m.group("prefix"), m.group(0), m.start(), m.end(), dash=False) for m in _ID_NO_DASH.finditer(text)
    ]
    return sorted(found, key=lambda f: f.start)


def find_clock_ranges(text: str) -> list[tuple[str, int, int]]:
    """Time-of-day ranges such as 'between 01:00 and 05:00' as ('01:00-05:00', start, end)."""
    out = []
    for match in _CLOCK_RANGE.finditer(text):
        a, b = match.group("a").zfill(5), match.group("b").zfill(5)
        out.append((f"{a}-{b}", match.start(), match.end()))
    return out
