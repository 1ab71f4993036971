"""Value constraints stated in semantic descriptions, and the check of one value against a key.

See `an_agent.schemas.template` for the phrases (``Acceptable values:``, ``Range:``, ``Format:``,
``Item format:``, ``Unit:``). Kept apart from the template classes so that templates, validation and patch
synthesis share one definition of "a value conforms to its key".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache
from typing import Any, Literal

from an_agent.clock import from_rfc3339
from an_agent.schemas.catalogue import catalogues

KeyType = Literal["string", "integer", "number", "boolean", "array", "object"]
KEY_TYPES: tuple[KeyType, ...] = ("string", "integer", "number", "boolean", "array", "object")

# A value may hold dots that end no sentence ("G.652.D", "v1.2"): the list ends at a dot before a space or the end.
_ENUM = re.compile(r"Acceptable values:\s*((?:[^.]|\.(?=\S))+?)\.(?:\s|$)")
_NUM = r"-?\d+(?:\.\d+)?"
_RANGE = re.compile(rf"Range:\s*({_NUM})\s*(?:to|-|\u2013)\s*({_NUM})")
_FORMAT = re.compile(r"(?<!Item )(?<!item )Format:\s*([A-Za-z0-9_<>\-]+?)\.?(?:\s|$)")
_UNIT = re.compile(r"Unit:\s*([A-Za-z%/_][A-Za-z0-9%/_]*)\.?(?:\s|$)")  # "mbps", "%", "db_per_km", "w_per_m2"
# ISO 8601 duration (the JSON Schema "duration" format): P[nY][nM][nW][nD][T[nH][nM][nS]], at least one part;
# public so that the JSON Schema projection can state the same pattern.
DURATION_PATTERN = r"^P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+(?:\.\d+)?S)?)?$"
_DURATION = re.compile(DURATION_PATTERN)
_ITEM_FORMAT = re.compile(r"Item format:\s*([A-Za-z0-9_<>\-]+?)\.?(?:\s|$)")
_PLACEHOLDERS = {"<digits>": r"\d+", "<letters>": r"[A-Za-z]+", "<alnum>": r"[A-Za-z0-9]+"}
# A gloss in full-width parentheses (U+FF08 ... U+FF09) after a value of a translated description,
# e.g. a Chinese gloss after "no_coverage": not part of the value.
_GLOSS = re.compile(r"\uff08[^\uff09]*\uff09")
_MAX_SHOWN = 60  # characters of an offending value quoted back in a problem line


@dataclass(frozen=True)
class Constraints:
    """Machine-checkable constraints stated in a semantic description."""

    enum: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    value_format: str | None = None  # "date-time", "date", "duration" (ISO 8601), or an id format like CELL-<digits>
    item_format: str | None = None
    unit: str | None = None  # unit of an integer/number key ("Unit: mbps."), for people and the projection

    def describe_range(self) -> str:
        return f"{_fmt_num(self.minimum)} to {_fmt_num(self.maximum)}"


def _fmt_num(value: float | None) -> str:
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else str(value)


@lru_cache(maxsize=1)
def _localized_phrases() -> tuple[tuple[str, str], ...]:
    """(phrase in a shipped language, English phrase), longest first so that "Item format:" wins over
    "Format:" when one translation contains the other."""
    pairs = {(local, english) for c in catalogues().values() for english, local in c.phrases.items() if local}
    return tuple(sorted(pairs, key=lambda pair: -len(pair[0])))


def _in_english_phrases(description: str) -> str:
    """``description`` with the constraint phrases of any shipped language replaced by the English ones."""
    if description.isascii():
        return description
    text = _GLOSS.sub("", description)
    for local, english in _localized_phrases():
        text = text.replace(local, english)
    return text


def parse_constraints(description: str) -> Constraints:
    """Extract the enumeration, range and formats that a semantic description states, in English or in
    a shipped translation (its ``constraint_phrases``, `an_agent.schemas.catalogue`)."""
    description = _in_english_phrases(description)
    enum: tuple[str, ...] = ()
    match = _ENUM.search(description)
    if match:
        parts = re.split(r",|\bor\b", match.group(1))
        enum = tuple(v for v in (p.strip().strip("'\"") for p in parts) if v)
    minimum = maximum = None
    match = _RANGE.search(description)
    if match:
        low, high = float(match.group(1)), float(match.group(2))
        minimum, maximum = min(low, high), max(low, high)
    fmt = _FORMAT.search(description)
    item = _ITEM_FORMAT.search(description)
    unit = _UNIT.search(description)
    return Constraints(
        enum=enum,
        minimum=minimum,
        maximum=maximum,
        value_format=fmt.group(1) if fmt else None,
        item_format=item.group(1) if item else None,
        unit=unit.group(1) if unit else None,
    )


@lru_cache(maxsize=256)
def format_regex(pattern: str) -> re.Pattern[str]:
    """Compile a placeholder pattern such as ``CELL-<digits>`` to an anchored regex."""
    out: list[str] = []
    pos = 0
    for match in re.finditer(r"<[a-z]+>", pattern):
        out.append(re.escape(pattern[pos : match.start()]))
        out.append(_PLACEHOLDERS.get(match.group(0), re.escape(match.group(0))))
        pos = match.end()
    out.append(re.escape(pattern[pos:]))
    return re.compile("^" + "".join(out) + "$")


def is_finite_number(value: Any) -> bool:
    """A JSON number: int or float, not a boolean, not NaN or infinite."""
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def json_type_of(value: Any) -> str:
    """The JSON Schema type name of a decoded JSON value (``integer`` for integral numbers)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _check_format(fmt: str, value: str) -> bool:
    if fmt == "date-time":
        try:
            from_rfc3339(value)
        except ValueError:
            return False
        return True
    if fmt == "duration":
        return bool(_DURATION.match(value))
    if fmt == "date":
        try:
            date.fromisoformat(value)
        except ValueError:
            return False
        return len(value) == 10
    return bool(format_regex(fmt).match(value))


