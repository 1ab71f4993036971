"""Units: their spellings, their canonical names, and every conversion between units of one quantity.

One place owns unit conversion: a spelling read by `an_agent.schemas.extract` is converted to its
canonical unit here (`unit_scale`, `canonical_value`: miles to km, feet to m, Fahrenheit to Celsius), and
a key that holds units of one quantity converts its values to the key's unit here (`kindred`, `in_unit`:
m and km in one distance key). Imports nothing of the readers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

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
    # Lengths under a kilometre: "1 870 m", "850 metros", "45 mtrs", "25mtr". A lone "m" only in lower case
    # ("2 M" is two million), and glued to its number ("32m", "5m": metres or minutes) only as the words of
    # its sentence or its key's unit say: `find_quantities`.
    "m": ("metres", "meters", "metre", "meter", "metros", "mtrs", "mtr", "mts", "m"),
    "kmh": ("km/h", "kmh", "kph", "km/hr", "kilometres per hour", "kilometers per hour", "km per hour"),
    "mbps": ("mbit/s", "mbps", "mb/s", "mbits/s", "megabits per second"),
    "kwh": ("kwh", "kilowatt hours", "kilowatt-hours", "kilowatt hour", "kilowatt-hour", "kw h"),
    # Rotational speed (fans, generators): revolutions per minute in every spelling.
    "rpm": ("rpm", "r/min", "rev/min", "revolutions per minute"),
    # Electric potential (battery strings, rectifiers): "48 V", "52 VDC", "forty six volts".
    "volt": ("volts", "volt", "vdc", "v dc", "v"),
    # Latency, jitter, round-trip time: milliseconds are their own unit, not a duration in minutes.
    "ms": ("milliseconds", "millisecond", "millisecs", "millisec", "msecs", "msec", "ms"),
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
# Money per a period ("€49.99 a month", "420 euro a year", "£12 a week"): an amount that recurs is its own
# unit, never its currency alone (a price per year is no price per month). One canonical period, the month:
# what people pay again and again (plans, subscriptions, rent, bills) is billed and compared by the month,
# and a year or a week converts to it exactly (/ 12; x 52 / 12), so a key holds one number per currency
# ("eur_per_month"). Currencies are never converted into each other.
PER_MONTH = {
    # "m" and "a" only as written after "p", "p/", "p.": "39.99 eur p/m", "pa" (per month, per annum)
    **dict.fromkeys(("month", "months", "mo", "mth", "m"), 1.0),
    **dict.fromkeys(("year", "years", "yr", "annum", "a"), 1 / 12),
    **dict.fromkeys(("week", "weeks", "wk"), 52 / 12),
}
PERIOD_ADJECTIVES = {"monthly": 1.0, "yearly": 1 / 12, "annually": 1 / 12, "annual": 1 / 12, "weekly": 52 / 12}
MONEY_PERIOD_WORD = "monthly"  # the word a key of money per month says it with (monthly_fee_eur)
MONEY_UNITS = CURRENCIES | frozenset(f"{currency}_per_month" for currency in CURRENCIES)


def per_month(currency: str, period: str) -> tuple[str, float] | None:
    """(unit, factor) of an amount of ``currency`` said per ``period`` (a period's spelling or adjective:
    "year" -> ("eur_per_month", 1/12), "weekly" -> 52/12); None when it is no currency or no period."""
    period = period.lower()
    factor = PER_MONTH.get(period, PERIOD_ADJECTIVES.get(period))
    if currency not in CURRENCIES or factor is None:
        return None
    return f"{currency}_per_month", factor


def currency_of(unit: str | None) -> str | None:
    """The currency of a unit of money, per a period or not ("eur_per_month" -> "eur"), else None."""
    if unit not in MONEY_UNITS:
        return None
    return unit.split("_", 1)[0]


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


# Quantities per a length or an area ("0.9 dB/km", "0,72 dB per km", "1.4 dB/mi", "3,1 V/m", "4.6 volt per
# meter", "120 mV/m", "540 W/m2", "210 watt per square meter", "0.54 kW/m\u00b2"): canonical unit -> the
# amount's spellings (with their factor to its canonical amount), the lengths or areas it is said per, and
# its canonical denominator; every other amount and denominator is converted (dB per mile: / 1.609344).
# Composed as the rates are, with the same separators, so that "volts/m" or "kW per sqm" read as "V/m" and
# "W/m2" do. Each canonical denominator is the one its trade states it per, so a key holds the numbers its
# readers know: a fibre's attenuation per km (datasheets and ITU-T G.652 say 0.2 dB/km; per m it would be
# 0.0002), an electric field strength per m (EMF limits near sites are in V/m; per km no one says), an
# irradiance per m\u00b2 (1000 W/m\u00b2 is the standard test condition of solar panels). Sanitising writes
# "m\u00b2" and "\u33a1" as "m2" (NFKC).
_PER_KM = ("kilometres", "kilometers", "kilometre", "kilometer", "km")
_LENGTHS = (  # a length's spellings -> its size in metres
    dict.fromkeys(_PER_KM, 1000.0)
    | dict.fromkeys(("miles", "mile", "mi"), 1609.344)
    | dict.fromkeys(("metres", "meters", "metre", "meter", "m"), 1.0)
)
_AREAS = dict.fromkeys(("m2", "m\u00b2", "sqm", "square metre", "square meter"), 1.0)  # in square metres


@dataclass(frozen=True)
class _PerUnit:
    """A unit of a quantity per a length or an area: how its amount and its denominator are spelled."""

    amounts: dict[str, float]  # spelling -> factor to the canonical amount
    per: dict[str, float]  # spelling -> size in canonical denominators' base (m or m\u00b2)
    canonical_per: str
    glued: tuple[str, ...] = ()  # denominators written glued to the amount ("0.55dBkm")
    labelled: bool = False  # also said per the length of a label before the number ("loss/km = 1.2 dB")


_PER_UNITS = {
    # Glued only to a kilometre: "dBm" is a power level, never per metre. Spec sheets label a loss per a
    # length ("loss/km = 1.2 dB"); a volt or a watt after "per m:" is as likely a cable's price or a
    # rack's draw, so only decibels are read per a label's length.
    "db_per_km": _PerUnit(dict.fromkeys(("db", "decibels", "decibel"), 1.0), _LENGTHS, "km", _PER_KM, True),
    "v_per_m": _PerUnit(
        dict.fromkeys(("v", "volts", "volt"), 1.0) | dict.fromkeys(("mv", "millivolts"), 0.001), _LENGTHS, "m"
    ),
    "w_per_m2": _PerUnit(
        dict.fromkeys(("w", "watts", "watt"), 1.0) | dict.fromkeys(("kw", "kilowatts"), 1000.0), _AREAS, "m2"
    ),
}
# (amount spelling, denominator spelling) -> (canonical unit, factor to it): 1.4 dB/mi is 0.87 dB/km.
_PER_OF = {
    (amount, per): (unit, factor * spec.per[spec.canonical_per] / size)
    for unit, spec in _PER_UNITS.items()
    for amount, factor in spec.amounts.items()
    for per, size in spec.per.items()
}
_GLUED_OF = {
    amount + per: (amount, per) for spec in _PER_UNITS.values() for amount in spec.amounts for per in spec.glued
}


def _alternatives(spellings: Iterable[str]) -> str:
    return "|".join(re.escape(s) for s in sorted(spellings, key=len, reverse=True))


_PER_RE = "|".join(
    [
        *(
            rf"(?:{_alternatives(spec.amounts)})(?:\s?/\s?|\s{{1,3}}per\s{{1,3}})(?:{_alternatives(spec.per)})"
            for spec in _PER_UNITS.values()
        ),
        _alternatives(_GLUED_OF),
    ]
)
PER_LENGTH_PATTERN = _alternatives(_LENGTHS)  # the lengths a quantity is said per ("km", "mile")


def per_length(unit: str, per: str) -> tuple[str, float] | None:
    """(canonical unit, factor) of a quantity in the canonical unit ``unit`` said per the length ``per`` of
    its label ("db", "mi" -> ("db_per_km", 0.6214)); None when ``unit`` is no amount read per a label's
    length (`_PerUnit.labelled`) or ``per`` no length it is said per."""
    scale = _PER_OF.get((unit, per.lower()))
    if scale is None or not _PER_UNITS[scale[0]].labelled or _SCALE_OF.get(unit, ("",))[0] != unit:
        return None
    return scale


def _rate_scale(spelling: str) -> tuple[str, float] | None:
    """(canonical unit, factor) of a compound unit's spelling: a rate ("mm/hr", "inch per hour") or a
    quantity per a length or an area ("db/km", "dbkm", "decibel per kilometer", "mv/m", "kw/sqm"); None if
    it is none."""
    if spelling in _GLUED_OF:
        return _PER_OF[_GLUED_OF[spelling]]  # "dbkm"
    parts = _RATE_SPLIT.split(spelling, maxsplit=1)
    if len(parts) != 2:
        return None
    if (amount_per := (parts[0], parts[1])) in _PER_OF:
        return _PER_OF[amount_per]
    if parts[0] not in _RATE_OF or parts[1] not in _RATE_TIMES:
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
    | frozenset(
        w for w in [*_RATE_OF, *_RATE_TIMES, *(w for a, p in _PER_OF for w in [a, *p.split()]), "per"] if w.isalpha()
    )
    | frozenset(w for w in _GLUED_OF if w.isalpha())  # "dbkm"
) - frozenset({"meter", "meters"})  # also a device ("smart meter", "clamp meter"): a word of names and phrases
_UNIT_RE = "|".join([_RATE_RE, _PER_RE, *(re.escape(s) for s in sorted(_SCALE_OF, key=len, reverse=True))])
UNIT_PATTERN = _UNIT_RE  # every unit's spelling, rates included, for the readers' patterns


@dataclass(frozen=True)
class Quantity:
    """A number with a canonical unit (``db``, ``percent``, ``degrees``, ``minutes``, ...) found in text."""

    value: float
    unit: str
    start: int
    end: int


def unit_scale(written: str) -> tuple[str, float] | None:
    """(canonical unit, factor to it) of a unit as it was written ("ft" -> ("m", 0.3048), "mm/hr" ->
    ("mmh", 1.0)); None when it is no unit. The case counts only for bits and bytes ("Gb" a rate, "GB" a
    volume: `_BITS`)."""
    spelling = written.lower()
    scale = _SCALE_OF.get(spelling) or _rate_scale(spelling)
    if scale is None:
        return None
    return _BITS.get(written, scale)


def canonical_value(value: float, written: str) -> float:
    """``value`` said in the unit ``written``, in that unit's canonical unit (`unit_scale`): 100 ft ->
    30.48 (m), 113 °F -> 45.0 (°C); a value in a canonical spelling is returned as it is."""
    if written.lower() in _FAHRENHEIT:
        return round((value - 32) * 5 / 9, 1)
    scale = unit_scale(written)
    factor = 1.0 if scale is None else scale[1]
    return round(value * factor, 3) if factor != 1.0 else value


# Canonical units of one quantity that one key may hold, each in a common base: a key takes the one most
# of its fragments state and the others are converted (`in_unit`).
# A latency said in seconds ("0,12 s", "0.2 seconds") next to milliseconds is in a key of milliseconds, and
# milliseconds in a key of seconds (a duration) are seconds.
_BASE = {"m": ("length", 1.0), "km": ("length", 1000.0), "ms": ("time", 0.001), "seconds": ("time", 1.0)}


def kindred(unit: str) -> frozenset[str]:
    """The canonical units a key in ``unit`` also holds, converted (``m`` -> {m, km}, ``ms`` -> {ms,
    seconds}); {unit} for others."""
    if unit not in _BASE:
        return frozenset({unit})
    kind = _BASE[unit][0]
    return frozenset(u for u, (k, _) in _BASE.items() if k == kind)


def in_unit(quantity: Quantity, unit: str) -> Quantity:
    """``quantity`` in ``unit`` when that is a kindred unit (4,37 km in m: 4370.0); any other as it is."""
    if quantity.unit == unit or quantity.unit not in _BASE or unit not in kindred(quantity.unit):
        return quantity
    value = round(quantity.value * _BASE[quantity.unit][1] / _BASE[unit][1], 3)
    return replace(quantity, value=value, unit=unit)
