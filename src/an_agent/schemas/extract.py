"""Rule-based extraction of typed values from natural language.

Shared by NL -> payload mapping (`an_agent.schemas.mapping`) and by patch synthesis, which infers the
type of a new key from the values its fragments contain. Everything here is deterministic and offline.
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from an_agent.schemas.dates import ENDS_WITH_A_DATE
from an_agent.schemas.dates import find_datetimes as find_datetimes  # re-exported: dates have their own module

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
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "half": 0.5,
}
# Words that say a number ("forty", "point"): a value, never a part of a key's name.
NUMBER_WORDS = frozenset(w for w in _WORD_NUMBERS if len(w) > 2) | {"point"}
# A number said in words, as speech-to-text writes it ("forty eight point two", "fifty-one", "one hundred
# twenty"): tens and a digit, hundreds, and decimals read digit by digit after "point".
_DIGIT_WORDS = "zero|one|two|three|four|five|six|seven|eight|nine"
_TENS_WORDS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_TEEN_WORDS = "ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
_BELOW_HUNDRED = rf"(?:(?:{_TENS_WORDS})(?:[\s\-](?:{_DIGIT_WORDS}))?|{_TEEN_WORDS})"
_SPOKEN = re.compile(
    rf"(?:(?:{_DIGIT_WORDS})\s(?:hundred)(?:\s(?:and\s)?(?:{_BELOW_HUNDRED}|{_DIGIT_WORDS}))?|{_BELOW_HUNDRED})"
    rf"(?:\spoint(?:\s(?:{_DIGIT_WORDS}))+)?"
    rf"|(?:{_DIGIT_WORDS})\spoint(?:\s(?:{_DIGIT_WORDS}))+",
    re.IGNORECASE,
)


def spoken_number(text: str) -> float | None:
    """The value of a number said in words ("forty eight point two" -> 48.2), None when it is not one."""
    if not _SPOKEN.fullmatch(text.strip()):
        return None
    words = re.split(r"[\s\-]+", text.lower().strip())
    cut = words.index("point") if "point" in words else len(words)
    whole, decimals = words[:cut], words[cut + 1 :]
    value = 0.0
    for word in whole:
        if word == "hundred":
            value *= 100
        elif word != "and":
            value += _WORD_NUMBERS[word]
    return float(f"{int(value)}.{''.join(str(_WORD_NUMBERS[w]) for w in decimals)}") if decimals else value


_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+")
# A number written in groups of three, as sheets and people of every country write amounts and lengths:
# "1 200" / "1 870" (space, also the narrow and no-break ones), "1.200,00" / "3.100" (a dot, the decimals
# after a comma), "1,150.00" / "4,200" (a comma, the decimals after a dot). Never a leading zero ("0.100"
# is a decimal) and a dot group is three digits exactly ("1.5", "12.6" stay decimals).
_GROUPED = (
    r"[1-9]\d{0,2}(?:[ \u00a0\u202f]\d{3})+(?:[.,]\d{1,2})?(?!\d)"
    r"|[1-9]\d{0,2}(?:\.\d{3})+(?:,\d{1,2})?(?!\d)"
    r"|[1-9]\d{0,2}(?:,\d{3})+(?:\.\d{1,2})?(?!\d)"
)
_GROUPED_RE = re.compile(_GROUPED)
_NUMBER = (
    rf"(?P<num>[-+\u2212]?(?:{_GROUPED}|\d+(?:[.,]\d+)?)|"
    + _SPOKEN.pattern
    + "|"
    + "|".join(sorted(_WORD_NUMBERS, key=len, reverse=True))
    + r")"
)
# canonical unit -> spellings (longest first in the regex)
_UNITS = {
    # dBm is an absolute power level, dB a ratio or a change ("raise the power by 2 dB"): two units.
    "dbm": ("dbm",),
    "db": ("db", "decibels", "decibel"),
    "percent": ("percent", "per cent", "pct", "%"),
    # Degrees alone are an angle (tilt) or a temperature; a Celsius spelling is a temperature.
    "degrees": ("degrees", "degree", "deg", "graus", "grados", "\u00b0"),  # and as Portuguese, Spanish write it
    "celsius": (
        "\u00b0c",
        "\u00b0 c",
        "\u00bac",
        "oc",
        "degc",
        "deg c",
        "degrees c",
        "degrees celsius",
        "degree celsius",
        "celsius",
        "c",
    ),
    "seconds": ("seconds", "second", "secs", "sec", "s"),
    "minutes": ("minutes", "minute", "mins", "min"),
    "hours": ("hours", "hour", "hrs", "hr", "h"),
    "days": ("days", "day"),
    "weeks": ("weeks", "week"),
    "km": ("kilometres", "kilometers", "kilometre", "kilometer", "kil\u00f3metros", "quil\u00f3metros", "km"),
    # Lengths under a kilometre: "1 870 m", "850 metros". A lone "m" only apart from its number and in
    # lower case ("5m" is as often five minutes, "2 M" two million): `find_quantities`.
    "m": ("metres", "meters", "metre", "meter", "metros", "m"),
    "kmh": ("km/h", "kmh", "kph", "km/hr", "kilometres per hour", "kilometers per hour", "km per hour"),
    "mbps": ("mbit/s", "mbps", "mb/s", "mbits/s", "megabits per second"),
    "kwh": ("kwh", "kilowatt hours", "kilowatt-hours", "kilowatt hour", "kilowatt-hour", "kw h"),
    # Rotational speed (fans, generators): revolutions per minute in every spelling.
    "rpm": ("rpm", "r/min", "rev/min", "revolutions per minute"),
    # Electric potential (battery strings, rectifiers): "48 V", "52 VDC", "forty six volts".
    "volt": ("volts", "volt", "vdc", "v dc", "v"),
    # Latency, jitter, round-trip time: milliseconds are their own unit, not a duration in minutes.
    "ms": ("milliseconds", "millisecond", "msecs", "msec", "ms"),
    # Bandwidth and frequency of carriers and channels (GHz and kHz converted).
    "mhz": ("megahertz", "mhz"),
    # Electric power (site draw, rectifier load, radio consumption; W converted).
    "kw": ("kilowatts", "kilowatt", "kw"),
    # Data volume (usage, allowance; MB and TB converted).
    "gb": ("gigabytes", "gigabyte", "gbytes", "gb"),
    # Fuel and other liquids (generator tanks).
    "litres": ("litres", "liters", "litre", "liter", "ltrs", "ltr", "l"),
    # Money: each currency is its own unit, never converted (rates change; a key takes the currency most
    # of its fragments state). Symbols and ISO codes are also written before the amount (`_PREFIXED`).
    "eur": ("euros", "euro", "eur", "\u20ac"),
    "usd": ("us dollars", "dollars", "dollar", "usd", "us$", "$"),
    "gbp": ("pounds sterling", "gbp", "\u00a3"),
}
CURRENCIES = frozenset({"eur", "usd", "gbp"})  # units of money: a key of one is a number (cents)
# Spellings of another unit of the same quantity: (canonical unit, factor), so that one key has one
# unit ("75 mph" is 120.7 km/h, "800 kbps" 0.8 Mbps, "1.1 MWh" 1,100 kWh). Fahrenheit is converted apart.
_SCALED = {
    # Lengths in miles and feet: converted, so a distance key has one unit (m or km, `inference`).
    "miles": ("km", 1.609344),
    "mile": ("km", 1.609344),
    "mi": ("km", 1.609344),
    "feet": ("m", 0.3048),
    "foot": ("m", 0.3048),
    "ft": ("m", 0.3048),
    "mph": ("kmh", 1.609344),
    "miles per hour": ("kmh", 1.609344),
    "mile per hour": ("kmh", 1.609344),
    "mi/h": ("kmh", 1.609344),
    # Wind is often given in metres per second: 25 m/s is 90 km/h.
    "m/s": ("kmh", 3.6),
    "metres per second": ("kmh", 3.6),
    "meters per second": ("kmh", 3.6),
    "kbps": ("mbps", 0.001),
    "kbit/s": ("mbps", 0.001),
    "kb/s": ("mbps", 0.001),
    "kbits/s": ("mbps", 0.001),
    "gbps": ("mbps", 1000.0),
    "gbit/s": ("mbps", 1000.0),
    "gb/s": ("mbps", 1000.0),
    "mwh": ("kwh", 1000.0),
    "megawatt hours": ("kwh", 1000.0),
    "ghz": ("mhz", 1000.0),
    "gigahertz": ("mhz", 1000.0),
    "khz": ("mhz", 0.001),
    "kilohertz": ("mhz", 0.001),
    "w": ("kw", 0.001),
    "watts": ("kw", 0.001),
    "watt": ("kw", 0.001),
    "mb": ("gb", 0.001),
    "megabytes": ("gb", 0.001),
    "mbytes": ("gb", 0.001),
    "tb": ("gb", 1000.0),
    "terabytes": ("gb", 1000.0),
}
# A lower-case b is a bit, an upper-case B a byte: "a 10 Gb link" is a rate, "35 GB used" a volume (and
# "500mb left", all lower case, is how people write a phone's data).
_BITS = {"Kb": ("mbps", 0.001), "Mb": ("mbps", 1.0), "Gb": ("mbps", 1000.0), "Tb": ("mbps", 1_000_000.0)}
# Rates: an amount per a time, in every spelling of both parts ("42 mm/h", "35 mm per hour", "61
# millimetres per hour", "1.2 in/h", "12 l/h", "3 gallons per hour"): canonical amount unit + "h" (per
# hour), the other amount units and time units converted. Composed rather than listed, so that "mm/hr" is
# read like "mm/h" (a compound unit read as its first part was a wrong number in an integer key).
_RATE_AMOUNTS = {  # canonical rate unit -> {amount spelling: factor to the canonical amount}
    "mmh": dict.fromkeys(("mm", "millimetres", "millimeters", "millimetre", "millimeter"), 1.0)
    | dict.fromkeys(("in", "inch", "inches"), 25.4),
    "lh": dict.fromkeys(("l", "litres", "liters", "litre", "liter"), 1.0)
    | dict.fromkeys(("gal", "gallons", "gallon"), 3.785411784),
}
_RATE_TIMES = {"h": 1.0, "hr": 1.0, "hour": 1.0, "min": 60.0, "minute": 60.0, "day": 1 / 24}
_RATE_OF = {amount: (unit, factor) for unit, amounts in _RATE_AMOUNTS.items() for amount, factor in amounts.items()}
# One alternative of the unit pattern for all rates: listing every combination made it four times longer
# and `find_quantities` twice as slow.
_RATE_RE = (
    "(?:"
    + "|".join(sorted(_RATE_OF, key=len, reverse=True))
    + r")(?:\s?/\s?|\s{1,3}per\s{1,3})(?:"
    + "|".join(sorted(_RATE_TIMES, key=len, reverse=True))
    + ")"
)
_RATE_SPLIT = re.compile(r"\s?/\s?|(?<!\s)\s{1,3}per\s{1,3}")


def _rate_scale(spelling: str) -> tuple[str, float] | None:
    """(canonical unit, factor) of a rate's spelling ("mm/hr", "inch per hour"); None if it is none."""
    parts = _RATE_SPLIT.split(spelling, maxsplit=1)
    if len(parts) != 2 or parts[0] not in _RATE_OF or parts[1] not in _RATE_TIMES:
        return None
    unit, factor = _RATE_OF[parts[0]]
    return unit, factor * _RATE_TIMES[parts[1]]