def _check_string(c: Constraints, value: Any, fmt: str | None, what: str) -> str | None:
    if not isinstance(value, str):
        return f"{what}expected a string, got {json_type_of(value)} {_show(value)}"
    if c.enum and value not in c.enum:
        return f"{what}{_show(value)} is not one of {', '.join(c.enum)}"
    if fmt and not _check_format(fmt, value):
        return f"{what}{_show(value)} does not match the format {fmt}"
    return None


def check_value(key_type: str, c: Constraints, value: Any) -> str | None:
    """None when ``value`` conforms to ``key_type`` and ``c``; otherwise why not (one phrase)."""
    if key_type == "string":
        return _check_string(c, value, c.value_format, "")
    if key_type in ("integer", "number"):
        if not is_finite_number(value):
            return (
                f"expected {'an integer' if key_type == 'integer' else 'a number'}, got "
                f"{json_type_of(value)} {_show(value)}"
            )
        if key_type == "integer" and not float(value).is_integer():
            return f"expected an integer, got {_show(value)}"
        if (c.minimum is not None and value < c.minimum) or (c.maximum is not None and value > c.maximum):
            return f"{_show(value)} is outside the range {c.describe_range()}"
        return None
    if key_type == "boolean":
        return None if isinstance(value, bool) else f"expected true or false, got {json_type_of(value)} {_show(value)}"
    if key_type == "array":
        if not isinstance(value, list):
            return f"expected an array, got {json_type_of(value)} {_show(value)}"
        if c.enum or c.item_format:
            for index, item in enumerate(value):
                problem = _check_string(c, item, c.item_format, f"item {index}: ")
                if problem:
                    return problem
        return None
    if key_type == "object":
        return None if isinstance(value, dict) else f"expected an object, got {json_type_of(value)} {_show(value)}"
    return f"unknown key_type {key_type!r}"
