"""Numbers as people write them: in digits, in groups of three in every country's separators, and in words.

The lowest layer of the value readers (`an_agent.schemas.units` and `an_agent.schemas.extract` build on it):
the pattern of a number (`NUMBER`) and its value (`amount`, `to_number`, `spoken_number`).
"""

from __future__ import annotations

import re

WORD_NUMBERS = {
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
NUMBER_WORDS = frozenset(w for w in WORD_NUMBERS if len(w) > 2) | {"point"}
# A number said in words, as speech-to-text writes it ("forty eight point two", "fifty-one", "one hundred
# twenty"): tens and a digit, hundreds, and decimals read digit by digit after "point".
DIGIT_WORDS = "zero|one|two|three|four|five|six|seven|eight|nine"
_TENS_WORDS = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_TEEN_WORDS = "ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen"
BELOW_HUNDRED = rf"(?:(?:{_TENS_WORDS})(?:[\s\-](?:{DIGIT_WORDS}))?|{_TEEN_WORDS})"
_SPOKEN = re.compile(
    rf"(?:(?:{DIGIT_WORDS})\s(?:hundred)(?:\s(?:and\s)?(?:{BELOW_HUNDRED}|{DIGIT_WORDS}))?|{BELOW_HUNDRED})"
    rf"(?:\spoint(?:\s(?:{DIGIT_WORDS}))+)?"
    rf"|(?:{DIGIT_WORDS})\spoint(?:\s(?:{DIGIT_WORDS}))+",
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
            value += WORD_NUMBERS[word]
    return float(f"{int(value)}.{''.join(str(WORD_NUMBERS[w]) for w in decimals)}") if decimals else value


_THOUSANDS = re.compile(r"[-+]?\d{1,3}(?:,\d{3})+")
# A number written in groups of three, as sheets and people of every country write amounts and lengths:
# "1 200" / "1 870" (space, also the narrow and no-break ones), "1.200,00" / "3.100" (a dot, the decimals
# after a comma), "1,150.00" / "4,200" (a comma, the decimals after a dot). Never a leading zero ("0.100"
# is a decimal) and a dot group is three digits exactly ("1.5", "12.6" stay decimals).
GROUPED = (
    r"[1-9]\d{0,2}(?:[ \u00a0\u202f]\d{3})+(?:[.,]\d{1,2})?(?!\d)"
    r"|[1-9]\d{0,2}(?:\.\d{3})+(?:,\d{1,2})?(?!\d)"
    r"|[1-9]\d{0,2}(?:,\d{3})+(?:\.\d{1,2})?(?!\d)"
)
_GROUPED_RE = re.compile(GROUPED)
# The pattern of a number (group ``num``): digits, grouped digits, spoken numbers, number words.
NUMBER = (
    rf"(?P<num>[-+\u2212]?(?:{GROUPED}|\d+(?:[.,]\d+)?)|"
    + _SPOKEN.pattern
    + "|"
    + "|".join(sorted(WORD_NUMBERS, key=len, reverse=True))
    + r")"
)


def to_number(text: str) -> float | None:
    """The value of one number as written: digits with a dot or a decimal comma ("9,5"), a thousands comma
    ("2,800"), a number said in words ("forty eight point two", "a"); None when it is none."""
    if _THOUSANDS.fullmatch(text.strip()):
        return float(text.replace(",", ""))  # "2,800": a thousands separator; "9,5" stays a decimal comma
    if (spoken := spoken_number(text)) is not None:
        return spoken
    text = text.replace("\u2212", "-").replace(",", ".").lower().strip()
    if text in WORD_NUMBERS:
        return float(WORD_NUMBERS[text])
    try:
        return float(text)
    except ValueError:
        return None


def amount(text: str) -> float | None:
    """The value of a quantity's number: a number in groups of three (`GROUPED`: "1 200", "1.200,00",
    "1,150.00") by its groups, any other as `to_number` reads it ("1.5", "4,37", "forty")."""
    bare = text.strip()
    sign = -1.0 if bare[:1] in ("-", "\u2212") else 1.0
    digits = bare.lstrip("+-\u2212")
    if not _GROUPED_RE.fullmatch(digits):
        return to_number(text)
    # Groups are three digits exactly, so one or two digits after the last mark are the decimals.
    decimals = re.search(r"[.,](\d{1,2})$", digits)
    whole = digits[: decimals.start()] if decimals else digits
    value = float(re.sub(r"\D", "", whole) + (f".{decimals.group(1)}" if decimals else ""))
    return sign * value
