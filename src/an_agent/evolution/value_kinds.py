"""Whether an existing key can hold the values a cluster states: a restatement says the key's kind of value.

A cluster that restates a key in other words states what the key holds: a count restates a count, a
moment a moment, a duration a duration. One that states another kind of value is another concept however
near its words are: a count of damaged radio units is no new value of a closed set of fault kinds, a
repair's duration no deadline (a moment), a list of fibre codes no list of recommended actions. A cluster
that states no value (a flag: its fragments say a condition) or free words is judged by its words alone
(`conflicts.find_conflict`).
"""

from __future__ import annotations

from an_agent.evolution.inference import ValueSpec
from an_agent.schemas.mapping import key_unit
from an_agent.schemas.template import KeyDef

_MOMENTS = frozenset({"date-time", "date"})
_NUMBERS = frozenset({"integer", "number"})
# A number key of one of these units holds a duration ("duration_minutes"): a duration may restate it.
_TIME_UNITS = frozenset({"minutes", "hours", "days"})


def _holds_time(key: KeyDef) -> bool:
    unit = key.constraints.unit or key_unit(key)  # the unit its description states, else its name's
    return key.key_type in _NUMBERS and unit in _TIME_UNITS


def holds(key: KeyDef, spec: ValueSpec | None) -> bool:
    """True when ``key`` can hold the kind of value ``spec`` (a cluster's induced value) states.

    Moments restate moments, durations durations (or a number of minutes, hours, ...), counts and
    quantities numbers, codes a closed set, identifiers a list or a string of identifiers. A flag, free
    words, or no induced value fit any key: their words decide.
    """
    if spec is None or spec.key_type == "boolean":
        return True
    fmt = key.constraints.value_format
    if spec.value_format in _MOMENTS:
        return fmt in _MOMENTS
    if spec.value_format == "duration":
        return fmt == "duration" or _holds_time(key)
    if spec.key_type in _NUMBERS:
        return key.key_type in _NUMBERS or fmt == "duration"
    if spec.info.get("codes"):
        return bool(key.constraints.enum)
    if spec.id_prefix:
        return not key.constraints.enum and key.key_type in ("array", "string")
    return True