_FAHRENHEIT = ("\u00b0f", "\u00b0 f", "\u00baf", "degf", "deg f", "degrees f", "degrees fahrenheit", "fahrenheit", "f")
_UNIT_OF = {spelling: unit for unit, spellings in _UNITS.items() for spelling in spellings}
_SCALE_OF = {spelling: (unit, 1.0) for spelling, unit in _UNIT_OF.items()} | _SCALED
_SCALE_OF |= {spelling: ("celsius", 1.0) for spelling in _FAHRENHEIT}
UNIT_WORDS = (
    frozenset(w for s in _SCALE_OF for w in [*s.split(), *re.split(r"[\s\-]", s)] if w.replace("-", "").isalpha())
    | frozenset(  # the word before a slash ("Mbit/s" -> mbit), when it is one: never a single letter ("r/min")
        w for s in _SCALE_OF if "/" in s and len(w := s.split("/")[0]) >= 3 and w.isalpha()
    )
    | frozenset(w for w in [*_RATE_OF, *_RATE_TIMES, "per"] if w.isalpha())
) - frozenset({"meter", "meters"})  # also a device ("smart meter", "clamp meter"): a word of names and phrases
_UNIT_RE = "|".join([_RATE_RE, *(re.escape(s) for s in sorted(_SCALE_OF, key=len, reverse=True))])
_QUANTITY = re.compile(rf"(?<![\w.:]){_NUMBER}\s*(?P<unit>{_UNIT_RE})(?![\w])", re.IGNORECASE)
# The unit in a field's label, the number after it, as ticket tools and spreadsheets export them ("Fan
# speed (rpm): 6000", "Fan RPM: 2,800", "wind,km/h,85", "kWh per day: 50"): a unit (and what it is per),
# a closing bracket at most, one separator, the number (not the start of a date, a time or an id); after
# a closing bracket, a tab or spaces separate too ("Penalty (EUR)\t1 200"), never a line break.
_LABELLED = re.compile(
    rf"(?<![^\W_])(?<!/)(?P<unit>{_UNIT_RE})(?:\s{{1,3}}per\s{{1,3}}[a-z]{{2,9}})?"
    rf"(?:\)?\s{{0,3}}(?P<sep>[:=,|])\s{{0,3}}|(?P<gap>\)[\t ]{{1,3}})){_NUMBER}(?![\w.:/\-]|[.,]\d)",
    re.IGNORECASE,
)
_CELL_AFTER = re.compile(r"[ \t]{0,3}[|;]")
# A currency before its amount ("EUR 1.200,00", "USD 1,150.00", "$4,200", "\u20ac850", "GBP 300"), and a
# currency in the cell after the amount's in a semicolon-separated line ("975,50;EUR").
_PREFIX_SPELLINGS = ("us$", "eur", "usd", "gbp", "$", "\u20ac", "\u00a3")
_PREFIXED = re.compile(
    rf"(?<![\w$\u20ac\u00a3])(?P<unit>{'|'.join(map(re.escape, _PREFIX_SPELLINGS))})\s{{0,2}}"
    rf"(?P<num>(?:{_GROUPED}|\d+(?:[.,]\d+)?))(?![\w]|[.,]\d)",
    re.IGNORECASE,
)
_CURRENCY_CELL = re.compile(
    rf"(?<![\w.:,])(?P<num>(?:{_GROUPED}|\d+(?:[.,]\d+)?))\s{{0,2}};\s{{0,2}}(?P<unit>eur|usd|gbp)(?!\w)",
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
    dash: bool = True  # PREFIX-123; False for INC4303720


def _to_number(text: str) -> float | None:
    if _THOUSANDS.fullmatch(text.strip()):
        return float(text.replace(",", ""))  # "2,800": a thousands separator; "9,5" stays a decimal comma
    if (spoken := spoken_number(text)) is not None:
        return spoken
    text = text.replace("\u2212", "-").replace(",", ".").lower().strip()
    if text in _WORD_NUMBERS:
        return float(_WORD_NUMBERS[text])
    try:
        return float(text)
    except ValueError:
        return None


def _amount(text: str) -> float | None:
    """The value of a quantity's number: a number in groups of three (`_GROUPED`: "1 200", "1.200,00",
    "1,150.00") by its groups, any other as `_to_number` reads it ("1.5", "4,37", "forty")."""
    bare = text.strip()
    sign = -1.0 if bare[:1] in ("-", "\u2212") else 1.0
    digits = bare.lstrip("+-\u2212")
    if not _GROUPED_RE.fullmatch(digits):
        return _to_number(text)
    # Groups are three digits exactly, so one or two digits after the last mark are the decimals.
    decimals = re.search(r"[.,](\d{1,2})$", digits)
    whole = digits[: decimals.start()] if decimals else digits
    value = float(re.sub(r"\D", "", whole) + (f".{decimals.group(1)}" if decimals else ""))
    return sign * value


def find_quantities(text: str) -> list[Quantity]:
    """Numbers followed by a unit, e.g. '2 dB', 'two hours', '40 degrees', '10%', '1h30'.

    Each quantity is in its canonical unit (`_UNITS`): other units of the same quantity are converted
    (`_SCALED`: mph -> km/h, kbps and Gbps -> Mbps, MWh -> kWh; Fahrenheit -> Celsius), so a key has one unit.
    "1h30" / "2h15" (hours and minutes) is a number of minutes. A range of one unit ("20-30 km/h",
    "between 20 and 30 km/h", "-110 to -105 dBm") is one quantity, its upper bound: a key holds one
    number, and the bound a reading can reach is what a threshold or a compensation is decided on.
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
    matches += [*_PREFIXED.finditer(text), *_CURRENCY_CELL.finditer(text)]
    for match in sorted(matches, key=lambda m: m.start("num")):
        spelling = match.group("unit").lower()
        value = _amount(match.group("num"))
        before = bisect.bisect_right(starts, match.start()) - 1
        inside = match.start() < max_end or (before >= 0 and reach[before] > match.start())
        scale = _SCALE_OF.get(spelling) or _rate_scale(spelling)
        if value is None or scale is None or inside:
            continue
        unit, factor = scale
        unit, factor = _BITS.get(match.group("unit"), (unit, factor))
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
        if spelling == "m" and (match.group("unit") != "m" or match.end("num") == match.start("unit")):
            continue  # "5m" (minutes? metres?), "2 M users" (millions): only "850 m" is metres
        if spelling in ("c", "f") and match.group("unit") not in ("C", "F"):
            continue  # "37 C" is Celsius, "113F" Fahrenheit; a lower-case letter after a number is rarely one
        if spelling == "v" and _IN_A_NAME.search(text, 0, match.start()):
            continue  # "Sony Xperia 10 V": a model's name, not 10 volts ("Battery 48 V", "at 52 v" are volts)
        low = _RANGE_LOW.search(text, max(0, match.start() - 40), match.start()) if match.re is _QUANTITY else None
        if low is not None and (bound := _amount(low.group("low"))) is not None:
            value = max(value, bound)  # the range's upper bound, whichever order it was said in
        if spelling in _FAHRENHEIT:
            value = round((value - 32) * 5 / 9, 1)
        elif factor != 1.0:
            value = round(value * factor, 3)
        out.append(Quantity(value, unit, match.start(), match.end()))
        max_end = max(max_end, match.end())
    return _compound_durations(text, sorted(out, key=lambda q: q.start))


def _parts(text: str) -> list[Quantity]:
    """ "half an hour" (0.5 hours), "a quarter of an hour" (0.25), "an hour and a half", "2 hours and a
    quarter" (2.25), "one and a half days" (1.5): ``a`` is not one here."""
    out = [
        Quantity(_part(m.group("f")), _TIME_UNIT[m.group("u").lower()], m.start(), m.end())
        for m in _PART_OF.finditer(text)
    ]
    for match in _AND_A_PART.finditer(text):
        count = _to_number(match.group("n"))
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
        value = _to_number(match.group(0))
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
# Hundreds and thousands said in words ("three hundred calls", "more than two thousand", "a thousand
# and fifty"): smaller numbers in words are left to the words around them ("one of the sites").
_SPOKEN_COUNT = re.compile(
    rf"\b(?:a|{_BELOW_HUNDRED}|{_DIGIT_WORDS})\s(?:hundred|thousand)"
    rf"(?:\s(?:and\s)?(?:{_BELOW_HUNDRED}|{_DIGIT_WORDS})(?:\s(?:hundred|thousand))?)?\b",
    re.IGNORECASE,
)


def _spoken_count(words: str) -> int:
    """The value of `_SPOKEN_COUNT`'s words: "two thousand" -> 2000, "three hundred and five" -> 305."""
    total = current = 0.0
    for word in re.split(r"[\s\-]+", words.lower()):
        if word == "hundred":
            current = (current or 1) * 100
        elif word == "thousand":
            total, current = total + (current or 1) * 1000, 0.0
        elif word != "and":
            current += _WORD_NUMBERS[word]
    return int(total + current)


def find_counts(text: str) -> list[tuple[int, int, int]]:
    """Whole numbers that count something (value, start, end): "~1.2k users" -> 1200, "2 400" -> 2400,
    "1.240" -> 1240, "three hundred" -> 300.

    Numbers that are quantities with a unit (`find_quantities`), clock times, dates and parts of ids are
    not counts.
    """
    taken = [(q.start, q.end) for q in find_quantities(text)]
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
